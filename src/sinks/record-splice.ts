/**
 * Putting an extract together from the last night's file and the records
 * made anew (record-reuse.ts), hashed as it is written.
 */
import { createHash, type Hash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { offsetsOf, type RecordIndex } from './record-index.js';

/** Bytes read and written at a time when records are copied. */
export const COPY_BUFFER = 4 << 20;

/** Where a file's records lie. */
export interface Laid {
  prefix: number;
  suffix: number;
  lengths: Uint32Array;
}

/** Which record each row of the new file takes: the last file's (its number), or -1 for the next one made. */
export interface Taken {
  from: Int32Array;
}

/** Bytes written in order to a file, hashed as they go. */
export class HashedOut {
  readonly hash: Hash = createHash('sha256');
  #at = 0;
  constructor(readonly handle: FileHandle) {}

  async write(bytes: Uint8Array): Promise<void> {
    this.hash.update(bytes);
    await this.handle.write(bytes, 0, bytes.length, this.#at);
    this.#at += bytes.length;
  }
}

/** Copies bytes [start, end) of `from` to `out`. */
export async function copy(
  from: FileHandle,
  start: number,
  end: number,
  out: HashedOut,
  buffer: Buffer,
): Promise<void> {
  for (let at = start; at < end;) {
    const { bytesRead } = await from.read(buffer, 0, Math.min(buffer.length, end - at), at);
    if (bytesRead === 0)
      throw new Error(`the last extract ended at ${at} where ${end} bytes were expected`);
    await out.write(buffer.subarray(0, bytesRead));
    at += bytesRead;
  }
}

/**
 * Puts the new file together in `target`: the last file's prefix, each row's
 * record (the last file's or a made one), runs of records that lie together
 * in one file copied at once, the last file's suffix.
 */
export async function splice(
  target: string,
  last: { path: string; index: RecordIndex },
  made: { path: string; laid: Laid },
  plan: Taken,
  separator: string,
): Promise<{ sha256: string; lengths: Uint32Array }> {
  const between = Buffer.from(separator);
  const { index } = last;
  const madeAt = offsetsOf(made.laid.prefix, made.laid.lengths, between.length);
  const files = [await open(last.path, 'r')];
  if (made.laid.lengths.length > 0) files.push(await open(made.path, 'r'));
  const handle = await open(target, 'wx');
  try {
    const out = new HashedOut(handle);
    const buffer = Buffer.allocUnsafe(COPY_BUFFER);
    await copy(files[0]!, 0, index.meta.prefix, out, buffer);
    const lengths = new Uint32Array(plan.from.length);
    let run: { file: number; start: number; end: number } | undefined;
    let next = 0;
    let previous = -2;
    for (let i = 0; i < plan.from.length; i++) {
      const j = plan.from[i]!;
      const file = j >= 0 ? 0 : 1;
      const length = j >= 0 ? index.lengths[j]! : made.laid.lengths[next]!;
      lengths[i] = length;
      // The next record of the same file lies right after the run (the made ones are all in order).
      const follows = run !== undefined && run.file === file && (file === 1 || j === previous + 1);
      const start = follows
        ? run!.end + between.length
        : j >= 0
          ? index.offsetOf(j)
          : madeAt[next]!;
      if (j < 0) next++;
      previous = j;
      if (follows) {
        run!.end = start + length;
        continue;
      }
      if (run) {
        await copy(files[run.file]!, run.start, run.end, out, buffer);
        if (between.length > 0) await out.write(between);
      }
      run = { file, start, end: start + length };
    }
    if (run) await copy(files[run.file]!, run.start, run.end, out, buffer);
    const size = index.meta.file.size;
    await copy(files[0]!, size - index.meta.suffix, size, out, buffer);
    return { sha256: out.hash.digest('hex'), lengths };
  } finally {
    await handle.close();
    for (const file of files) await file.close();
  }
}
