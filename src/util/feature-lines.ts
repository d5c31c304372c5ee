/**
 * The features of a GeoJSON FeatureCollection, one per line, found the quick
 * way: a compact collection as services write it (`{"type":"FeatureCollection",
 * "features":[{"type":"Feature",...},{"type":"Feature",...}]}`) is cut where
 * one feature ends and the next begins, `},{"type":"Feature"`, which a native
 * search finds without looking at every byte (inside a string each quote is
 * escaped, so the bytes cannot be part of one). A cut in the wrong place (a
 * feature nested in a property) leaves lines that are not whole JSON values,
 * and a missed one two values on a line: the reader of the lines must fail on
 * both (DuckDB's JSON reader does), and the caller then cuts the file with
 * arrayMemberToLines, which follows every byte.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { spaced } from './json-lines.js';

/** Where one feature ends and the next begins; the comma becomes a line break. */
const BETWEEN = Buffer.from('},{"type":"Feature"');
const COMMA_AT = 1;

/** The collection's opening up to its first feature. */
const OPENING = /^\s*\{\s*"type"\s*:\s*"FeatureCollection"\s*,\s*"features"\s*:\s*\[\s*/;
/** The collection's end after its last feature. */
const CLOSING = /\s*\]\s*\}\s*$/;

/** The byte range of the features in the file, when it opens and closes as a compact collection does. */
async function featuresRange(source: string): Promise<{ from: number; to: number } | undefined> {
  const handle = await open(source, 'r');
  try {
    const { size } = await handle.stat();
    const edge = Math.min(size, 4096);
    const head = Buffer.alloc(edge);
    await handle.read(head, 0, edge, 0);
    const tail = Buffer.alloc(edge);
    await handle.read(tail, 0, edge, size - edge);
    const opening = OPENING.exec(head.toString('latin1'));
    const closing = CLOSING.exec(tail.toString('latin1'));
    if (!opening || !closing) return undefined;
    const from = opening[0].length;
    const to = size - closing[0].length;
    return from <= to ? { from, to } : undefined;
  } finally {
    await handle.close();
  }
}

/** Writes all of `bytes` to the file. */
async function writeAll(file: FileHandle, bytes: Buffer): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done);
    done += bytesWritten;
  }
}

/** How much is read at a time: one buffer, used over and over (no garbage per chunk). */
const CHUNK = 4 << 20;

/**
 * Writes the features of the FeatureCollection in `source` to `target`, one
 * per line, when the collection is laid out as a compact one is; resolves to
 * the number of lines, or undefined when it is not laid out so (nothing is
 * written then). The lines are a guess the reader must check (see above).
 */
export async function compactFeatureLines(
  source: string,
  target: string,
): Promise<number | undefined> {
  const range = await featuresRange(source);
  if (!range) return undefined;
  const input = await open(source, 'r');
  const output = await open(target, 'w');
  try {
    // The bytes a chunk ends with that could begin a boundary go to the front of the next.
    const held = BETWEEN.length - 1;
    const buffer = Buffer.allocUnsafe(CHUNK + held);
    let lines = range.from < range.to ? 1 : 0;
    let carry = 0;
    for (let position = range.from; position < range.to;) {
      const want = Math.min(CHUNK, range.to - position);
      const { bytesRead } = await input.read(buffer, carry, want, position);
      if (bytesRead === 0) throw new Error(`${source} ended before its features did`);
      position += bytesRead;
      const filled = carry + bytesRead;
      const bytes = buffer.subarray(0, filled);
      spaced(buffer.subarray(carry, filled));
      for (let at = bytes.indexOf(BETWEEN); at >= 0; at = bytes.indexOf(BETWEEN, at + 1)) {
        bytes[at + COMMA_AT] = 0x0a;
        lines++;
      }
      const kept = position < range.to ? Math.max(0, filled - held) : filled;
      await writeAll(output, bytes.subarray(0, kept));
      buffer.copyWithin(0, kept, filled);
      carry = filled - kept;
    }
    if (lines > 0) await writeAll(output, Buffer.from('\n'));
    return lines;
  } finally {
    await Promise.all([input.close(), output.close()]);
  }
}
