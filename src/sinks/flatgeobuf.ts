/**
 * A FlatGeobuf extract of points (https://flatgeobuf.org): the spatially
 * indexed file that QGIS, GDAL, geopandas (pyogrio) and OpenLayers open, a
 * fraction of the GeoJSON's size, read by bounding box over HTTP ranges.
 *
 * The file is the header (columns typed, WGS 84, extent), a packed Hilbert
 * R-tree and the features in the tree's order. DuckDB streams the rows with
 * their Hilbert value (./hilbert.ts), in any order; each feature is encoded in
 * FlatGeobuf's FlatBuffers schema (./flatgeobuf-format.ts) at once and put in
 * a scratch file by its range of Hilbert values; each range is then ordered
 * and copied after the room left for the tree, which is built from the
 * points and the features' offsets once they are all written, and written
 * into that room. (The `flatgeobuf` package writes a whole collection held in
 * memory, without an index, and installs OpenLayers beside it.)
 * Memory is about 90 bytes a feature (its sort key and place, the tree and the
 * positions it is built from) and one range of features (at least 16,384, a
 * 256th of them when there are more), whatever the number of columns.
 * Features of one Hilbert value come in the order of their bytes, so that the
 * same rows give the same file.
 */
import { open } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Builder } from 'flatbuffers';
import type { Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import { PositionedWriter } from '../util/positioned-writer.js';
import { pointColumns, type ExportSource, type GeometryColumns } from './columns.js';
import type { ExportResult } from './exports.js';
import { MAGIC, buildHeader, packedTree, treeBytes } from './flatgeobuf-format.js';
import { chunkColumnsSql, eachFeature, propertyOf, type Points } from './flatgeobuf-features.js';
import { withHilbert } from '../duckdb/hilbert.js';
import { KeyOrder, type Placed } from './key-order.js';

/** Children per node of the R-tree: FlatGeobuf's default. */
export const NODE_SIZE = 16;

/**
 * Features per bucket of the Hilbert order (writeFeatures): at least this
 * many, and no more than 256 buckets. At national scale (2.9M signs) a bucket
 * is about 7 MB of encoded features, the most the writer holds at once.
 */
const BUCKET_FEATURES = 16_384;
const MOST_BUCKETS = 256;

/** The sort key of a feature without a position: after every Hilbert value (32 bits). */
const UNLOCATED = 2 ** 32;

export async function pointsOf(
  db: Database,
  source: ExportSource,
  geometry: GeometryColumns,
): Promise<Points> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties = kept.map(propertyOf);
  const position = `SELECT CASE WHEN ${valid} THEN ${lon} END AS h_lon, CASE WHEN ${valid} THEN ${lat} END AS h_lat`;
  const [stats] = await db.all(
    `SELECT count(*)::DOUBLE AS n, count(h_lon)::DOUBLE AS located, min(h_lon) AS w, min(h_lat) AS s, ` +
      `max(h_lon) AS e, max(h_lat) AS n_ FROM (${position} FROM ${source.sql})`,
    source.params,
  );
  const count = Number(stats!['n']);
  const located = Number(stats!['located']);
  const envelope =
    located > 0
      ? ([stats!['w'], stats!['s'], stats!['e'], stats!['n_']].map(Number) as Points['envelope'])
      : undefined;
  const [minX, minY, maxX, maxY] = envelope ?? [0, 0, 0, 0];
  const extent = { minX, minY, width: maxX - minX, height: maxY - minY };
  const keyed = (from: string): string =>
    `SELECT * EXCLUDE (hilbert), CASE WHEN h_lon IS NULL THEN ${UNLOCATED} ELSE hilbert END::DOUBLE AS h_key ` +
    `FROM (${withHilbert(from, 'h_lon', 'h_lat', extent)})`;
  const positioned = `SELECT coalesce(h_lon, 'NaN'::DOUBLE) AS h_lon, coalesce(h_lat, 'NaN'::DOUBLE) AS h_lat`;
  const buckets = Math.min(Math.ceil(count / BUCKET_FEATURES), MOST_BUCKETS);
  const bounds = async (): Promise<number[]> => {
    if (buckets <= 1) return [];
    const quantiles = Array.from({ length: buckets - 1 }, (_, i) => (i + 1) / buckets);
    const [row] = await db.all(
      `SELECT quantile_disc(h_key, [${quantiles.join(', ')}]) AS bounds FROM (${keyed(`${position} FROM ${source.sql}`)})`,
      source.params,
    );
    return [...new Set((row?.['bounds'] as number[] | null) ?? [])].map(Number);
  };
  return {
    properties,
    sql:
      `${positioned}, * EXCLUDE (h_lon, h_lat, h_key), h_key FROM ` +
      `(${keyed(chunkColumnsSql(properties, position, source.sql))})`,
    count,
    located,
    envelope,
    bounds,
  };
}

/**
 * The features in FlatGeobuf's order, written from `out`'s position on.
 * DuckDB streams the rows in any order with their Hilbert value; each row is
 * encoded at once and handed to a KeyOrder (./key-order.ts), which puts them
 * in Hilbert order through scratch files: no sort of wide rows in DuckDB
 * (which went to disk under a small budget). Resolves to each feature's
 * position and its byte offset from the first.
 */
async function writeFeatures(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  out: PositionedWriter,
  temporary: string,
): Promise<Placed> {
  const order = await KeyOrder.open(temporary, points.count, await points.bounds());
  try {
    await eachFeature(db, points, params, (key, x, y, feature) => order.add(key, x, y, feature));
    return await order.drain(out);
  } finally {
    await order.close();
  }
}

/** The magic bytes and header of a file of `points`, and the bytes of its tree. */
export function headOf(points: Points, path: string): { head: Uint8Array; tree: number } {
  const { count } = points;
  const header = buildHeader(new Builder(1024), {
    name: basename(path, extname(path)),
    columns: points.properties,
    features: count,
    envelope: points.envelope,
    indexNodeSize: count > 0 ? NODE_SIZE : 0,
    crs: { code: 4326, name: 'WGS 84' },
  });
  const head = new Uint8Array(MAGIC.length + header.length);
  head.set(MAGIC, 0);
  head.set(header, MAGIC.length);
  return { head, tree: count > 0 ? treeBytes(count, NODE_SIZE) : 0 };
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
      // Magic bytes and header, the room for the tree (written last), the features.
      const { head, tree } = headOf(points, path);
      await file.write(head, 0, head.length, 0);
      const out = new PositionedWriter(file, head.length + tree);
      const placed = await writeFeatures(db, points, source.params, out, temporary);
      if (count > 0) {
        let at = head.length;
        const { offsets } = placed;
        for (const part of packedTree(placed.xs, placed.ys, (i) => offsets[i]!, NODE_SIZE)) {
          await file.write(part, 0, part.length, at);
          at += part.length;
        }
      }
      await file.sync();
      return { rows: count, withoutGeometry: count - points.located };
    } finally {
      await file.close();
    }
  });
}
