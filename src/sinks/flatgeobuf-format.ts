/**
 * The parts of FlatGeobuf's FlatBuffers schema (header.fbs and feature.fbs of
 * https://github.com/flatgeobuf/flatgeobuf, format version 3) that a writer of
 * points needs: each table's field slots and defaults, as `flatc` generates
 * them, over the `flatbuffers` runtime; and the packed R-tree, laid out as
 * the reference's (packedrtree.cpp): nodes of 40 bytes, root first.
 */
import type { Builder, Offset } from 'flatbuffers';

/** "fgb", major version 3, "fgb", patch 0. */
export const MAGIC = new Uint8Array([0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62, 0x00]);

/** The enum ColumnType of header.fbs (the values used here). */
export const ColumnType = {
  Bool: 2,
  Int: 5,
  Long: 7,
  Double: 10,
  String: 11,
  Json: 12,
  DateTime: 13,
} as const;
export type ColumnType = (typeof ColumnType)[keyof typeof ColumnType];

const POINT = 1; // enum GeometryType

export interface HeaderFields {
  name: string;
  columns: { name: string; type: ColumnType }[];
  features: number;
  /** West, south, east, north of the features' positions. */
  envelope: readonly [number, number, number, number] | undefined;
  indexNodeSize: number;
  /** The CRS as an EPSG code and its name. */
  crs: { code: number; name: string };
}

/** table Header, size-prefixed: point geometries. */
export function buildHeader(builder: Builder, header: HeaderFields): Uint8Array {
  const columns = header.columns.map((c) => {
    const name = builder.createString(c.name);
    builder.startObject(11); // table Column
    builder.addFieldOffset(0, name, 0);
    builder.addFieldInt8(1, c.type, 0);
    builder.addFieldInt8(7, 1, 1); // nullable (the default, written for clarity of intent)
    const column = builder.endObject();
    builder.requiredField(column, 4); // name
    return column;
  });
  builder.startVector(4, columns.length, 4);
  for (let i = columns.length - 1; i >= 0; i--) builder.addOffset(columns[i]!);
  const columnsVector = builder.endVector();
  const name = builder.createString(header.name);
  const org = builder.createString('EPSG');
  const crsName = builder.createString(header.crs.name);
  builder.startObject(6); // table Crs
  builder.addFieldOffset(0, org, 0);
  builder.addFieldInt32(1, header.crs.code, 0);
  builder.addFieldOffset(2, crsName, 0);
  const crs = builder.endObject();
  let envelope: Offset = 0;
  if (header.envelope) {
    builder.startVector(8, 4, 8);
    for (let i = 3; i >= 0; i--) builder.addFloat64(header.envelope[i]!);
    envelope = builder.endVector();
  }
  builder.startObject(14); // table Header
  builder.addFieldOffset(0, name, 0);
  if (envelope) builder.addFieldOffset(1, envelope, 0);
  builder.addFieldInt8(2, POINT, 0);
  builder.addFieldOffset(7, columnsVector, 0);
  builder.addFieldInt64(8, BigInt(header.features), 0n);
  builder.addFieldInt16(9, header.indexNodeSize, 16);
  builder.addFieldOffset(10, crs, 0);
  builder.finishSizePrefixed(builder.endObject());
  return builder.asUint8Array();
}

/**
 * table Feature, size-prefixed: a point (or no geometry) and its properties
 * (already laid out as (column index u16, value) pairs).
 */
export function buildPointFeature(
  builder: Builder,
  x: number | null,
  y: number | null,
  properties: Uint8Array,
): Uint8Array {
  const values = properties.length > 0 ? builder.createByteVector(properties) : 0;
  let geometry: Offset = 0;
  if (x !== null && y !== null) {
    builder.startVector(8, 2, 8);
    builder.addFloat64(y);
    builder.addFloat64(x);
    const xy = builder.endVector();
    builder.startObject(8); // table Geometry
    builder.addFieldOffset(1, xy, 0);
    geometry = builder.endObject();
  }
  builder.startObject(3); // table Feature
  if (geometry) builder.addFieldOffset(0, geometry, 0);
  if (values) builder.addFieldOffset(1, values, 0);
  builder.finishSizePrefixed(builder.endObject());
  return builder.asUint8Array();
}

