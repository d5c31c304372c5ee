/**
 * Coordinate reference systems of the polygons users bring: WGS 84 (GeoJSON's
 * own) and RD New (EPSG:28992, what Dutch GIS software exports), recognised
 * from the `crs` member that ogr2ogr and QGIS write, and converted to WGS 84
 * with proj4 (the Bessel datum shift included: about a metre from RDNAPTRANS).
 */
import proj4 from 'proj4';
import type { Position } from './geo.js';

export type Crs = 'WGS84' | 'RD';

const RD_NEW =
  '+proj=sterea +lat_0=52.1561605555556 +lon_0=5.38763888888889 +k=0.9999079 +x_0=155000 +y_0=463000 ' +
  '+ellps=bessel +towgs84=565.417,50.3319,465.552,-0.398957,0.343988,-1.8774,4.0725 +units=m +no_defs';

const toWgs84 = proj4(RD_NEW, 'WGS84');

/** The names of a `crs` member (GeoJSON 2008 style) that mean each system. */
const NAMES: Record<string, Crs> = {
  'urn:ogc:def:crs:epsg::28992': 'RD',
  'epsg:28992': 'RD',
  'urn:ogc:def:crs:ogc:1.3:crs84': 'WGS84',
  'urn:ogc:def:crs:epsg::4326': 'WGS84',
  'epsg:4326': 'WGS84',
  'ogc:crs84': 'WGS84',
};

/**
 * The system a `crs` member names: undefined when there is no member, an
 * error message when it names one road-etl does not know.
 */
export function crsOf(member: unknown): Crs | { problem: string } | undefined {
  if (member === undefined || member === null) return undefined;
  const name =
    typeof member === 'object' && !Array.isArray(member)
      ? (member as { properties?: { name?: unknown } }).properties?.name
      : undefined;
  if (typeof name !== 'string')
    return { problem: 'crs: expected {"type": "name", "properties": {"name": "..."}}' };
  const crs = NAMES[name.trim().toLowerCase()];
  return (
    crs ?? {
      problem: `crs: ${JSON.stringify(name)} is not supported: give WGS 84 (GeoJSON's own, no crs) or RD New (urn:ogc:def:crs:EPSG::28992)`,
    }
  );
}

/** An RD New position (x, y in metres) as WGS 84 longitude and latitude. */
export function rdToWgs84(position: Position): Position {
  const [longitude, latitude] = toWgs84.forward([position[0], position[1]]);
  return [longitude!, latitude!];
}
