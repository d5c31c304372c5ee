/**
 * Features handed over in any order, each with a sort key and a position,
 * written out in the order of their keys without holding them all: each is
 * appended at once to the scratch file of its bucket (a range of keys, chosen
 * so that the buckets hold about as many features each), with its position in
 * front; then each bucket in turn is read back whole, its features ordered by
 * key (then by arrival) and copied out. Two sequential passes over the bytes;
 * memory is 24 bytes a feature and the largest bucket.
 */
import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import { PositionedWriter } from '../util/positioned-writer.js';

/** The buffer of each bucket's scratch file. */
const BUCKET_BUFFER = 256 * 1024;

interface Bucket {
  path: string;
  handle: FileHandle;
  writer: PositionedWriter;
  features: number;
}

/** The features written out: each one's position, its byte offset from the first, and its tie-breaker. */
export interface Placed {
  xs: Float64Array;
  ys: Float64Array;
  offsets: Float64Array;
  /** The halves of each one's row fingerprint (row-order.ts), which orders equal keys. */
  hi: Uint32Array;
  lo: Uint32Array;
  /** Bytes of all the features. */
  bytes: number;
}

/** The bucket of a key: the number of bounds below it (equal keys stay in one bucket). */
function bucketOf(bounds: readonly number[], key: number): number {
  let low = 0;
  let high = bounds.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (bounds[middle]! < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

export class KeyOrder {
  // What is known of each feature, in the order it came.
  readonly #keys: Float64Array;
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;
  readonly #buckets: Uint32Array;
  readonly #at: Float64Array; // in its bucket's file
  readonly #sizes: Uint32Array; // its bytes, the position not counted
  readonly #bounds: readonly number[];
  readonly #files: Bucket[];
  readonly #position = new Float64Array(2);
  readonly #positionBytes = new Uint8Array(this.#position.buffer);
  #count = 0;

  private constructor(count: number, bounds: readonly number[], files: Bucket[]) {
    this.#keys = new Float64Array(count);
    this.#hi = new Uint32Array(count);
    this.#lo = new Uint32Array(count);
    this.#buckets = new Uint32Array(count);
    this.#at = new Float64Array(count);
    this.#sizes = new Uint32Array(count);
    this.#bounds = bounds;
    this.#files = files;
  }

  /**
   * Room for `count` features in buckets parted by `bounds` (ascending keys:
   * a bucket holds the keys up to and including its bound), their scratch
   * files named `prefix`.bucket-N.
   */
  static async open(prefix: string, count: number, bounds: readonly number[]): Promise<KeyOrder> {
    const files: Bucket[] = [];
    try {
      for (let b = 0; b <= bounds.length; b++) {
        const path = `${prefix}.bucket-${b}`;
        const handle = await open(path, 'wx');
        files.push({
          path,
          handle,
          writer: new PositionedWriter(handle, 0, BUCKET_BUFFER),
          features: 0,
        });
      }
    } catch (error) {
      await closeAll(files);
      throw error;
    }
    return new KeyOrder(count, bounds, files);
  }

  /**
   * Takes a feature (its bytes are copied before this resolves); equal keys
   * are ordered by `hi` and `lo` (the row's fingerprint), then as they came.
   */
  async add(key: number, x: number, y: number, feature: Uint8Array, hi = 0, lo = 0): Promise<void> {
    const i = this.#count;
    if (i >= this.#keys.length) throw new Error('the source gave more rows than it counted');
    const b = this.#bounds.length > 0 ? bucketOf(this.#bounds, key) : 0;
    const file = this.#files[b]!;
    this.#keys[i] = key;
    this.#hi[i] = hi;
    this.#lo[i] = lo;
    this.#buckets[i] = b;
    this.#at[i] = file.writer.at;
    this.#sizes[i] = feature.length;
    this.#position[0] = x;
    this.#position[1] = y;
    if (!file.writer.put(this.#positionBytes)) await file.writer.write(this.#positionBytes);
    if (!file.writer.put(feature)) await file.writer.write(feature);
    file.features++;
    this.#count++;
  }

  /** Writes every feature to `out` in key order; resolves to where each went. */
  async drain(out: PositionedWriter): Promise<Placed> {
    const count = this.#count;
    if (count !== this.#keys.length)
      throw new Error(`the source gave ${count} rows where it counted ${this.#keys.length}`);
    for (const file of this.#files) await file.writer.flush();
    // Each bucket's features, in the order they came (a counting sort by bucket).
    const files = this.#files;
    const starts = new Uint32Array(files.length + 1);
    for (let b = 0; b < files.length; b++) starts[b + 1] = starts[b]! + files[b]!.features;
    const order = new Uint32Array(count);
    const filled = starts.slice(0, files.length);
    for (let i = 0; i < count; i++) order[filled[this.#buckets[i]!]!++] = i;

    const placed: Placed = {
      xs: new Float64Array(count),
      ys: new Float64Array(count),
      offsets: new Float64Array(count),
      hi: new Uint32Array(count),
      lo: new Uint32Array(count),
      bytes: 0,
    };
    const keys = this.#keys;
    const his = this.#hi;
    const los = this.#lo;
    const first = out.at;
    let n = 0;
    for (let b = 0; b < files.length; b++) {
      const members = order.subarray(starts[b], starts[b + 1]);
      members.sort(
        (p, q) => keys[p]! - keys[q]! || his[p]! - his[q]! || los[p]! - los[q]! || p - q,
      );
      const bytes = await readFile(files[b]!.path);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (const i of members) {
        const start = this.#at[i]!;
        placed.xs[n] = view.getFloat64(start, true);
        placed.ys[n] = view.getFloat64(start + 8, true);
        placed.offsets[n] = out.at - first;
        placed.hi[n] = his[i]!;
        placed.lo[n] = los[i]!;
        const feature = bytes.subarray(start + 16, start + 16 + this.#sizes[i]!);
        if (!out.put(feature)) await out.write(feature);
        n++;
      }
    }
    placed.bytes = out.at - first;
    await out.flush();
    return placed;
  }

  /** Removes the scratch files. */
  async close(): Promise<void> {
    await closeAll(this.#files);
  }
}

async function closeAll(files: Bucket[]): Promise<void> {
  for (const file of files) {
    await file.handle.close().catch(() => undefined);
    await rm(file.path, { force: true });
  }
}
