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

/** Offsets in a file that grow, as doubles. */
class Offsets {
  #items = new Float64Array(1 << 16);
  count = 0;

  push(offset: number): void {
    if (this.count === this.#items.length) {
      const grown = new Float64Array(this.#items.length * 2);
      grown.set(this.#items);
      this.#items = grown;
    }
    this.#items[this.count++] = offset;
  }

  at(i: number): number {
    return this.#items[i]!;
  }
}

/** A cut made in the file itself: its lines, and how to give the file its JSON back. */
export interface CutInPlace {
  lines: number;
  undo(): Promise<void>;
}

/**
 * The cut of compactFeatureLines made in `file` itself, which then holds the
 * lines: the collection's opening and end become spaces (the last a line
 * break), each boundary's comma a line break. No second file of the answer's
 * size is written: the pages are rewritten where they are (2 GB in 1.7 s of
 * the kernel's CPU, where a new file took 3.4 to 5.8 s). `undo` gives the file
 * its collection back, line breaks between tokens left as spaces, for the
 * exact cut when the guess does not hold. Undefined, and nothing changed,
 * when the file is not laid out so. Only for a file no one else has a link to.
 */
export async function compactFeatureLinesInPlace(file: string): Promise<CutInPlace | undefined> {
  const range = await featuresRange(file);
  if (!range) return undefined;
  const handle = await open(file, 'r+');
  const cuts = new Offsets();
  let opening: Buffer | undefined;
  let closing: Buffer | undefined;
  try {
    const { size } = await handle.stat();
    opening = Buffer.alloc(range.from);
    await handle.read(opening, 0, range.from, 0);
    closing = Buffer.alloc(size - range.to);
    await handle.read(closing, 0, closing.length, range.to);
    const held = BETWEEN.length - 1;
    const buffer = Buffer.allocUnsafe(CHUNK + held);
    // A boundary's comma that falls on the first byte of the next chunk.
    let pending = false;
    for (let position = range.from; position < range.to;) {
      const want = Math.min(CHUNK, range.to - position);
      const ahead = Math.min(held, range.to - position - want);
      const { bytesRead } = await handle.read(buffer, 0, want + ahead, position);
      if (bytesRead < want + ahead) throw new Error(`${file} ended before its features did`);
      const bytes = buffer.subarray(0, want);
      spaced(bytes);
      if (pending) bytes[0] = 0x0a;
      pending = false;
      const seen = buffer.subarray(0, want + ahead);
      for (
        let at = seen.indexOf(BETWEEN);
        at >= 0 && at < want;
        at = seen.indexOf(BETWEEN, at + 1)
      ) {
        cuts.push(position + at + COMMA_AT);
        if (at + COMMA_AT < want) bytes[at + COMMA_AT] = 0x0a;
        else pending = true;
      }
      await writeAllAt(handle, bytes, position);
      position += want;
    }
    await writeAllAt(handle, Buffer.alloc(range.from, 0x20), 0);
    const end = Buffer.alloc(size - range.to, 0x20);
    end[end.length - 1] = 0x0a;
    await writeAllAt(handle, end, range.to);
  } catch (error) {
    await handle.close();
    throw error;
  }
  await handle.close();
  const lines = range.from < range.to ? cuts.count + 1 : 0;
  const [head, tail] = [opening, closing];
  return {
    lines,
    async undo() {
      const again = await open(file, 'r+');
      try {
        const buffer = Buffer.allocUnsafe(CHUNK);
        for (let position = range.from, i = 0; i < cuts.count; position += CHUNK) {
          const length = Math.min(CHUNK, range.to - position);
          const { bytesRead } = await again.read(buffer, 0, length, position);
          if (bytesRead < length) throw new Error(`${file} ended before its features did`);
          for (; i < cuts.count && cuts.at(i) < position + length; i++)
            buffer[cuts.at(i) - position] = 0x2c;
          await writeAllAt(again, buffer.subarray(0, length), position);
        }
        await writeAllAt(again, head, 0);
        await writeAllAt(again, tail, range.to);
      } finally {
        await again.close();
      }
    },
  };
}

/** Writes all of `bytes` to the file at `position`. */
async function writeAllAt(file: FileHandle, bytes: Buffer, position: number): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}
