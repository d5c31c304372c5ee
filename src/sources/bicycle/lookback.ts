/**
 * What a night asks for besides its own period: where the period starts when
 * it is not given (where the folder's data ends: missed nights are caught
 * up), and the location-hours missing in the `lookback_days` before it, which
 * counters that upload in batches or late deliver days after the hour (NDW's
 * Dexter ships a completeness file, `gebruikte_minuten`, for this reason).
 * Both are read from the folder before the run: the date partitions of the
 * lookback (fetched from a bucket first), and the catalog's validity of each
 * location, so that an hour a location could not count is not asked for.
 */
import { quotedString, type Database } from '../../duckdb/database.js';
import type { FolderFiles } from '../../duckdb/folder-files.js';
import { join } from 'node:path';
import { InputError } from '../../errors.js';
import { DAY_MS, HOUR_MS, formatIsoDate, formatSecondTimestamp } from '../../util/time.js';
import { catalogFile } from './catalog.js';
import { MEASUREMENTS_DATASET, PARTITION_FILE } from './landing.js';

/** The date partition files of [from, to) the folder has. */
function partitionFiles(output: string, files: FolderFiles, from: number, to: number): string[] {
  const found: string[] = [];
  for (let day = Math.floor(from / DAY_MS) * DAY_MS; day < to; day += DAY_MS) {
    const file = join(output, MEASUREMENTS_DATASET, `date=${formatIsoDate(day)}`, PARTITION_FILE);
    if (files.size(file) !== undefined) found.push(file);
  }
  return found;
}

/** The ids as a DuckDB list. */
function idList(ids: readonly string[]): string {
  return `[${ids.map(quotedString).join(', ')}]::VARCHAR[]`;
}

/**
 * The hour after the last one the folder holds of `ids` (ms), looked for in
 * the date partitions from the newest back; undefined when it holds none.
 */
export async function dataEnd(
  db: Database,
  input: { output: string; files: FolderFiles; ids: readonly string[] },
): Promise<number | undefined> {
  const folder = join(input.output, MEASUREMENTS_DATASET);
  const dates = input.files
    .list(folder)
    .filter((entry) => entry.folder)
    .map((entry) => /^date=(\d{4}-\d{2}-\d{2})$/.exec(entry.name)?.[1])
    .filter((d): d is string => d !== undefined)
    .reverse();
  for (const date of dates) {
    const file = join(folder, `date=${date}`, PARTITION_FILE);
    if (input.files.size(file) === undefined) continue;
    await input.files.bring([file]);
    const [row] = await db.all(
      `SELECT epoch_ms(max(measurement_hour)) AS last FROM read_parquet(${quotedString(file)}, hive_partitioning = false)
       WHERE list_contains(${idList(input.ids)}, location_id)`,
    );
    const last = row?.['last'];
    if (last !== null && last !== undefined) return Number(last) + HOUR_MS;
  }
  return undefined;
}

export interface Gaps {
  /** The locations with hours missing, sorted. */
  ids: string[];
  /** The first hour missing of any of them, and the end of the hours looked at (ms). */
  from: number;
  to: number;
  /** Location-hours missing. */
  hours: number;
}

/**
 * The location-hours of `ids` in [from, to) the folder does not hold, of the
 * hours each location could count (the catalog's validity, when there is one).
 */
