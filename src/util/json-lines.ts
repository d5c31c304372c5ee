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

/** Writes the elements of `member` of the JSON object in `source` to `target`, a line each. */
export async function arrayMemberToLines(
  source: string,
  target: string,
  member: string,
): Promise<JsonLines> {
  const out = createWriteStream(target, { highWaterMark: 1 << 20 });
  out.on('error', () => undefined); // surfaces in the write, the drain or finished()
  const wanted = Buffer.from(member);
  let depth = 0;
  let inString = false;
  let escaped = false;
  let phase: Phase = 'key';
  /** The top-level key being read, and whether it is the member. */
  let key: number[] = [];
  let isMember = false;
  /** Inside an element of the member (depth >= 2 below the array). */
  let elementStart = -1;
  const result: JsonLines = { elements: 0, found: false };
  const write = async (bytes: Buffer): Promise<void> => {
    if (!out.write(bytes)) await once(out, 'drain');
  };
  try {
    for await (const chunk of createReadStream(source, { highWaterMark: 1 << 20 })) {
      const bytes = chunk as Buffer;
      let copyFrom = elementStart >= 0 ? 0 : -1;
      for (let at = 0; at < bytes.length; at++) {
        const byte = bytes[at]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (byte === BACKSLASH) escaped = true;
          else if (byte === QUOTE) inString = false;
          else if (depth === 1 && phase === 'key') key.push(byte);
          if (!inString && depth === 1 && phase === 'key') {
            isMember = Buffer.from(key).equals(wanted);
            phase = 'colon';
          }
          continue;
        }
        if (byte === QUOTE) {
          inString = true;
          if (depth === 1 && phase === 'key') key = [];
          if (depth === 2 && phase === 'elements' && copyFrom < 0) copyFrom = at;
          continue;
        }
        if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
          depth++;
          if (depth === 2 && phase === 'value')
            phase = isMember && byte === OPEN_ARRAY ? 'elements' : 'after';
          else if (depth === 3 && phase === 'elements' && copyFrom < 0) copyFrom = at;
          continue;
        }
        if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
          depth--;
          if (depth === 2 && phase === 'elements' && copyFrom >= 0) {
            // An element ends: copy it, its line breaks made spaces, and end its line.
            await write(lineOf(bytes, copyFrom, at + 1));
            copyFrom = -1;
            result.elements++;
          } else if (depth === 1 && (phase === 'elements' || phase === 'after')) {
            if (phase === 'elements') result.found = true;
            phase = 'key';
          }
          continue;
        }
        if (depth === 1 && phase === 'colon' && byte === COLON) phase = 'value';
        else if (depth === 1 && phase === 'value' && byte > 0x20 && byte !== COLON) {
          // a scalar value at the top level: skip it up to the next key
          phase = 'key';
        } else if (depth === 2 && phase === 'elements' && copyFrom >= 0 && byte === COMMA) {
          // a scalar element ends at a comma
          await write(lineOf(bytes, copyFrom, at));
          copyFrom = -1;
          result.elements++;
        } else if (
          depth === 2 &&
          phase === 'elements' &&
          copyFrom < 0 &&
          byte > 0x20 &&
          byte !== COMMA
        ) {
          copyFrom = at;
        }
      }
      elementStart = copyFrom;
      if (copyFrom >= 0) {
        // The element goes on in the next chunk: what is here is written now.
        await write(blanked(bytes.subarray(copyFrom)));
      }
    }
    out.end();
    await finished(out);
  } catch (error) {
    out.destroy();
    throw error;
  }
  return result;
}

/** A copy of the bytes with line breaks made spaces, and a line break after them when `line`. */
function blanked(bytes: Buffer, line = false): Buffer {
  const copy = Buffer.allocUnsafe(bytes.length + (line ? 1 : 0));
  bytes.copy(copy);
  for (let i = copy.indexOf(LF); i >= 0 && i < bytes.length; i = copy.indexOf(LF, i + 1))
    copy[i] = 0x20;
  for (let i = copy.indexOf(CR); i >= 0 && i < bytes.length; i = copy.indexOf(CR, i + 1))
    copy[i] = 0x20;
  if (line) copy[bytes.length] = LF;
  return copy;
}

function lineOf(bytes: Buffer, from: number, to: number): Buffer {
  return blanked(bytes.subarray(from, to), true);
}
