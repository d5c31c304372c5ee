/**
 * A FlatGeobuf extract of points (https://flatgeobuf.org): the spatially
 * indexed file that QGIS, GDAL, geopandas (pyogrio) and OpenLayers open, a
 * fraction of the GeoJSON's size, read by bounding box over HTTP ranges.
 *
 * The file is the header (columns typed, WGS 84, extent), a packed Hilbert
 * R-tree and the features in the tree's order. DuckDB sorts the rows by their
 * Hilbert value (./hilbert.ts) and streams them; each feature is encoded in
 * FlatGeobuf's FlatBuffers schema (./flatgeobuf-schema.ts) and written at its
 * place after the room left for the tree, which is built from the points and
 * the features' offsets once they are all written, and written into that room.
 * (The `flatgeobuf` package writes a whole collection held in memory, without
 * an index, and installs OpenLayers beside it.)
 * Memory is about 64 bytes a feature (the tree and the positions it is built
 * from), whatever the number of columns.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { DuckDBBlobVector, type DuckDBVector } from '@duckdb/node-api';
import { Builder } from 'flatbuffers';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import {
  isNested,
  isTimestamp,
  isoTimestamp,
  pointColumns,
  type Column,
  type ExportSource,
  type GeometryColumns,
} from './columns.js';
import type { ExportResult } from './exports.js';
import {
  ColumnType,
  MAGIC,
  NODE_BYTES,
  buildHeader,
  buildPointFeature,
  treeLevels,
} from './flatgeobuf-schema.js';
import { withHilbert } from './hilbert.js';

/** Children per node of the R-tree: FlatGeobuf's default. */
const NODE_SIZE = 16;
const WRITE_BUFFER = 4 * 1024 * 1024;

interface Property {
  name: string;
  type: ColumnType;
  /** The SQL giving the value as the encoder takes it: a number, a BIGINT, a boolean, or text as UTF-8 bytes (BLOB). */
  sql: string;
}

/** A column's FlatGeobuf type, and the SQL that gives its value in the form written. */
function propertyOf(column: Column): Property {
  const ref = quotedIdentifier(column.name);
  const as = (type: ColumnType, sql = ref): Property => ({ name: column.name, type, sql });
  // Text of any kind as its UTF-8 bytes, which the encoder copies as they are.
  const text = (type: ColumnType, sql = ref): Property => as(type, `encode((${sql})::VARCHAR)`);
  const t = column.type;
  if (t === 'BOOLEAN') return as(ColumnType.Bool);
  if (['TINYINT', 'SMALLINT', 'INTEGER', 'UTINYINT', 'USMALLINT'].includes(t))
    return as(ColumnType.Int, `${ref}::INTEGER`);
  if (t === 'BIGINT' || t === 'UINTEGER') return as(ColumnType.Long, `${ref}::BIGINT`);
  if (t === 'FLOAT' || t === 'DOUBLE' || t.startsWith('DECIMAL'))
    return as(ColumnType.Double, `${ref}::DOUBLE`);
  if (isTimestamp(t)) return text(ColumnType.DateTime, isoTimestamp(column));
  if (t === 'DATE') return text(ColumnType.DateTime, `strftime(${ref}, '%Y-%m-%d')`);
  if (isNested(t) || t === 'JSON') return text(ColumnType.Json, `to_json(${ref})`);
  return text(ColumnType.String); // VARCHAR, ENUM; HUGEINT, UUID, TIME, INTERVAL... as DuckDB writes them
}

/** A column of a chunk of rows; text (as UTF-8 bytes) in a BLOB vector. */
interface Vectors {
  vector: DuckDBVector;
  blob: DuckDBBlobVector | undefined;
}

/** Encodes features one after the other into one FlatBuffers builder, reused. */
class FeatureEncoder {
  readonly #builder = new Builder(4096);
  #bytes = new Uint8Array(64 * 1024);
  #view = new DataView(this.#bytes.buffer);
  readonly #types: ColumnType[];

  constructor(properties: Property[]) {
    this.#types = properties.map((p) => p.type);
  }

