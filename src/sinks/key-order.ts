/**
 * Features handed over in any order, each with a sort key and a position,
 * written out in the order of their keys without holding them all: each is
 * appended at once to the scratch file of its bucket (a range of keys, chosen
 * so that the buckets hold about as many features each), with its position in
 * front; then each bucket in turn is read back whole, its features ordered by
 * key (then by their bytes, so that the order does not depend on how the rows
 * came) and copied out. Two sequential passes over the bytes;
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

/** The features written out: each one's position and its byte offset from the first. */
export interface Placed {
  xs: Float64Array;
  ys: Float64Array;
  offsets: Float64Array;
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

  /** Takes a feature (its bytes are copied before this resolves). */
  async add(key: number, x: number, y: number, feature: Uint8Array): Promise<void> {
    const i = this.#count;
    if (i >= this.#keys.length) throw new Error('the source gave more rows than it counted');
    const b = this.#bounds.length > 0 ? bucketOf(this.#bounds, key) : 0;
    const file = this.#files[b]!;
    this.#keys[i] = key;
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
      bytes: 0,
    };
    const keys = this.#keys;
    const first = out.at;
    let n = 0;
    for (let b = 0; b < files.length; b++) {
      const members = order.subarray(starts[b], starts[b + 1]);
      const bytes = await readFile(files[b]!.path);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const featureOf = (i: number) =>
        bytes.subarray(this.#at[i]! + 16, this.#at[i]! + 16 + this.#sizes[i]!);
      members.sort((p, q) => keys[p]! - keys[q]! || Buffer.compare(featureOf(p), featureOf(q)));
      for (const i of members) {
        const start = this.#at[i]!;
        placed.xs[n] = view.getFloat64(start, true);
        placed.ys[n] = view.getFloat64(start + 8, true);
        placed.offsets[n] = out.at - first;
        const feature = featureOf(i);
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
