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
import { open, readdir, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeThrough } from '../util/fs.js';

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
}

export interface Records {
  /** Each record's row fingerprint: high and low 32 bits. */
  hi: Uint32Array;
  lo: Uint32Array;
  lengths: Uint32Array;
}

/** Records between two kept offsets: a record's offset is the kept one before it plus the lengths between. */
const OFFSET_STRIDE = 64;

export class RecordIndex implements Records {
  readonly #starts: Float64Array;
  readonly #separator: number;

  constructor(
    readonly meta: IndexedFile,
    readonly hi: Uint32Array,
    readonly lo: Uint32Array,
    readonly lengths: Uint32Array,
  ) {
    this.#separator = Buffer.byteLength(meta.separator);
    this.#starts = new Float64Array(Math.ceil(lengths.length / OFFSET_STRIDE));
    let at = meta.prefix;
    for (let i = 0; i < lengths.length; i++) {
      if (i % OFFSET_STRIDE === 0) this.#starts[i / OFFSET_STRIDE] = at;
      at += lengths[i]! + this.#separator;
    }
  }

  /** The offset of record `i` in the file. */
  offsetOf(i: number): number {
    const first = i - (i % OFFSET_STRIDE);
    let at = this.#starts[first / OFFSET_STRIDE]!;
    for (let k = first; k < i; k++) at += this.lengths[k]! + this.#separator;
    return at;
  }
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

/** `count` u32 at `position` of `handle`, in an array of their own; undefined if the file ends before. */
async function numbersAt(
  handle: FileHandle,
  position: number,
  count: number,
): Promise<Uint32Array | undefined> {
  const numbers = new Uint32Array(count);
  const bytes = new Uint8Array(numbers.buffer);
  for (let at = 0; at < bytes.length;) {
    const { bytesRead } = await handle.read(bytes, at, bytes.length - at, position + at);
    if (bytesRead === 0) return undefined;
    at += bytesRead;
  }
  return numbers;
}

/** The description and the numbers of the index file at `indexPath`; undefined if it is not one. */
async function readIndexFile(
  indexPath: string,
): Promise<[IndexedFile, Uint32Array, Uint32Array, Uint32Array] | undefined> {
  const handle = await open(indexPath, 'r');
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(12);
    await handle.read(head, 0, 12, 0);
    if (size < 12 || !head.subarray(0, 8).equals(MAGIC)) return undefined;
    const metaLength = head.readUInt32LE(8);
    const json = Buffer.alloc(Math.min(metaLength, Math.max(0, size - 12)));
    await handle.read(json, 0, json.length, 12);
    const meta = JSON.parse(json.toString('utf8')) as IndexedFile;
    const start = Math.ceil((12 + metaLength) / 4) * 4;
    const { count } = meta;
    if (!Number.isInteger(count) || count < 0 || size !== start + 12 * count) return undefined;
    const parts = [];
    for (let part = 0; part < 3; part++) {
      const numbers = await numbersAt(handle, start + 4 * count * part, count);
      if (!numbers) return undefined;
      parts.push(numbers);
    }
    return [meta, parts[0]!, parts[1]!, parts[2]!];
  } finally {
    await handle.close();
  }
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
  let read: Awaited<ReturnType<typeof readIndexFile>>;
  let now: IndexedFile['file'];
  try {
    [read, now] = await Promise.all([readIndexFile(indexPath), identityOf(path)]);
  } catch {
    return undefined;
  }
  if (!read) return undefined;
  const [meta, hi, lo, lengths] = read;
  if (
    meta.fingerprint !== fingerprint ||
    meta.file.ino !== now.ino ||
    meta.file.size !== now.size ||
    meta.file.mtimeMs !== now.mtimeMs
  )
    return undefined;
  let total =
    meta.prefix + meta.suffix + Math.max(0, meta.count - 1) * Buffer.byteLength(meta.separator);
  for (let i = 0; i < meta.count; i++) total += lengths[i]!;
  if (total !== now.size) return undefined;
  return new RecordIndex(meta, hi, lo, lengths);
}

/** The bytes of a typed array, without a copy. */
function bytesOf(numbers: Uint32Array): Buffer {
  return Buffer.from(numbers.buffer, numbers.byteOffset, numbers.byteLength);
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
  const head = Buffer.alloc(Math.ceil((12 + json.length) / 4) * 4);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(json.length, 8);
  json.copy(head, 12);
  await writeThrough(indexPath, scratch, async (temporary) => {
    const handle = await open(temporary, 'wx');
    try {
      await handle.writev([
        head,
        bytesOf(records.hi.subarray(0, count)),
        bytesOf(records.lo.subarray(0, count)),
        bytesOf(records.lengths),
      ]);
    } finally {
      await handle.close();
    }
  });
  // Fingerprints that earlier releases kept beside the index as Parquet.
  const kept = `${basename(indexPath)}.`;
  for (const name of await readdir(dirname(indexPath)))
    if (name.startsWith(kept) && name.endsWith('.hashes.parquet'))
      await rm(join(dirname(indexPath), name), { force: true });
}

/** Slots of a RecordLookup per record, at most: a table at most 70% full. */
const LOAD = 0.7;

/**
 * The records of an index by their fingerprint: open addressing over the
 * halves, a slot holding a record's number, or -2 - the number of the first
 * of several with that fingerprint. A fingerprint two records share (equal
 * rows, or a collision) is found as none, so that its bytes are made again
 * rather than guessed.
 */
export class RecordLookup {
  readonly #slots: Int32Array;
  readonly #mask: number;
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;

  constructor(records: Pick<Records, 'hi' | 'lo'>) {
    let size = 16;
    while (size * LOAD < records.hi.length) size *= 2;
    this.#slots = new Int32Array(size).fill(-1);
    this.#mask = size - 1;
    this.#hi = records.hi;
    this.#lo = records.lo;
    for (let i = 0; i < records.hi.length; i++) {
      const slot = this.#slot(records.hi[i]!, records.lo[i]!);
      const there = this.#slots[slot]!;
      if (there === -1) this.#slots[slot] = i;
      else if (there >= 0) this.#slots[slot] = -2 - there;
    }
  }

  /** The slot of a fingerprint: the one that holds it, or the empty one where it would go. */
  #slot(hi: number, lo: number): number {
    let slot = (Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> 0) & this.#mask;
    for (;;) {
      const there = this.#slots[slot]!;
      if (there === -1) return slot;
      const record = there >= 0 ? there : -2 - there;
      if (this.#hi[record] === hi && this.#lo[record] === lo) return slot;
      slot = (slot + 1) & this.#mask;
    }
  }

  /** The record of this fingerprint; -1 when none has it, or more than one. */
  find(hi: number, lo: number): number {
    const there = this.#slots[this.#slot(hi, lo)]!;
    return there >= 0 ? there : -1;
  }
}
