/**
 * Measurements from response body to Parquet. A batch's body is typed by DuckDB
 * into a staged file: its rows, each with the reason it cannot be kept if
 * there is one (not a whole hour, outside the batch's period, a location not
 * asked for, a repeat). date-commits.ts then rewrites each date partition from
 * the staged files.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PARQUET_FORMAT, quotedString, type Database } from '../../duckdb/database.js';
import { explainDataError } from '../../errors.js';
import { commitFile, temporaryPath, writeThrough } from '../../util/fs.js';

export const MEASUREMENTS_DATASET = join('bicycle', 'measurements');
export const BICYCLE_QUARANTINE_DATASET = join('bicycle', 'quarantine');
/** The one file of a date partition. */
export const PARTITION_FILE = 'data.parquet';

/** Columns of bicycle/measurements (the date partition column comes from the path). */
const MEASUREMENT_COLUMNS: readonly (readonly [string, string])[] = [
  ['location_id', 'VARCHAR'],
  ['measurement_hour', 'TIMESTAMPTZ'],
  ['measured_values', 'STRUCT(category VARCHAR, subcategory VARCHAR, value BIGINT)[]'],
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

const KNOWN_FIELDS = ['locationId', 'measurementHour', 'measuredValuesFull'];

/** A count from the text of a leaf: whole numbers only (a fraction is an issue, never rounded). */
const count = (text: string): string =>
  `(CASE WHEN TRY_CAST(${text} AS DOUBLE) = trunc(TRY_CAST(${text} AS DOUBLE)) THEN TRY_CAST(TRY_CAST(${text} AS DOUBLE) AS BIGINT) END)`;

/**
 * Typed measurement rows of a body file (a JSON array), with `_problem` (why a
 * row cannot be kept, or NULL) and `_boundary`: the row is of the hour that
 * starts at the period's end, which a service reading endTime as inclusive
 * sends; it belongs to the next window, which asks for it again.
 */
function typingSelect(
  bodyFile: string,
  ids: readonly string[],
  from: number,
  to: number,
  dedupe: boolean,
): string {
  const requested = `[${ids.map(quotedString).join(', ')}]::VARCHAR[]`;
  const fromSql = `make_timestamptz(${from * 1000})`;
  const toSql = `make_timestamptz(${to * 1000})`;
  // Each leaf once: its text, and its count (NULL when the text is no whole number).
  const flat = `flatten(list_transform(map_entries(_map), c -> list_transform(map_entries(c.value), s -> {category: c.key, subcategory: s.key, text: s.value, value: ${count('s.value')}})))`;
  return `
SELECT *,
  CASE
    WHEN location_id IS NULL THEN 'locationId is missing'
    WHEN measurement_hour IS NULL THEN 'measurementHour is not a timestamp: ' || coalesce(_hour_text, 'missing')
    WHEN NOT list_contains(${requested}, location_id) THEN 'locationId was not requested: ' || location_id
    WHEN _boundary THEN NULL
    WHEN measurement_hour < ${fromSql} OR measurement_hour > ${toSql} THEN 'measurementHour is outside the requested period: ' || _hour_text
    WHEN date_trunc('hour', measurement_hour) <> measurement_hour THEN 'measurementHour is not a whole hour: ' || _hour_text
    WHEN _duplicate > 1 THEN 'another row for the same location and hour came first'
  END AS _problem
FROM (
  SELECT
    location_id,
    measurement_hour,
    list_transform(_flat, e -> {category: e.category, subcategory: e.subcategory, value: e.value}) AS measured_values,
    measured_values_full,
    CASE WHEN NOT list_has_all([${KNOWN_FIELDS.map(quotedString).join(', ')}], _keys)
      THEN nullif(json_merge_patch(raw, '{${KNOWN_FIELDS.map((f) => `"${f}":null`).join(',')}}'), '{}') END AS extra_fields,
    list_concat(
      CASE WHEN measured_values_full IS NOT NULL AND json_type(measured_values_full) <> 'NULL' AND _map IS NULL
        THEN ['measuredValuesFull is not an object of categories'] END,
      CASE WHEN list_bool_or(list_transform(map_values(_map), x -> x IS NULL))
        THEN list_transform(
          list_filter(map_keys(_map), k -> json_type(measured_values_full -> ('$.' || to_json(k)::VARCHAR)) NOT IN ('OBJECT', 'NULL')),
          k -> 'measuredValuesFull.' || k || ' is not an object of subcategories') END,
      list_transform(list_filter(_flat, e -> e.text IS NOT NULL AND e.value IS NULL),
        e -> e.category || '/' || e.subcategory || ' is not a count: ' || e.text)
    ) AS typing_issues,
    raw,
    _hour_text,
    coalesce(date_trunc('hour', measurement_hour) = ${toSql}, false) AS _boundary,
    ${dedupe ? 'row_number() OVER (PARTITION BY location_id, measurement_hour ORDER BY _n)' : '1'} AS _duplicate
  FROM (
    SELECT *, ${flat} AS _flat FROM (
      SELECT *,
        nullif(trim(_v[1]), '') AS location_id,
        _v[2] AS _hour_text,
        TRY_CAST(trim(_v[2]) AS TIMESTAMPTZ) AS measurement_hour,
        TRY_CAST(measured_values_full AS MAP(VARCHAR, MAP(VARCHAR, VARCHAR))) AS _map
      FROM (
        SELECT json AS raw, _n,
          json_extract_string(json, ['$.locationId', '$.measurementHour']) AS _v,
          json_extract(json, '$.measuredValuesFull') AS measured_values_full,
          json_keys(json) AS _keys
        FROM (SELECT json, ${dedupe ? 'row_number() OVER ()' : '0'} AS _n FROM read_json_objects(${quotedString(bodyFile)}, format = 'array'))
      )
    )
  )
)`;
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
  batch: { from: number; to: number; ids: readonly string[] },
): Promise<StagedBatch> {
  const file = join(staging, `${stem}.parquet`);
  const temporary = temporaryPath(file, staging);
  const typeInto = async (dedupe: boolean): Promise<Record<string, unknown>> => {
    const typed = typingSelect(bodyFile, batch.ids, batch.from, batch.to, dedupe);
    try {
      await db.run(
        // In hour order, in small row groups: the commit of one day reads only that day's groups.
        `COPY (SELECT ${STAGED_COLUMNS.join(', ')} FROM (${typed}) ORDER BY measurement_hour)
         TO ${quotedString(temporary)} (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE ${STAGED_ROW_GROUP})`,
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
              count(*) FILTER (WHERE _problem IS NOT NULL) AS quarantined,
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
  '_boundary',
  'CASE WHEN _problem IS NOT NULL THEN raw END AS raw_row',
  'CASE WHEN _problem IS NOT NULL THEN _hour_text END AS measurement_hour_text',
];

/** Rows of staged files that go to the quarantine. */
function quarantinedRows(files: readonly string[]): string {
  return `(SELECT _problem AS reason, raw_row, location_id, measurement_hour_text FROM read_parquet([${files.map(quotedString).join(', ')}])
    WHERE _problem IS NOT NULL)`;
}

/**
 * Writes a run's quarantined rows from its staged batches to
 * bicycle/quarantine/<step>-<run key>.parquet, whole; without any, removes an
 * old file of the same run. Resolves to the file written, if any.
 */
export async function writeQuarantine(
  db: Database,
  run: { output: string; scratch: string; stepId: string; key: string; quarantined: number },
  staged: readonly string[],
): Promise<string | undefined> {
  const file = join(run.output, BICYCLE_QUARANTINE_DATASET, `${run.stepId}-${run.key}.parquet`);
  if (run.quarantined === 0) {
    await rm(file, { force: true });
    return undefined;
  }
  await writeThrough(file, run.scratch, (temporary) =>
    db.copy(`COPY ${quarantinedRows(staged)} TO ${quotedString(temporary)} (${PARQUET_FORMAT})`),
  );
  return file;
}
