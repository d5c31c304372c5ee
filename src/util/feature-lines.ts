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
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
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
  if (range.from === range.to) {
    await finished(createWriteStream(target).end());
    return 0;
  }
  let lines = 1;
  let carry = Buffer.alloc(0);
  const out = createWriteStream(target, { highWaterMark: 1 << 20 });
  out.on('error', () => undefined); // surfaces in the write, the drain or finished()
  try {
    const chunks = createReadStream(source, {
      start: range.from,
      end: range.to - 1,
      highWaterMark: 1 << 20,
    });
    for await (const chunk of chunks) {
      spaced(chunk as Buffer);
      const bytes = carry.length > 0 ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
      for (let at = bytes.indexOf(BETWEEN); at >= 0; at = bytes.indexOf(BETWEEN, at + 1)) {
        bytes[at + COMMA_AT] = 0x0a;
        lines++;
      }
      // A boundary the chunk cuts through is found with the next chunk.
      const kept = Math.max(0, bytes.length - (BETWEEN.length - 1));
      if (!out.write(bytes.subarray(0, kept))) await once(out, 'drain');
      carry = Buffer.from(bytes.subarray(kept));
    }
    out.end(Buffer.concat([carry, Buffer.from('\n')]));
    await finished(out);
  } catch (error) {
    out.destroy();
    throw error;
  }
  return lines;
}
