/**
 * What the data of a folder covers, for its description (dataset-description.ts):
 * the span of its instants and the bounding box of its positions, read from
 * the folder's views.
 */
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { discoverDatasets } from '../duckdb/datasets.js';
import type { FolderFiles } from '../duckdb/folder-files.js';
import { partitionValues } from '../duckdb/partitions.js';

/** Where the data's instants are, by view: the coverage in time is their span. */
const TIMES: readonly (readonly [string, string])[] = [
  ['bicycle_measurements', 'measurement_hour'],
  ['signs_events', 'publication_timestamp'],
  ['signs_live_snapshots', 'downloaded_at'],
];

/** Where the data's positions are, by view: the coverage in space is their bounding box. */
const POSITIONS: readonly (readonly [string, string, string])[] = [
  ['bicycle_locations', 'longitude', 'latitude'],
  ['signs_current_state', 'location_wgs84_longitude', 'location_wgs84_latitude'],
  ['signs_live', 'longitude', 'latitude'],
];

export interface Coverage {
  start: string | undefined;
  end: string | undefined;
  /** West, south, east, north (WGS 84). */
  box: [number, number, number, number] | undefined;
}

/**
 * A filter to the first and last partitions of a dataset kept by date or
 * instant, where its first and last instants lie: a year of partitions is not
 * read for two of them (nor fetched, in an object store). '' for any other.
 */
async function firstAndLast(
  { output, files }: { output: string; files: FolderFiles },
  name: string,
): Promise<string> {
  const dataset = (await discoverDatasets(output, files)).find((d) => d.name === name);
  if (!dataset?.partitioned) return '';
  const { column, values } = await partitionValues(dataset.folder, files);
  const type = column === undefined ? undefined : dataset.hiveTypes[column];
  if (column === undefined || type === undefined || values.length === 0) return '';
  values.sort();
  const ends = [values[0]!, values.at(-1)!].map((v) => `CAST(${quotedString(v)} AS ${type})`);
  return ` WHERE ${quotedIdentifier(column)} IN (${ends.join(', ')})`;
}

export async function coverage(
  db: Database,
  folder: { output: string; files: FolderFiles },
): Promise<Coverage> {
  const views = new Set(
    (await db.all(`SELECT view_name FROM duckdb_views() WHERE NOT internal`)).map((r) =>
      String(r['view_name']),
    ),
  );
  const times: string[] = [];
  for (const [view, column] of TIMES.filter(([name]) => views.has(name)))
    times.push(
      `SELECT min(${column}) AS lo, max(${column}) AS hi FROM ${view}${await firstAndLast(folder, view)}`,
    );
  let start: string | undefined;
  let end: string | undefined;
  if (times.length > 0) {
    const [span] = await db.all(
      `SELECT strftime(timezone('UTC', min(lo)), '%Y-%m-%dT%H:%M:%SZ') AS lo,
              strftime(timezone('UTC', max(hi)), '%Y-%m-%dT%H:%M:%SZ') AS hi
       FROM (${times.join(' UNION ALL ')})`,
    );
    start = (span?.['lo'] as string | null) ?? undefined;
    end = (span?.['hi'] as string | null) ?? undefined;
  }
  const positions = POSITIONS.filter(([view]) => views.has(view)).map(
    ([view, lon, lat]) =>
      `SELECT min(${lon}) AS w, min(${lat}) AS s, max(${lon}) AS e, max(${lat}) AS n FROM ${view}
       WHERE ${lon} BETWEEN -180 AND 180 AND ${lat} BETWEEN -90 AND 90`,
  );
  let box: Coverage['box'];
  if (positions.length > 0) {
    const [b] = await db.all(
      `SELECT min(w) AS w, min(s) AS s, max(e) AS e, max(n) AS n FROM (${positions.join(' UNION ALL ')})`,
    );
    if (b && b['w'] !== null) box = [b['w'], b['s'], b['e'], b['n']].map(Number) as Coverage['box'];
  }
  return { start, end, box };
}
