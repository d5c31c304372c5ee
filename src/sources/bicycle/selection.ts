/**
 * Which locations a measurement run is about: listed ids, id prefixes, or the
 * locations inside a GeoJSON polygon, resolved against the catalog here (point
 * in polygon), so that the work can be cut into id batches.
 */
import { readFile } from 'node:fs/promises';
import { crsOf, rdToWgs84, type Crs } from '../../util/crs.js';
import { checkGeoJsonPolygon, pointInPolygon, type Position } from '../../util/geo.js';
import type { Selection } from './client.js';

export const MIN_PREFIX_LENGTH = 3;

export type SelectionSpec =
  | { mode: 'locations'; ids: string[] }
  | { mode: 'prefixes'; prefixes: string[] }
  | {
      mode: 'polygon';
      file: string;
      /** The area: one or more polygons (their union), each outer ring then holes, in WGS 84. */
      polygons: Position[][][];
      /** The system the file's coordinates were in (converted to WGS 84 here). */
      crs: Crs;
    };

export interface Polygon {
  type: 'Polygon';
  coordinates: Position[][];
}

export interface CatalogLocation {
  id: string;
  longitude: number | null;
  latitude: number | null;
}

type PolygonArea = { polygons: Position[][][]; crs: Crs };

const record = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;

/** The polygons of one geometry (a Polygon or a MultiPolygon), with the problems found. */
function polygonsOfGeometry(
  value: unknown,
  where: string,
  problems: string[],
): Position[][][] | undefined {
  const geometry = record(value);
  const at = (path: string) => [where, path].filter(Boolean).join('.');
  const report = (list: { path: string; message: string }[], prefix: string) => {
    for (const p of list) {
      const path = at([prefix, p.path].filter(Boolean).join(''));
      problems.push(`${path ? `${path}: ` : ''}${p.message}`);
    }
  };
  if (geometry?.['type'] === 'MultiPolygon') {
    const members = geometry['coordinates'];
    if (!Array.isArray(members) || members.length === 0) {
      problems.push(`${at('coordinates')}: a MultiPolygon needs a non-empty array of polygons`);
      return undefined;
    }
    const before = problems.length;
    members.forEach((coordinates: unknown, i) => {
      const found = checkGeoJsonPolygon({ type: 'Polygon', coordinates });
      report(
        found.map((p) => ({ ...p, path: p.path.replace(/^coordinates/, '') })),
        `coordinates[${i}]`,
      );
    });
    return problems.length === before ? (members as Position[][][]) : undefined;
  }
  if (geometry?.['type'] !== 'Polygon') {
    problems.push(
      `${at('type')}: must be "Polygon" or "MultiPolygon", got ${JSON.stringify(geometry?.['type'] ?? null)}`,
    );
    return undefined;
  }
  const found = checkGeoJsonPolygon(geometry);
  report(found, '');
  return found.length === 0 ? [(geometry as unknown as Polygon).coordinates] : undefined;
}

/** Whether every position can be a WGS 84 longitude and latitude. */
function looksLikeWgs84(polygons: Position[][][]): Position | true {
  for (const polygon of polygons)
    for (const ring of polygon)
      for (const [x, y] of ring) if (Math.abs(x) > 180 || Math.abs(y) > 90) return [x, y];
  return true;
}

/**
 * The area of a GeoJSON text: a Polygon or MultiPolygon, bare, as a Feature, or
 * as a FeatureCollection of such Features (their union). Coordinates are WGS 84
 * unless a `crs` member (on the collection, the feature or the geometry, as
 * ogr2ogr and QGIS write it) says RD New, in which case they are converted.
 * Problems come back as text.
 */