/** Bytes of a packed R-tree node: minX, minY, maxX, maxY (f64) and an offset (u64). */
const NODE_BYTES = 40;

/** The node index ranges [start, end) of each level of a packed R-tree, leaves first. */
function treeLevels(items: number, nodeSize: number): [number, number][] {
  const counts = [items];
  let n = items;
  do {
    n = Math.ceil(n / nodeSize);
    counts.push(n);
  } while (n !== 1);
  const total = counts.reduce((a, b) => a + b, 0);
  let end = total;
  return counts.map((count) => {
    const level: [number, number] = [end - count, end];
    end -= count;
    return level;
  });
}

/** The size in bytes of the packed R-tree over `items` features. */
export function treeBytes(items: number, nodeSize: number): number {
  return treeLevels(items, nodeSize)[0]![1] * NODE_BYTES; // the leaves end the tree
}

/** Leaves of the tree handed out at a time. */
const LEAF_CHUNK = 16_384;

/** Sets the u64 offset of `node` among `words` (little-endian). */
function setOffset(words: Uint32Array, node: number, value: number): void {
  words[node * 10 + 8] = value % 2 ** 32;
  words[node * 10 + 9] = Math.floor(value / 2 ** 32);
}

/**
 * The packed R-tree over the features, root first, in parts (the levels
 * above the leaves, then the leaves a chunk at a time): each node's box and,
 * for a leaf, its feature's byte offset after the index, `offsetOf(i)` (asked
 * for each feature in order); above, the index of its first child. A
 * feature without a position has an empty box, which no search meets and
 * which leaves its parents' boxes as they are.
 */
export function* packedTree(
  xs: Float64Array,
  ys: Float64Array,
  offsetOf: (feature: number) => number,
  nodeSize: number,
): Generator<Uint8Array> {
  const count = xs.length;
  const levels = treeLevels(count, nodeSize);
  const [leafStart] = levels[0]!;
  const upper = new Uint8Array(leafStart * NODE_BYTES);
  const box = new Float64Array(upper.buffer);
  const words = new Uint32Array(upper.buffer);
  const item = NODE_BYTES / 8; // doubles per node: minX, minY, maxX, maxY, offset
  for (let level = 1; level < levels.length; level++) {
    const [start, end] = levels[level]!;
    const [childStart, childEnd] = levels[level - 1]!;
    for (let node = start; node < end; node++) {
      const first = childStart + (node - start) * nodeSize;
      const last = Math.min(first + nodeSize, childEnd);
      let minX = Infinity;
      let minY = Infinity;
      let maxX = -Infinity;
      let maxY = -Infinity;
      if (level === 1) {
        for (let i = first - leafStart; i < last - leafStart; i++) {
          const x = xs[i]!;
          if (Number.isNaN(x)) continue;
          minX = Math.min(minX, x);
          minY = Math.min(minY, ys[i]!);
          maxX = Math.max(maxX, x);
          maxY = Math.max(maxY, ys[i]!);
        }
      } else {
        for (let child = first; child < last; child++) {
          const at = child * item;
          minX = Math.min(minX, box[at]!);
          minY = Math.min(minY, box[at + 1]!);
          maxX = Math.max(maxX, box[at + 2]!);
          maxY = Math.max(maxY, box[at + 3]!);
        }
      }
      const at = node * item;
      box[at] = minX;
      box[at + 1] = minY;
      box[at + 2] = maxX;
      box[at + 3] = maxY;
      setOffset(words, node, first);
    }
  }
  yield upper;
  for (let from = 0; from < count; from += LEAF_CHUNK) {
    const n = Math.min(LEAF_CHUNK, count - from);
    const bytes = new Uint8Array(n * NODE_BYTES);
    const leaves = new Float64Array(bytes.buffer);
    const leafWords = new Uint32Array(bytes.buffer);
    for (let k = 0; k < n; k++) {
      const x = xs[from + k]!;
      const y = ys[from + k]!;
      const located = !Number.isNaN(x);
      leaves[k * item] = located ? x : Infinity;
      leaves[k * item + 1] = located ? y : Infinity;
      leaves[k * item + 2] = located ? x : -Infinity;
      leaves[k * item + 3] = located ? y : -Infinity;
      setOffset(leafWords, k, offsetOf(from + k));
    }
    yield bytes;
  }
}