  #room(offset: number, size: number): void {
    if (offset + size <= this.#bytes.length) return;
    const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, offset + size));
    bigger.set(this.#bytes);
    this.#bytes = bigger;
    this.#view = new DataView(bigger.buffer);
  }

  /**
   * The properties of one row as FlatGeobuf lays them out: (column index u16,
   * value) for each value present. Text comes as DuckDB's UTF-8 bytes (a BLOB),
   * copied as they are: no JavaScript string is made of it.
   */
  #properties(columns: readonly Vectors[], row: number): number {
    let o = 0;
    for (let i = 0; i < this.#types.length; i++) {
      const type = this.#types[i];
      const { vector, blob } = columns[i]!;
      if (blob) {
        const bytes = blob.getItemBytes(row);
        if (bytes === null) continue;
        this.#room(o, 6 + bytes.length);
        this.#view.setUint16(o, i, true);
        this.#view.setUint32(o + 2, bytes.length, true);
        this.#bytes.set(bytes, o + 6);
        o += 6 + bytes.length;
        continue;
      }
      const value = vector.getItem(row);
      if (value === null) continue;
      this.#room(o, 2 + 8);
      this.#view.setUint16(o, i, true);
      o += 2;
      if (type === ColumnType.Bool) {
        this.#view.setUint8(o, value === true ? 1 : 0);
        o += 1;
      } else if (type === ColumnType.Int) {
        this.#view.setInt32(o, value as number, true);
        o += 4;
      } else if (type === ColumnType.Long) {
        this.#view.setBigInt64(o, value as bigint, true);
        o += 8;
      } else {
        this.#view.setFloat64(o, value as number, true);
        o += 8;
      }
    }
    return o;
  }

  /** One feature, size-prefixed; valid until the next call. */
  encode(x: number | null, y: number | null, columns: readonly Vectors[], row: number): Uint8Array {
    this.#builder.clear();
    const length = this.#properties(columns, row);
    return buildPointFeature(this.#builder, x, y, this.#bytes.subarray(0, length));
  }
}

/**
 * The packed R-tree over the features, root first: each node's box and, for a
 * leaf, its feature's byte offset after the index; above, the index of its
 * first child. A feature without a position has an empty box, which no search
 * meets and which leaves its parents' boxes as they are.
 */
function packedTree(xs: Float64Array, ys: Float64Array, offsets: Float64Array): Uint8Array {
  const count = xs.length;
  const levels = treeLevels(count, NODE_SIZE);
  const bytes = new Uint8Array(levels[0]![1] * NODE_BYTES); // the leaves end the tree
  const box = new Float64Array(bytes.buffer, 0, bytes.length / 8);
  const words = new Uint32Array(bytes.buffer);
  const item = NODE_BYTES / 8; // doubles per node: minX, minY, maxX, maxY, offset
  const setOffset = (node: number, value: number): void => {
    words[node * item * 2 + 8] = value % 2 ** 32; // little-endian u64
    words[node * item * 2 + 9] = Math.floor(value / 2 ** 32);
  };
  const [leafStart] = levels[0]!;
  for (let i = 0; i < count; i++) {
    const at = (leafStart + i) * item;
    const x = xs[i]!;
    const y = ys[i]!;
    const located = !Number.isNaN(x);
    box[at] = located ? x : Infinity;
    box[at + 1] = located ? y : Infinity;
    box[at + 2] = located ? x : -Infinity;
    box[at + 3] = located ? y : -Infinity;
    setOffset(leafStart + i, offsets[i]!);
  }
  for (let level = 1; level < levels.length; level++) {
    const [start, end] = levels[level]!;
    const [childStart, childEnd] = levels[level - 1]!;
    for (let node = start; node < end; node++) {
      const first = childStart + (node - start) * NODE_SIZE;
      const last = Math.min(first + NODE_SIZE, childEnd);
      let minX = Infinity;
      let minY = Infinity;
      let maxX = -Infinity;
      let maxY = -Infinity;
      for (let child = first; child < last; child++) {
        const at = child * item;
        minX = Math.min(minX, box[at]!);
        minY = Math.min(minY, box[at + 1]!);
        maxX = Math.max(maxX, box[at + 2]!);
        maxY = Math.max(maxY, box[at + 3]!);
      }
      const at = node * item;
      box[at] = minX;
      box[at + 1] = minY;
      box[at + 2] = maxX;
      box[at + 3] = maxY;
      setOffset(node, first);
    }
  }
  return bytes;
}