export async function missingHours(
  db: Database,
  input: { output: string; files: FolderFiles; ids: readonly string[]; from: number; to: number },
): Promise<Gaps | undefined> {
  const { output, files, ids, from, to } = input;
  if (to <= from || ids.length === 0) return undefined;
  const present = partitionFiles(output, files, from, to);
  const catalog = catalogFile(output);
  const withCatalog = files.size(catalog) !== undefined;
  await files.bring([...present, ...(withCatalog ? [catalog] : [])]);
  const held =
    present.length === 0
      ? 'SELECT NULL::VARCHAR AS id, NULL::TIMESTAMPTZ AS hour WHERE false'
      : `SELECT location_id AS id, measurement_hour AS hour FROM read_parquet([${present.map(quotedString).join(', ')}], hive_partitioning = false)`;
  const validity = withCatalog
    ? `LEFT JOIN (SELECT location_id AS id, valid_from, valid_until FROM read_parquet(${quotedString(catalog)})) c USING (id)
       WHERE (c.valid_from IS NULL OR hour >= c.valid_from) AND (c.valid_until IS NULL OR hour < c.valid_until)`
    : '';
  // Every location with every hour it could count, less the hours held: a set difference.
  const [row] = await db.all(
    `WITH ids AS (SELECT unnest(${idList(ids)}) AS id),
     hours AS (SELECT unnest(generate_series(make_timestamptz(${from * 1000}), make_timestamptz(${(to - HOUR_MS) * 1000}), INTERVAL 1 HOUR)) AS hour),
     expected AS (SELECT id, hour FROM ids CROSS JOIN hours ${validity}),
     missing AS (SELECT id, hour FROM expected EXCEPT SELECT id, hour FROM (${held}))
     SELECT list(DISTINCT id ORDER BY id) AS ids, epoch_ms(min(hour)) AS first, count(*) AS hours FROM missing`,
  );
  const missing = (row?.['ids'] as string[] | null) ?? [];
  if (missing.length === 0) return undefined;
  return { ids: missing, from: Number(row?.['first']), to, hours: Number(row?.['hours']) };
}

/**
 * The first hour the folder holds of any location (ms), or `after` where its
 * first date ends by then (its file is then not read: a folder in a store
 * does not fetch it); undefined when it holds none.
 */
async function dataStart(
  db: Database,
  { output, files }: { output: string; files: FolderFiles },
  after: number,
): Promise<number | undefined> {
  const folder = join(output, MEASUREMENTS_DATASET);
  for (const entry of files.list(folder)) {
    const date = /^date=(\d{4}-\d{2}-\d{2})$/.exec(entry.name)?.[1];
    const file = join(folder, entry.name, PARTITION_FILE);
    if (!entry.folder || date === undefined || files.size(file) === undefined) continue;
    if (Date.parse(`${date}T00:00:00Z`) + DAY_MS <= after) return after;
    await files.bring([file]);
    const [row] = await db.all(
      `SELECT epoch_ms(min(measurement_hour)) AS first FROM read_parquet(${quotedString(file)}, hive_partitioning = false)`,
    );
    const first = row?.['first'];
    if (first !== null && first !== undefined) return Number(first);
  }
  return undefined;
}

export interface Period {
  from: number;
  to: number;
  /** The hours missing before `from` that the run asks for too (lookback). */
  gaps: Gaps | undefined;
}

/**
 * A run's period: `start` and `end` as given, else where the folder's data of
 * `ids` ends and the last whole hour; and the gaps of the `lookbackDays` before
 * it, among the hours earlier runs asked for: from the first hour the folder
 * holds to the last it holds of the selection (a new folder, or a period far
 * from the folder's data, has none).
 */
export async function planPeriod(
  db: Database,
  input: {
    output: string;
    files: FolderFiles;
    ids: readonly string[] | undefined;
    start: number | undefined;
    end: number | undefined;
    lookbackDays: number;
    stepId: string;
  },
): Promise<Period> {
  const { output, files, ids } = input;
  const to = input.end ?? Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
  let from = input.start;
  // Where the folder's counts end: the start of a catch-up, and the end of the hours looked back on.
  const wanted = from === undefined || input.lookbackDays > 0;
  const end = wanted && ids ? await dataEnd(db, { output, files, ids }) : undefined;
  if (from === undefined) {
    if (end === undefined)
      throw new InputError(
        `${input.stepId}: start is not given, and ${output} holds no measurements of the selection to go on from: give start, the first hour to fetch (for example --param start=${formatSecondTimestamp(to - DAY_MS)})`,
      );
    from = Math.min(end, to);
  }
  if (input.lookbackDays === 0 || !ids || end === undefined) return { from, to, gaps: undefined };
  // The hours runs have asked for: from the first the folder holds to the last of the selection's.
  const back = from - input.lookbackDays * DAY_MS;
  const first = await dataStart(db, { output, files }, back);
  const lookFrom = Math.max(back, first ?? end);
  const lookTo = Math.min(from, end);
  const gaps = await missingHours(db, { output, files, ids, from: lookFrom, to: lookTo });
  return { from, to, gaps };
}
