/**
 * The byte ranges of the elements of a JSON array, found without parsing it
 * again: only strings (and their escapes) and nesting are tracked. The text
 * must be valid JSON (it has been parsed once already); the elements come out
 * as received, so nothing about them (number formatting, large integers) is
 * changed on the way to DuckDB.
 */

/** The bytes of JSON's structure. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Where the string that goes on at `from` ends: its closing quote (the text's
 * length when there is none), found by a native search for quotes, a quote
 * after an odd number of backslashes being part of the string.
 */
function closingQuote(text: Uint8Array, from: number): number {
  for (let at = from; ; at++) {
    at = text.indexOf(QUOTE, at);
    if (at < 0) return text.length;
    let backslashes = 0;
    while (at - backslashes - 1 >= from && text[at - backslashes - 1] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * Start and end offsets (end exclusive, whitespace trimmed) of each top-level
 * element of the JSON array in `text`, as a flat list [start0, end0, start1, ...].
 * Throws when the text is not an array.
 */
export function arrayElementRanges(text: Uint8Array): number[] {
  const ranges: number[] = [];
  let at = 0;
  while (at < text.length && isSpace(text[at]!)) at++;
  if (text[at] !== OPEN_ARRAY) throw new Error('not a JSON array');
  at++;
  let depth = 0;
  let start = -1;
  let end = -1;
  for (; at < text.length; at++) {
    const byte = text[at]!;
    if (byte === QUOTE) {
      if (start < 0) start = at;
      at = closingQuote(text, at + 1);
      end = at + 1;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (start < 0) start = at;
      depth++;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (depth === 0) {
        if (start >= 0) ranges.push(start, end);
        return ranges;
      }
      depth--;
      end = at + 1;
    } else if (byte === COMMA && depth === 0) {
      ranges.push(start, end);
      start = -1;
    } else if (!isSpace(byte)) {
      if (start < 0) start = at;
      end = at + 1;
    }
  }
  throw new Error('JSON array not closed');
}

/** True when the bytes hold a line break (only possible as whitespace in valid JSON). */
export function hasLineBreak(text: Uint8Array, start: number, end: number): boolean {
  for (let at = start; at < end; at++) if (text[at] === 0x0a || text[at] === 0x0d) return true;
  return false;
}
