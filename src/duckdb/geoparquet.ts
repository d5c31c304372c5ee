/**
 * GeoParquet 1.1 for every dataset with a position. DuckDB's built-in
 * GEOMETRY type writes GeoParquet 1.0 by itself; road-etl writes the geometry
 * as WKB with metadata of its own instead, so that each file also has:
 *
 * - a `bbox` covering column (STRUCT of xmin, ymin, xmax, ymax: for a point,
 *   its longitude and latitude twice), named in the metadata's `covering`, so
 *   that geopandas (`read_parquet(bbox=...)`), GDAL and DuckDB filter a box on
 *   plain DOUBLE columns and their row-group statistics;
 * - its rows in the order of a Hilbert curve over the Netherlands, so that
 *   the row groups of a file each hold one neighbourhood and a box filter skips
 *   the others.
 *
 * The geometry is exactly the point of the row's longitude and latitude
 * (pointSql), so the box is written from those two columns, no geometry
 * function needed. DuckDB reads the column back as GEOMETRY from this metadata.
 */
import { quotedIdentifier } from './database.js';
import { GEOMETRY_COLUMN } from './geometry.js';
import { withHilbert } from './hilbert.js';

/** The name of the covering column. */
export const BBOX_COLUMN = 'bbox';
/** Its type (a point's box: its position twice). */
export const BBOX_TYPE = 'STRUCT(xmin DOUBLE, ymin DOUBLE, xmax DOUBLE, ymax DOUBLE)';

/** The GeoParquet version road-etl writes. */
export const GEOPARQUET_VERSION = '1.1.0';

/** The columns a point's geometry is made of, by dataset: the first pair a source has. */
const POSITIONS: readonly (readonly [string, string])[] = [
  ['longitude', 'latitude'],
  ['location_wgs84_longitude', 'location_wgs84_latitude'],
];

/** The extent of the Hilbert curve: the Netherlands and a margin (points outside lie on its edge). */
export const HILBERT_EXTENT = { minX: 2.5, minY: 50.0, width: 5.5, height: 4.5 };

export interface PointColumns {
  geometry: string;
  longitude: string;
  latitude: string;
}

/** The geometry and position columns of a source with a point geometry, if it has them. */
export function pointColumns(
  columns: readonly { name: string; type: string }[],
): (PointColumns & { box: boolean }) | undefined {
  const names = new Set(columns.map((c) => c.name));
  const geometry = columns.find((c) => c.name === GEOMETRY_COLUMN && c.type.startsWith('GEOMETRY'));
  if (!geometry) return undefined;
  const pair = POSITIONS.find(([lon, lat]) => names.has(lon) && names.has(lat));
  return pair
    ? {
        geometry: geometry.name,
        longitude: pair[0],
        latitude: pair[1],
        box: names.has(BBOX_COLUMN),
      }
    : undefined;
}

/**
 * The rows of `source` (a parenthesised query) as GeoParquet 1.1 has them: the
 * geometry as WKB, the covering box beside it (last), in Hilbert order unless
 * `ordered` is false.
 */
export function geoParquetRows(
  source: string,
  columns: PointColumns & { box: boolean },
  ordered: boolean,
): string {
  const geometry = quotedIdentifier(columns.geometry);
  const lon = quotedIdentifier(columns.longitude);
  const lat = quotedIdentifier(columns.latitude);
  const bbox = quotedIdentifier(BBOX_COLUMN);
  const box = `CASE WHEN ${geometry} IS NOT NULL THEN {'xmin': ${lon}, 'ymin': ${lat}, 'xmax': ${lon}, 'ymax': ${lat}} END`;
  // A box written before (a file read again) is made anew.
  const rows = `SELECT * ${columns.box ? `EXCLUDE (${bbox}) ` : ''}REPLACE (ST_AsWKB(${geometry}) AS ${geometry}), ${box} AS ${bbox} FROM ${source}`;
  if (!ordered) return `(${rows})`;
  return `(SELECT * EXCLUDE (hilbert) FROM (${withHilbert(rows, lon, lat, HILBERT_EXTENT)}) ORDER BY hilbert)`;
}

/** The file metadata `geo` of GeoParquet 1.1 for a point geometry with its covering box. */
export function geoMetadata(geometry: string): string {
  return JSON.stringify({
    version: GEOPARQUET_VERSION,
    primary_column: geometry,
    columns: {
      [geometry]: {
        encoding: 'WKB',
        geometry_types: ['Point'],
        covering: {
          bbox: {
            xmin: [BBOX_COLUMN, 'xmin'],
            ymin: [BBOX_COLUMN, 'ymin'],
            xmax: [BBOX_COLUMN, 'xmax'],
            ymax: [BBOX_COLUMN, 'ymax'],
          },
        },
      },
    },
  });
}
