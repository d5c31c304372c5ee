/**
 * The elements of one array member of a top-level JSON object (the `features`
 * of a GeoJSON FeatureCollection), streamed from a file into a file of JSON
 * lines, one element per line, in constant memory however large the file: only
 * strings, nesting and the member's name are tracked, bytes are copied as they
 * are. DuckDB then reads the lines a chunk at a time, on every thread, which it
 * cannot do with one object of a gigabyte. The input must be valid JSON (a line
 * break can then only be whitespace, and becomes a space).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';

import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COMMA,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from './json-array.js';

const COLON = 0x3a;
const LF = 0x0a;
const CR = 0x0d;

/** Where the scan is: what it expects at the top level of the object. */
type Phase = 'key' | 'colon' | 'value' | 'elements' | 'after';

export interface JsonLines {
  /** Elements written. */
  elements: number;
  /** The member was found (an object without it gives no lines). */
  found: boolean;
}

/**
 * The scan of the object, a chunk at a time: only strings, nesting and the
 * top-level keys are tracked; the member's elements come out as lines.
 */
class MemberScanner {
  readonly result: JsonLines = { elements: 0, found: false };
  readonly #wanted: Buffer;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #phase: Phase = 'key';
  /** The top-level key being read, and whether it is the member. */
  #key: number[] = [];
  #isMember = false;
  /** Where the element being copied starts in this chunk (0: in an earlier one; -1: none). */
  #copyFrom = -1;

  constructor(member: string) {
    this.#wanted = Buffer.from(member);
  }

