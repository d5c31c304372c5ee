/**
 * Measurements from response body to Parquet. A batch's body is typed by DuckDB
 * into a staged file: its rows, each with the reason it cannot be kept if
 * there is one (not a whole hour, outside the batch's period, a location not
 * asked for, a repeat). date-commits.ts then rewrites each date partition from
 * the staged files.
 */
import { listValue } from '@duckdb/node-api';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { engineSql } from '../../duckdb/sql-files.js';
import { explainDataError } from '../../errors.js';
import { commitFile, temporaryPath, writeThrough } from '../../util/fs.js';
import { portableCopySql } from '../../duckdb/portable.js';
import { folderFilesOf, type FolderFiles } from '../../duckdb/folder-files.js';

export const MEASUREMENTS_DATASET = join('bicycle', 'measurements');
export const BICYCLE_QUARANTINE_DATASET = join('bicycle', 'quarantine');
/** The one file of a date partition. */
export const PARTITION_FILE = 'data.parquet';

/** Columns of bicycle/measurements (the date partition column comes from the path). */
const MEASUREMENT_COLUMNS: readonly (readonly [string, string])[] = [
  ['location_id', 'VARCHAR'],
  ['measurement_hour', 'TIMESTAMPTZ'],
  [
    'measured_values',
    'STRUCT(category VARCHAR, subcategory VARCHAR, value BIGINT, issue VARCHAR)[]',
  ],
  ['measured_values_full', 'JSON'],
  ['extra_fields', 'JSON'],
  ['typing_issues', 'VARCHAR[]'],
];

/** The names of MEASUREMENT_COLUMNS, as a select list. */
export const MEASUREMENT_NAMES = MEASUREMENT_COLUMNS.map(([name]) => name).join(', ');

export const MEASUREMENTS_VIEW_COLUMNS: readonly (readonly [string, string])[] = [
  ...MEASUREMENT_COLUMNS,
  ['date', 'DATE'],
];

/**
 * Makes the views of one answer on this connection (bicycle_body over the
 * file; with `dedupe`, each row numbered in the answer's order) and resolves to
 * its typed rows (sql/measurements_typing.sql, and with `dedupe`
 * sql/measurements_first_rows.sql over them).
 */
async function typedRows(db: Database, bodyFile: string, dedupe: boolean): Promise<string> {
  await db.run(
    `CREATE OR REPLACE TEMP VIEW bicycle_body AS
     SELECT json, ${dedupe ? 'row_number() OVER ()' : '0'} AS _n
     FROM read_json_objects(${quotedString(bodyFile)}, format = 'array')`,
  );
  const typing = await engineSql('sources/bicycle', 'measurements_typing');
  if (!dedupe) return `(${typing})`;
  const firstRows = await engineSql('sources/bicycle', 'measurements_first_rows');
  return `(WITH measurements_typed AS (${typing}) ${firstRows})`;
}

export interface StagedBatch {
  /** Rows kept. */
  rows: number;
  /** Rows quarantined. */
  quarantined: number;
  /** Rows for the hour at the period's end (an inclusive endTime): left to the next window. */
  boundary: number;
}

/** A body DuckDB cannot read as a JSON array: worth asking for again. */
export class UnreadableBodyError extends Error {
  override name = 'UnreadableBodyError';
}

/**
 * Types one batch's body into `<stem>.parquet` in the staging folder (written
 * under a temporary name and renamed): every row with `_problem` and
 * `_boundary`, the raw row kept only where there is a problem. The commit takes
 * the rows without either; the quarantine, the rows with a problem.
 */
