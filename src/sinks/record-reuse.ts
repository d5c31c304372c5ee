/**
 * A nightly extract written from the last night's: the rows whose
 * fingerprint (row-order.ts) a record of the last file has are copied from
 * it, byte for byte, and only the others are made by DuckDB. A national
 * extract of today's signs is 2.9M rows of which a day changes about a
 * thousand; making them all again was most of a night.
 *
 * The file is the same as one made whole: the records are each a function of
 * their row alone (the index says with which columns, options and versions,
 * record-index.ts), in the same order (the source's, ties broken by the
 * fingerprint), with the same bytes between them. When there is no index of
 * the file in place, or more than a twentieth of the rows changed, the file
 * is made whole, and its index with it.
 */
import { createHash, type Hash } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import type { ExportSource } from './columns.js';
import {
  RecordLookup,
  offsetsOf,
  readIndex,
  writeIndex,
  type IndexedFile,
  type RecordIndex,
} from './record-index.js';
import { ROW_HASH, type RowOrder } from './row-order.js';

/** The largest share of changed rows for which a file is put together from the last one. */
export const MOST_CHANGED = 0.05;

/** Bytes read and written at a time when records are copied. */
export const COPY_BUFFER = 4 << 20;

/** Where a file's records lie. */
export interface Laid {
  prefix: number;
  suffix: number;
  lengths: Uint32Array;
}

export interface ReusingWriter {
  db: Database;
  params: ExportSource['params'];
  order: RowOrder;
  /** What makes a record's bytes (format, columns, options, versions). */
  fingerprint: string;
  /** The bytes between two records. */
  separator: string;
  /** Writes the whole file, every row in order, to `temporary`: its records and SHA-256. */
  writeAll(temporary: string, orderBy: string): Promise<Laid & { rows: number; sha256: string }>;
  /** Writes the rows `where` picks, in order, to `file`, records apart as in the whole file. */
  writeSome(file: string, where: string, orderBy: string): Promise<Laid>;
}

interface Plan {
  hi: Uint32Array;
  lo: Uint32Array;
  /** Each row's record in the last file, or -1. */
  from: Int32Array;
  /** The rows to make, and their distinct fingerprints (as SQL numbers). */
  made: number;
  fingerprints: Set<string>;
}

/** The rows' fingerprints in order (narrow rows: DuckDB sorts the keys and the number only). */
async function planOf(writer: ReusingWriter, old: RecordIndex | undefined): Promise<Plan> {
  const { keyed, orderBy } = writer.order;
  const his: Uint32Array[] = [];
  const los: Uint32Array[] = [];
  const result = await writer.db.connection.stream(
    `SELECT (${ROW_HASH} >> 32)::UINTEGER AS hi, (${ROW_HASH} & 4294967295)::UINTEGER AS lo FROM ${keyed} ${orderBy}`,
    writer.params,
  );
  let count = 0;
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    const hiVector = chunk.getColumnVector(0);
    const loVector = chunk.getColumnVector(1);
    const hi = new Uint32Array(chunk.rowCount);
    const lo = new Uint32Array(chunk.rowCount);
    for (let row = 0; row < chunk.rowCount; row++) {
      hi[row] = hiVector.getItem(row) as number;
      lo[row] = loVector.getItem(row) as number;
    }
    his.push(hi);
    los.push(lo);
    count += chunk.rowCount;
  }
  const join = (parts: Uint32Array[]): Uint32Array => {
    const all = new Uint32Array(count);
    let at = 0;
    for (const part of parts) {
      all.set(part, at);
      at += part.length;
    }
    return all;
  };
  const plan: Plan = {
    hi: join(his),
    lo: join(los),
    from: new Int32Array(count).fill(-1),
    made: 0,
    fingerprints: new Set(),
  };
  const lookup = old ? new RecordLookup(old) : undefined;
  for (let i = 0; i < count; i++) {
    const found = lookup ? lookup.find(plan.hi[i]!, plan.lo[i]!) : -1;
    plan.from[i] = found;
    if (found >= 0) continue;
    plan.made++;
    if (lookup && plan.made <= MOST_CHANGED * count)
      plan.fingerprints.add(((BigInt(plan.hi[i]!) << 32n) | BigInt(plan.lo[i]!)).toString());
  }
  return plan;
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
async function splice(
  target: string,
  last: { path: string; index: RecordIndex },
  made: { path: string; laid: Laid },
  plan: Plan,
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
    for (let i = 0; i < plan.from.length; i++) {
      const j = plan.from[i]!;
      const file = j >= 0 ? 0 : 1;
      const start = j >= 0 ? index.offsets[j]! : madeAt[next]!;
      const length = j >= 0 ? index.lengths[j]! : made.laid.lengths[next++]!;
      lengths[i] = length;
      if (run && run.file === file && start === run.end + between.length) {
        run.end = start + length;
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

export interface Reused {
  rows: number;
  sha256: string;
  /** Rows whose record came from the last file. */
  reused: number;
}

/** Writes the extract at `path` from the last one where it can (see above), and its index. */
export async function writeReusing(
  path: string,
  scratch: string,
  indexPath: string,
  writer: ReusingWriter,
): Promise<Reused> {
  const old = await readIndex(indexPath, path, writer.fingerprint);
  const plan = await planOf(writer, old);
  const count = plan.from.length;
  const description = (laid: Laid): Omit<IndexedFile, 'file' | 'count'> => ({
    fingerprint: writer.fingerprint,
    prefix: laid.prefix,
    separator: writer.separator,
    suffix: laid.suffix,
  });
  return writeThrough(path, scratch, async (temporary) => {
    if (!old || count === 0 || plan.made > MOST_CHANGED * count) {
      const all = await writer.writeAll(temporary, writer.order.orderBy);
      if (all.lengths.length === count && all.rows === count)
        await writeIndex(indexPath, scratch, temporary, description(all), {
          ...plan,
          lengths: all.lengths,
        });
      else await rm(indexPath, { force: true });
      return { rows: all.rows, sha256: all.sha256, reused: 0 };
    }
    const madePath = `${temporary}.rows`;
    try {
      const numbers = [...plan.fingerprints].join(', ');
      const laid =
        plan.made === 0
          ? { prefix: 0, suffix: 0, lengths: new Uint32Array(0) }
          : await writer.writeSome(
              madePath,
              `WHERE ${ROW_HASH} IN (SELECT unnest([${numbers}]::UBIGINT[]))`,
              writer.order.orderBy,
            );
      if (laid.lengths.length !== plan.made)
        throw new Error(
          `made ${laid.lengths.length} records of the ${plan.made} rows that changed`,
        );
      const { sha256, lengths } = await splice(
        temporary,
        { path, index: old },
        { path: madePath, laid },
        plan,
        writer.separator,
      );
      await writeIndex(indexPath, scratch, temporary, description({ ...old.meta, lengths }), {
        ...plan,
        lengths,
      });
      return { rows: count, sha256, reused: count - plan.made };
    } finally {
      await rm(madePath, { force: true });
    }
  });
}