  /** The lines the chunk ends, and the start of an element it does not end. */
  scan(bytes: Buffer): Buffer[] {
    spaced(bytes);
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length; at++) {
      if (this.#inString && !this.#readingKey()) {
        // Inside a string nothing but its end matters: jump to it.
        at = this.#stringEnd(bytes, at);
        continue;
      }
      if (this.#depth >= 3) {
        // Inside an element nothing but its end matters: skip to it.
        at = this.#elementEnd(bytes, at);
        if (at < bytes.length) this.#close(bytes, at, out);
        continue;
      }
      const byte = bytes[at]!;
      if (this.#inString) this.#stringByte(byte);
      else if (byte === QUOTE) this.#quote(at);
      else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) this.#open(byte, at);
      else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) this.#close(bytes, at, out);
      else this.#other(bytes, at, out);
    }
    if (this.#copyFrom >= 0) {
      // The element goes on in the next chunk: what is here is written now.
      out.push(bytes.subarray(this.#copyFrom));
      this.#copyFrom = 0;
    }
    return out;
  }

  /** A top-level key is being read (its bytes are kept). */
  #readingKey(): boolean {
    return this.#depth === 1 && this.#phase === 'key';
  }

  /**
   * Inside an element at `at`: where the byte that closes it is, or the
   * chunk's length when the element goes on in the next one.
   */
  #elementEnd(bytes: Buffer, at: number): number {
    let depth = this.#depth;
    let i = at;
    for (; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (byte === QUOTE) {
        // a string: jumped over (natively) to its end
        this.#inString = true;
        i = this.#stringEnd(bytes, i + 1);
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) depth++;
      else if ((byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) && --depth === 2) {
        // the byte that closes the element is #close's, from depth 3
        this.#depth = 3;
        return i;
      }
    }
    this.#depth = depth;
    return bytes.length;
  }

  /**
   * The string goes on at `at`: where it ends (its closing quote), or the
   * chunk's last byte when it goes on in the next one.
   */
  #stringEnd(bytes: Buffer, at: number): number {
    let from = at;
    if (this.#escaped) {
      // the chunk starts with the character a backslash escapes
      this.#escaped = false;
      from++;
    }
    for (;;) {
      const quote = bytes.indexOf(QUOTE, from);
      const end = quote < 0 ? bytes.length : quote;
      let backslashes = 0;
      while (end - backslashes - 1 >= from && bytes[end - backslashes - 1] === BACKSLASH)
        backslashes++;
      if (quote < 0) {
        this.#escaped = backslashes % 2 === 1;
        return bytes.length - 1;
      }
      if (backslashes % 2 === 0) {
        this.#inString = false;
        return quote;
      }
      from = quote + 1;
    }
  }

  #stringByte(byte: number): void {
    const topKey = this.#depth === 1 && this.#phase === 'key';
    if (this.#escaped) this.#escaped = false;
    else if (byte === BACKSLASH) this.#escaped = true;
    else if (byte === QUOTE) this.#inString = false;
    else if (topKey) this.#key.push(byte);
    if (!this.#inString && topKey) {
      this.#isMember = Buffer.from(this.#key).equals(this.#wanted);
      this.#phase = 'colon';
    }
  }

  #quote(at: number): void {
    this.#inString = true;
    if (this.#depth === 1 && this.#phase === 'key') this.#key = [];
    if (this.#depth === 2 && this.#phase === 'elements' && this.#copyFrom < 0) this.#copyFrom = at;
  }

  #open(byte: number, at: number): void {
    this.#depth++;
    if (this.#depth === 2 && this.#phase === 'value')
      this.#phase = this.#isMember && byte === OPEN_ARRAY ? 'elements' : 'after';
    else if (this.#depth === 3 && this.#phase === 'elements' && this.#copyFrom < 0)
      this.#copyFrom = at;
  }

  #close(bytes: Buffer, at: number, out: Buffer[]): void {
    this.#depth--;
    if (this.#depth === 2 && this.#phase === 'elements' && this.#copyFrom >= 0) {
      // An element ends: copy it, its line breaks made spaces, and end its line.
      this.#line(bytes, at + 1, out);
    } else if (this.#depth === 1 && (this.#phase === 'elements' || this.#phase === 'after')) {
      if (this.#phase === 'elements') this.result.found = true;
      this.#phase = 'key';
    }
  }

  #other(bytes: Buffer, at: number, out: Buffer[]): void {
    const byte = bytes[at]!;
    const depth = this.#depth;
    const phase = this.#phase;
    if (depth === 1 && phase === 'colon' && byte === COLON) this.#phase = 'value';
    else if (depth === 1 && phase === 'value' && byte > 0x20 && byte !== COLON) {
      // a scalar value at the top level: skip it up to the next key
      this.#phase = 'key';
    } else if (depth === 2 && phase === 'elements') {
      // a scalar element ends at a comma, and starts at anything else but space
      if (this.#copyFrom >= 0 && byte === COMMA) this.#line(bytes, at, out);
      else if (this.#copyFrom < 0 && byte > 0x20 && byte !== COMMA) this.#copyFrom = at;
    }
  }

  /** The element being copied ends before `to`: its line. */
  #line(bytes: Buffer, to: number, out: Buffer[]): void {
    out.push(bytes.subarray(this.#copyFrom, to), NEWLINE);
    this.#copyFrom = -1;
    this.result.elements++;
  }
}

/** Writes the elements of `member` of the JSON object in `source` to `target`, a line each. */
export async function arrayMemberToLines(
  source: string,
  target: string,
  member: string,
): Promise<JsonLines> {
  const out = createWriteStream(target, { highWaterMark: 1 << 20 });
  out.on('error', () => undefined); // surfaces in the write, the drain or finished()
  const scanner = new MemberScanner(member);
  try {
    for await (const chunk of createReadStream(source, { highWaterMark: 1 << 20 })) {
      // One write a chunk: its lines copied out of the chunk at once.
      if (!out.write(Buffer.concat(scanner.scan(chunk as Buffer)))) await once(out, 'drain');
    }
    out.end();
    await finished(out);
  } catch (error) {
    out.destroy();
    throw error;
  }
  return scanner.result;
}

const NEWLINE = Buffer.from('\n');

/**
 * Line breaks made spaces, in place: in valid JSON they can only be whitespace
 * between tokens (inside a string they are escaped), and an element must stay
 * on its line.
 */
export function spaced(bytes: Buffer): void {
  for (const breaking of [LF, CR])
    for (let i = bytes.indexOf(breaking); i >= 0; i = bytes.indexOf(breaking, i + 1))
      bytes[i] = 0x20;
}
