/**
 * The index of an extract's records, kept in `.state` beside the extract:
 * for each record in the file, in order, its row's fingerprint and its
 * length, with what makes the file's bytes what they are (the format, the
 * columns, the versions) and the file it describes (inode, size, time). A
 * file that is not the one described, or bytes made otherwise, has no index.
 *
 * Layout: `RETLIDX1`, the description's length (u32) and JSON, padding to 4
 * bytes, then the fingerprints' high and low halves and the lengths, each
 * `count` u32 (little-endian).
 */
import { readFile, stat } from 'node:fs/promises';
import { writeFileAtomic } from '../util/fs.js';

const MAGIC = Buffer.from('RETLIDX1');

export interface IndexedFile {
  /** What makes a record's bytes a function of its row alone (format, columns, options, versions). */
  fingerprint: string;
  /** The file's identity when it was written. */
  file: { ino: number; size: number; mtimeMs: number };
  /** Bytes before the first record, between two records (text), after the last. */
  prefix: number;
  separator: string;
  suffix: number;
  count: number;
  /** The fingerprints that one record alone has, kept beside the index for DuckDB: the file's name and how many. */
  hashes?: { file: string; count: number };
  /** The records made anew (not copied) when the file was written, if it was written from another. */
  made?: number;
}

export interface Records {
  /** Each record's row fingerprint: high and low 32 bits. */
  hi: Uint32Array;
  lo: Uint32Array;
  lengths: Uint32Array;
}

export interface RecordIndex extends Records {
  meta: IndexedFile;
  /** Each record's offset in the file. */
  offsets: Float64Array;
}

/** Each record's offset, from the prefix, the lengths and the separator. */
export function offsetsOf(prefix: number, lengths: Uint32Array, separator: number): Float64Array {
  const offsets = new Float64Array(lengths.length);
  let at = prefix;
  for (let i = 0; i < lengths.length; i++) {
    offsets[i] = at;
    at += lengths[i]! + separator;
  }
  return offsets;
}

function fileIdentity(info: { ino: number; size: number; mtimeMs: number }): IndexedFile['file'] {
  return { ino: info.ino, size: info.size, mtimeMs: Math.round(info.mtimeMs) };
}

/** The identity of a file as an index records it. */
export async function identityOf(path: string): Promise<IndexedFile['file']> {
  return fileIdentity(await stat(path));
}

/**
 * The index at `indexPath` of the file at `path`, when it describes that
 * very file made with `fingerprint`; undefined otherwise (no index, another
 * file, another make, a damaged index).
 */
export async function readIndex(
  indexPath: string,
  path: string,
  fingerprint: string,
): Promise<RecordIndex | undefined> {
  let bytes: Buffer;
  let now: IndexedFile['file'];
  try {
    [bytes, now] = await Promise.all([readFile(indexPath), identityOf(path)]);
  } catch {
    return undefined;
  }
  if (bytes.length < 12 || !bytes.subarray(0, 8).equals(MAGIC)) return undefined;
  const metaLength = bytes.readUInt32LE(8);
  let meta: IndexedFile;
  try {
    meta = JSON.parse(bytes.subarray(12, 12 + metaLength).toString('utf8')) as IndexedFile;
  } catch {
    return undefined;
  }
  const start = Math.ceil((12 + metaLength) / 4) * 4;
  const { count } = meta;
  if (
    meta.fingerprint !== fingerprint ||
    meta.file.ino !== now.ino ||
    meta.file.size !== now.size ||
    meta.file.mtimeMs !== now.mtimeMs ||
    bytes.length !== start + 12 * count
  )
    return undefined;
  // A copy aligned to 4 bytes (the Buffer may lie anywhere in its pool).
  const numbers = new Uint32Array(3 * count);
  new Uint8Array(numbers.buffer).set(bytes.subarray(start));
  const lengths = numbers.subarray(2 * count);
  let total =
    meta.prefix + meta.suffix + Math.max(0, count - 1) * Buffer.byteLength(meta.separator);
  for (let i = 0; i < count; i++) total += lengths[i]!;
  if (total !== now.size) return undefined;
  return {
    meta,
    hi: numbers.subarray(0, count),
    lo: numbers.subarray(count, 2 * count),
    lengths,
    offsets: offsetsOf(meta.prefix, lengths, Buffer.byteLength(meta.separator)),
  };
}

/** Writes the index of the finished file at `path` (its identity taken now), atomically. */
export async function writeIndex(
  indexPath: string,
  scratch: string,
  path: string,
  description: Omit<IndexedFile, 'file' | 'count'>,
  records: Records,
): Promise<void> {
  const count = records.lengths.length;
  const meta: IndexedFile = { ...description, file: await identityOf(path), count };
  const json = Buffer.from(JSON.stringify(meta));
  const start = Math.ceil((12 + json.length) / 4) * 4;
  const bytes = Buffer.alloc(start + 12 * count);
  MAGIC.copy(bytes, 0);
  bytes.writeUInt32LE(json.length, 8);
  json.copy(bytes, 12);
  const numbers = new Uint32Array(bytes.buffer, bytes.byteOffset + start, 3 * count);
  numbers.set(records.hi, 0);
  numbers.set(records.lo, count);
  numbers.set(records.lengths, 2 * count);
  await writeFileAtomic(indexPath, bytes, scratch);
}

/**
 * The records of an index by their fingerprint: open addressing over the
 * halves. A fingerprint two records share (equal rows, or a collision) is
 * found as none, so that its bytes are made again rather than guessed.
 */
export class RecordLookup {
  readonly #slots: Int32Array;
  readonly #shared: Uint8Array;
  readonly #mask: number;
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;

  constructor(records: Pick<Records, 'hi' | 'lo'>) {
    let size = 16;
    while (size < records.hi.length * 2) size *= 2;
    this.#slots = new Int32Array(size).fill(-1);
    this.#shared = new Uint8Array(size);
    this.#mask = size - 1;
    this.#hi = records.hi;
    this.#lo = records.lo;
    for (let i = 0; i < records.hi.length; i++) {
      const slot = this.#slot(records.hi[i]!, records.lo[i]!);
      if (this.#slots[slot] === -1) this.#slots[slot] = i;
      else this.#shared[slot] = 1;
    }
  }

  /** The slot of a fingerprint: the one that holds it, or the empty one where it would go. */
  #slot(hi: number, lo: number): number {
    let slot = (Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> 0) & this.#mask;
    for (;;) {
      const there = this.#slots[slot]!;
      if (there === -1 || (this.#hi[there] === hi && this.#lo[there] === lo)) return slot;
      slot = (slot + 1) & this.#mask;
    }
  }

  /** The record of this fingerprint; -1 when none has it, or more than one. */
  find(hi: number, lo: number): number {
    const slot = this.#slot(hi, lo);
    return this.#shared[slot] ? -1 : this.#slots[slot]!;
  }
}
