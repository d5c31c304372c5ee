/**
 * Which locations a measurement run is about: listed ids, id prefixes, or the
 * locations inside a GeoJSON polygon, resolved against the catalog here (point
 * in polygon), so that the work can be cut into id batches.
 */
import { readFile } from 'node:fs/promises';
import { checkGeoJsonPolygon, pointInPolygon, type Position } from '../../util/geo.js';
import type { Selection } from './client.js';

export const MIN_PREFIX_LENGTH = 3;

export type SelectionSpec =
  | { mode: 'locations'; ids: string[] }
  | { mode: 'prefixes'; prefixes: string[] }
  | { mode: 'polygon'; file: string; polygon: Polygon };

export interface Polygon {
  type: 'Polygon';
  coordinates: Position[][];
}

export interface CatalogLocation {
  id: string;
  longitude: number | null;
  latitude: number | null;
}

/**
 * The Polygon of a GeoJSON text: a Polygon geometry, a Feature holding one, or
 * a FeatureCollection of exactly one such Feature. Problems come back as text.
 */
export function polygonOf(
  text: string,
  file?: string,
): { polygon: Polygon } | { problems: string[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problems: [`${file ? `${file} is ` : ''}not JSON (${(error as Error).message})`] };
  }
  let where = '';
  const record = (v: unknown): Record<string, unknown> | undefined =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  let geometry = record(value);
  if (geometry?.['type'] === 'FeatureCollection') {
    const features = geometry['features'];
    if (!Array.isArray(features) || features.length !== 1) {
      return {
        problems: [
          `a FeatureCollection must hold exactly one Feature with a Polygon, it holds ${Array.isArray(features) ? features.length : 'no features array'}`,
        ],
      };
    }
    geometry = record(features[0]);
    where = 'features[0]';
  }
  if (geometry?.['type'] === 'Feature') {
    where = where ? `${where}.geometry` : 'geometry';
    geometry = record(geometry['geometry']);
  }
  const problems = checkGeoJsonPolygon(geometry);
  if (problems.length > 0) {
    return {
      problems: problems.map((p) => {
        const path = [where, p.path].filter(Boolean).join('.');
        return `${path ? `${path}: ` : ''}${p.message}`;
      }),
    };
  }
  return { polygon: geometry as unknown as Polygon };
}

/** Reads and checks a polygon file. */
export async function readPolygon(
  file: string,
): Promise<{ polygon: Polygon } | { problems: string[] }> {
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
            pointInPolygon([l.longitude, l.latitude], spec.polygon.coordinates),
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
    case 'polygon':
      return `locations inside the polygon of ${spec.file}`;
  }
}

/** What a request for `batch` names: its ids, or the selection as given (server side). */
export function requestSelection(
  spec: SelectionSpec,
  batch: { ids: readonly string[] },
  serverSide: boolean,
): Selection {
  if (!serverSide || spec.mode === 'locations') return { locations: batch.ids };
  return spec.mode === 'prefixes' ? { prefixes: spec.prefixes } : { polygon: spec.polygon };
}