function polygonOf(text: string, file?: string): PolygonArea | { problems: string[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problems: [`${file ? `${file} is ` : ''}not JSON (${(error as Error).message})`] };
  }
  const problems: string[] = [];
  const crsMembers: unknown[] = [];
  const polygons: Position[][][] = [];
  const top = record(value);
  crsMembers.push(top?.['crs']);
  const addGeometry = (geometry: unknown, where: string) => {
    crsMembers.push(record(geometry)?.['crs']);
    polygons.push(...(polygonsOfGeometry(geometry, where, problems) ?? []));
  };
  const addFeature = (feature: unknown, where: string) => {
    const f = record(feature);
    if (f?.['type'] !== 'Feature') {
      problems.push(`${where}: must be a Feature, got ${JSON.stringify(f?.['type'] ?? null)}`);
      return;
    }
    crsMembers.push(f['crs']);
    addGeometry(f['geometry'], where ? `${where}.geometry` : 'geometry');
  };
  if (top?.['type'] === 'FeatureCollection') {
    const features = top['features'];
    if (!Array.isArray(features) || features.length === 0) {
      return { problems: ['a FeatureCollection must hold at least one Feature with a Polygon'] };
    }
    features.forEach((f: unknown, i) => addFeature(f, `features[${i}]`));
  } else if (top?.['type'] === 'Feature') {
    addFeature(top, '');
  } else {
    addGeometry(value, '');
  }
  if (problems.length > 0) return { problems };

  let crs: Crs | undefined;
  for (const member of crsMembers) {
    const found = crsOf(member);
    if (found === undefined) continue;
    if (typeof found === 'object') return { problems: [found.problem] };
    if (crs !== undefined && crs !== found)
      return { problems: ['crs: the file names two coordinate reference systems'] };
    crs = found;
  }
  if (crs === 'RD') {
    const converted = polygons.map((polygon) =>
      polygon.map((ring) => ring.map((position) => rdToWgs84(position))),
    );
    return { polygons: converted, crs };
  }
  const outside = looksLikeWgs84(polygons);
  if (outside !== true)
    return {
      problems: [
        `coordinates such as [${outside.join(', ')}] cannot be WGS 84 longitude and latitude; ` +
          'a polygon in RD New (EPSG:28992) needs its crs member, as ogr2ogr and QGIS write it: ' +
          '"crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::28992"}}',
      ],
    };
  return { polygons, crs: 'WGS84' };
}

/** Reads and checks a polygon file. */
export async function readPolygon(file: string): Promise<PolygonArea | { problems: string[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return {
      problems: [
        `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      ],
    };
  }
  return polygonOf(text, file);
}

/** The ids the selection names, sorted; for listed ids, only those the catalog knows. */
export function resolveSelection(
  spec: SelectionSpec,
  catalog: readonly CatalogLocation[],
): string[] {
  let ids: string[];
  switch (spec.mode) {
    case 'locations': {
      const known = new Set(catalog.map((l) => l.id));
      ids = spec.ids.filter((id) => known.has(id));
      break;
    }
    case 'prefixes':
      ids = catalog.filter((l) => spec.prefixes.some((p) => l.id.startsWith(p))).map((l) => l.id);
      break;
    case 'polygon':
      ids = catalog
        .filter(
          (l) =>
            l.longitude !== null &&
            l.latitude !== null &&
            spec.polygons.some((rings) => pointInPolygon([l.longitude!, l.latitude!], rings)),
        )
        .map((l) => l.id);
      break;
  }
  return [...new Set(ids)].sort();
}

/** The selection in words, for logs and plans. */
export function describeSelection(spec: SelectionSpec): string {
  switch (spec.mode) {
    case 'locations':
      return `${spec.ids.length} listed location(s)`;
    case 'prefixes':
      return `locations with prefix ${spec.prefixes.join(', ')}`;
    case 'polygon': {
      const what =
        spec.polygons.length === 1 ? 'the polygon' : `the ${spec.polygons.length} polygons`;
      return `locations inside ${what} of ${spec.file}${spec.crs === 'RD' ? ' (RD New, converted to WGS 84)' : ''}`;
    }
  }
}

/** What a request for `batch` names: its ids, or the selection as given (server side). */
export function requestSelection(
  spec: SelectionSpec,
  batch: { ids: readonly string[] },
  serverSide: boolean,
): Selection {
  if (!serverSide || spec.mode === 'locations') return { locations: batch.ids };
  if (spec.mode === 'prefixes') return { prefixes: spec.prefixes };
  // The service takes one WGS 84 Polygon: a union of several is asked for by id.
  if (spec.polygons.length !== 1) return { locations: batch.ids };
  return { polygon: { type: 'Polygon', coordinates: spec.polygons[0]! } satisfies Polygon };
}