/** Writes bytes at increasing positions of a file through one buffer. */
class PositionedWriter {
  readonly #buffer = new Uint8Array(WRITE_BUFFER);
  #used = 0;
  constructor(
    private readonly file: FileHandle,
    public position: number,
  ) {}

  /** Where the next byte written goes. */
  get at(): number {
    return this.position + this.#used;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (this.#used + bytes.length > this.#buffer.length) await this.flush();
    if (bytes.length > this.#buffer.length) {
      await this.file.write(bytes, 0, bytes.length, this.position);
      this.position += bytes.length;
      return;
    }
    this.#buffer.set(bytes, this.#used);
    this.#used += bytes.length;
  }

  async flush(): Promise<void> {
    if (this.#used === 0) return;
    await this.file.write(this.#buffer, 0, this.#used, this.position);
    this.position += this.#used;
    this.#used = 0;
  }
}

export async function exportFlatGeobuf(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  geometry: GeometryColumns,
): Promise<ExportResult> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties = kept.map(propertyOf);
  const points =
    `SELECT CASE WHEN ${valid} THEN ${lon} END AS h_lon, CASE WHEN ${valid} THEN ${lat} END AS h_lat` +
    properties.map((p, i) => `, ${p.sql} AS p${i}`).join('') +
    ` FROM ${source.sql}`;
  const [stats] = await db.all(
    `SELECT count(*)::DOUBLE AS n, count(h_lon)::DOUBLE AS located, min(h_lon) AS min_x, min(h_lat) AS min_y, ` +
      `max(h_lon) AS max_x, max(h_lat) AS max_y FROM (${points})`,
    source.params,
  );
  const count = Number(stats!['n']);
  const located = Number(stats!['located']);
  const envelope: [number, number, number, number] | undefined =
    located > 0
      ? ([stats!['min_x'], stats!['min_y'], stats!['max_x'], stats!['max_y']].map(Number) as [
          number,
          number,
          number,
          number,
        ])
      : undefined;
  const [minX, minY, maxX, maxY] = envelope ?? [0, 0, 0, 0];
  const ordered =
    withHilbert(points, 'h_lon', 'h_lat', { minX, minY, width: maxX - minX, height: maxY - minY }) +
    ` ORDER BY h_lon IS NULL, hilbert`;

  return writeThrough(path, scratch, async (temporary) => {
    const file = await open(temporary, 'wx');
    try {
      const header = buildHeader(new Builder(1024), {
        name: basename(path, extname(path)),
        columns: properties,
        features: count,
        envelope,
        indexNodeSize: count > 0 ? NODE_SIZE : 0,
        crs: { code: 4326, name: 'WGS 84' },
      });
      const treeAt = MAGIC.length + header.length;
      const featuresAt =
        treeAt + (count > 0 ? treeLevels(count, NODE_SIZE)[0]![1] * NODE_BYTES : 0);
      await file.write(MAGIC, 0, MAGIC.length, 0);
      await file.write(header, 0, header.length, MAGIC.length);
      const xs = new Float64Array(count);
      const ys = new Float64Array(count);
      const offsets = new Float64Array(count);
      const encoder = new FeatureEncoder(properties);
      const out = new PositionedWriter(file, featuresAt);
      let rows = 0;
      const result = await db.connection.stream(ordered, source.params);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        if (rows + chunk.rowCount > count)
          throw new Error('the source gave more rows than it counted');
        const lon = chunk.getColumnVector(0);
        const lat = chunk.getColumnVector(1);
        const columns = properties.map((_, i): Vectors => {
          const vector = chunk.getColumnVector(2 + i);
          return { vector, blob: vector instanceof DuckDBBlobVector ? vector : undefined };
        });
        for (let row = 0; row < chunk.rowCount; row++) {
          const x = lon.getItem(row) as number | null;
          const y = lat.getItem(row) as number | null;
          xs[rows] = x ?? NaN;
          ys[rows] = y ?? NaN;
          offsets[rows] = out.at - featuresAt;
          await out.write(encoder.encode(x, y, columns, row));
          rows++;
        }
      }
      await out.flush();
      if (rows !== count) throw new Error(`the source gave ${rows} rows where it counted ${count}`);
      if (count > 0) {
        const tree = packedTree(xs, ys, offsets);
        await file.write(tree, 0, tree.length, treeAt);
      }
      await file.sync();
      return { rows, withoutGeometry: count - located };
    } finally {
      await file.close();
    }
  });
}