export async function stageBatch(
  db: Database,
  staging: string,
  stem: string,
  bodyFile: string,
  batch: { from: number; to: number; ids: readonly string[]; maxCount: number },
): Promise<StagedBatch> {
  const file = join(staging, `${stem}.parquet`);
  const temporary = temporaryPath(file, staging);
  const period = {
    requested: listValue([...batch.ids]),
    from: new Date(batch.from).toISOString(),
    to: new Date(batch.to).toISOString(),
    max_count: String(batch.maxCount),
  };
  const typeInto = async (dedupe: boolean): Promise<Record<string, unknown>> => {
    try {
      const typed = await typedRows(db, bodyFile, dedupe);
      await db.run(
        // In hour order, in small row groups: the commit of one day reads only that day's groups.
        `COPY (SELECT ${STAGED_COLUMNS.join(', ')} FROM ${typed} ORDER BY measurement_hour)
         TO ${quotedString(temporary)} (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE ${STAGED_ROW_GROUP})`,
        period,
      );
    } catch (error) {
      await rm(temporary, { force: true });
      const message = (error as Error).message;
      if (/^Invalid Input Error/.test(message) && /JSON/.test(message))
        throw new UnreadableBodyError(`the body is not a JSON array of objects (${message})`, {
          cause: error,
        });
      throw explainDataError(error, `the measurements of batch ${stem}`);
    }
    const [counts = {}] = await db.all(
      `SELECT count(*) FILTER (WHERE _problem IS NULL AND NOT _boundary) AS rows,
              count(*) FILTER (WHERE _problem IS NOT NULL OR _implausible IS NOT NULL) AS quarantined,
              count(*) FILTER (WHERE _problem IS NULL AND _boundary) AS boundary,
              count(DISTINCT (location_id, measurement_hour)) FILTER (WHERE _problem IS NULL AND NOT _boundary) AS distinct_rows
       FROM read_parquet(${quotedString(temporary)})`,
    );
    return counts;
  };
  // Two rows for one location and hour are rare: they are looked for only when a count says so.
  let counts = await typeInto(false);
  if (Number(counts['distinct_rows'] ?? 0) < Number(counts['rows'] ?? 0))
    counts = await typeInto(true);
  await commitFile(temporary, file);
  return {
    rows: Number(counts['rows'] ?? 0),
    quarantined: Number(counts['quarantined'] ?? 0),
    boundary: Number(counts['boundary'] ?? 0),
  };
}

/** Rows per row group of a staged file. */
const STAGED_ROW_GROUP = 4096;

/** Columns of a staged batch file. */
const STAGED_COLUMNS = [
  MEASUREMENT_NAMES,
  '_problem',
  '_implausible',
  '_boundary',
  'CASE WHEN _problem IS NOT NULL OR _implausible IS NOT NULL THEN raw END AS raw_row',
  'CASE WHEN _problem IS NOT NULL OR _implausible IS NOT NULL THEN _hour_text END AS measurement_hour_text',
];

/** Rows of staged files that go to the quarantine. */
function quarantinedRows(files: readonly string[]): string {
  return `(SELECT coalesce(_problem, _implausible) AS reason, raw_row, location_id, measurement_hour_text FROM read_parquet([${files.map(quotedString).join(', ')}])
    WHERE _problem IS NOT NULL OR (_implausible IS NOT NULL AND NOT _boundary))`;
}

/**
 * Writes a run's quarantined rows from its staged batches to
 * bicycle/quarantine/<step>-<run key>.parquet, whole; without any, removes an
 * old file of the same run. Resolves to the file written, if any.
 */
export async function writeQuarantine(
  db: Database,
  run: {
    output: string;
    scratch: string;
    stepId: string;
    key: string;
    quarantined: number;
    partitions?: { folderFiles: FolderFiles };
  },
  staged: readonly string[],
): Promise<string | undefined> {
  const file = join(run.output, BICYCLE_QUARANTINE_DATASET, `${run.stepId}-${run.key}.parquet`);
  if (run.quarantined === 0) {
    await folderFilesOf(run).remove(file);
    return undefined;
  }
  await writeThrough(file, run.scratch, (temporary) =>
    portableCopySql(db, quarantinedRows(staged), temporary).then((sql) => db.copy(sql)),
  );
  return file;
}
