/**
 * Positions as geometries. DuckDB's built-in GEOMETRY type (no extension)
 * writes GeoParquet by itself: a column of that type is stored as WKB and
 * named in the file's `geo` metadata (primary column, geometry types, bbox),
 * which GDAL, QGIS, geopandas and polars read. Without a `crs` there, the
 * coordinates are OGC:CRS84, longitude then latitude: WGS 84 as GeoJSON has it.
 */

/** The name every dataset with a position gives its geometry column. */
export const GEOMETRY_COLUMN = 'geometry';

/**
 * A WGS 84 Point from two DOUBLE expressions (NULL when either is missing or
 * not finite). DuckDB writes a DOUBLE as the shortest text that reads back as
 * the same number, so the point holds exactly the coordinates given.
 */
export function pointSql(longitude: string, latitude: string): string {
  return `CASE WHEN isfinite(${longitude}) AND isfinite(${latitude})
    THEN CAST('POINT (' || CAST(${longitude} AS VARCHAR) || ' ' || CAST(${latitude} AS VARCHAR) || ')' AS GEOMETRY) END`;
}
