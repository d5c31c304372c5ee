/**
 * A FlatGeobuf extract of points (https://flatgeobuf.org): the spatially
 * indexed file that QGIS, GDAL, geopandas (pyogrio) and OpenLayers open, a
 * fraction of the GeoJSON's size, read by bounding box over HTTP ranges.
 *
 * The file is the header (columns typed, WGS 84, extent), a packed Hilbert
 * R-tree and the features in the tree's order. DuckDB sorts the rows by their
 * Hilbert value (./hilbert.ts) and streams them; each feature is encoded in
 * FlatGeobuf's FlatBuffers schema (./flatgeobuf-format.ts) and written at its
 * place after the room left for the tree, which is built from the points and
 * the features' offsets once they are all written, and written into that room.
 * (The `flatgeobuf` package writes a whole collection held in memory, without
 * an index, and installs OpenLayers beside it.)
 * Memory is about 64 bytes a feature (the tree and the positions it is built
 * from), whatever the number of columns.
 */
import { open } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { DuckDBBlobVector, type DuckDBVector } from '@duckdb/node-api';
import { Builder } from 'flatbuffers';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import { PositionedWriter } from '../util/positioned-writer.js';
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
  buildHeader,
  buildPointFeature,
  packedTree,
  treeBytes,
} from './flatgeobuf-format.js';
import { withHilbert } from './hilbert.js';

/** Children per node of the R-tree: FlatGeobuf's default. */
const NODE_SIZE = 16;

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

/** The rows as the writer reads them, and what the header says of them. */
interface Points {
  properties: Property[];
  /** h_lon, h_lat (NULL without a valid position), p0.. (the properties), in Hilbert order. */
  ordered: string;
  count: number;
  located: number;
  envelope: [number, number, number, number] | undefined;
}

async function pointsOf(
  db: Database,
  source: ExportSource,
  geometry: GeometryColumns,
): Promise<Points> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties = kept.map(propertyOf);
  const points =
    `SELECT CASE WHEN ${valid} THEN ${lon} END AS h_lon, CASE WHEN ${valid} THEN ${lat} END AS h_lat` +
    properties.map((p, i) => `, ${p.sql} AS p${i}`).join('') +
    ` FROM ${source.sql}`;
  const [stats] = await db.all(
    `SELECT count(*)::DOUBLE AS n, count(h_lon)::DOUBLE AS located, min(h_lon) AS w, min(h_lat) AS s, ` +
      `max(h_lon) AS e, max(h_lat) AS n_ FROM (${points})`,
    source.params,
  );
  const located = Number(stats!['located']);
  const envelope =
    located > 0
      ? ([stats!['w'], stats!['s'], stats!['e'], stats!['n_']].map(Number) as Points['envelope'])
      : undefined;
  const [minX, minY, maxX, maxY] = envelope ?? [0, 0, 0, 0];
  const extent = { minX, minY, width: maxX - minX, height: maxY - minY };
  const ordered = `${withHilbert(points, 'h_lon', 'h_lat', extent)} ORDER BY h_lon IS NULL, hilbert`;
  return { properties, ordered, count: Number(stats!['n']), located, envelope };
}

/**
 * Streams the ordered rows into features from `out`'s position on; resolves to
 * each feature's position and its byte offset from the first.
 */
async function writeFeatures(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  out: PositionedWriter,
): Promise<{ xs: Float64Array; ys: Float64Array; offsets: Float64Array }> {
  const { count, properties } = points;
  const xs = new Float64Array(count);
  const ys = new Float64Array(count);
  const offsets = new Float64Array(count);
  const encoder = new FeatureEncoder(properties);
  const first = out.at;
  let rows = 0;
  const result = await db.connection.stream(points.ordered, params);
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    if (rows + chunk.rowCount > count) throw new Error('the source gave more rows than it counted');
    const lon = chunk.getColumnVector(0);
    const lat = chunk.getColumnVector(1);
    const columns = properties.map((_, i): Vectors => {
      const vector = chunk!.getColumnVector(2 + i);
      return { vector, blob: vector instanceof DuckDBBlobVector ? vector : undefined };
    });
    for (let row = 0; row < chunk.rowCount; row++, rows++) {
      const x = lon.getItem(row) as number | null;
      const y = lat.getItem(row) as number | null;
      xs[rows] = x ?? NaN;
      ys[rows] = y ?? NaN;
      offsets[rows] = out.at - first;
      await out.write(encoder.encode(x, y, columns, row));
    }
  }
  await out.flush();
  if (rows !== count) throw new Error(`the source gave ${rows} rows where it counted ${count}`);
  return { xs, ys, offsets };
}

export async function exportFlatGeobuf(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  geometry: GeometryColumns,
): Promise<ExportResult> {
  const points = await pointsOf(db, source, geometry);
  const { count } = points;
  return writeThrough(path, scratch, async (temporary) => {
    const file = await open(temporary, 'wx');
    try {
      const header = buildHeader(new Builder(1024), {
        name: basename(path, extname(path)),
        columns: points.properties,
        features: count,
        envelope: points.envelope,
        indexNodeSize: count > 0 ? NODE_SIZE : 0,
        crs: { code: 4326, name: 'WGS 84' },
      });
      // Magic bytes, header, the room for the tree (written last), the features.
      const treeAt = MAGIC.length + header.length;
      const tree = count > 0 ? treeBytes(count, NODE_SIZE) : 0;
      await file.write(MAGIC, 0, MAGIC.length, 0);
      await file.write(header, 0, header.length, MAGIC.length);
      const { xs, ys, offsets } = await writeFeatures(
        db,
        points,
        source.params,
        new PositionedWriter(file, treeAt + tree),
      );
      if (count > 0) {
        const index = packedTree(xs, ys, offsets, NODE_SIZE);
        await file.write(index, 0, index.length, treeAt);
      }
      await file.sync();
      return { rows: count, withoutGeometry: count - points.located };
    } finally {
      await file.close();
    }
  });
}
