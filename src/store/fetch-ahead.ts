/**
 * What a step is about to read of a folder in an object store, fetched before
 * it runs (TRANSFERS at a time), so that a statement seldom meets a
 * placeholder (each meeting runs the step again, remote-files.ts): of every
 * dataset a SQL text names, every file for a whole build; for a partial
 * build, the partitions within a day of those it builds (within their month
 * or year where it builds by month or year); for an export by month, the
 * partitions of those months. A folder on disk fetches nothing.
 */
import { namedIn, type Dataset } from '../duckdb/datasets.js';
import { remoteFilesOf } from './remote-files.js';

const DAY_MS = 86_400_000;

/** The date (YYYY-MM-DD) at the start of a partition value, if it has one. */
function dateOf(value: string): string | undefined {
  return /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 10) : undefined;
}

const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * The spans of dates [first, last] that output partitions `keys` of `column`
 * read: their month or year where the column is one, else the day and the
 * days either side (as text: a month's last day is `-31`, whatever its length).
 * Undefined when a key is not a date.
 */
function spansOf(column: string | undefined, keys: readonly string[]) {
  const spans: [string, string][] = [];
  for (const key of keys) {
    const date = dateOf(key);
    if (date === undefined) return undefined;
    const at = Date.parse(`${date}T00:00:00Z`);
    spans.push(
      column === 'month'
        ? [date, `${date.slice(0, 7)}-31`]
        : column === 'year'
          ? [date, `${date.slice(0, 4)}-12-31`]
          : [isoDate(at - DAY_MS), isoDate(at + DAY_MS)],
    );
  }
  return spans;
}

/**
 * Whether a partition (`column=value`) of a dataset holds dates of `spans`:
 * compared by day, or by month or year for a dataset kept by month or year.
 */
function within(spans: readonly [string, string][], column: string, value: string): boolean {
  const date = dateOf(value);
  if (date === undefined) return false;
  const width = column === 'month' ? 7 : column === 'year' ? 4 : 10;
  const at = date.slice(0, width);
  return spans.some(([first, last]) => first.slice(0, width) <= at && at <= last.slice(0, width));
}

/**
 * Before a sql step's build: the files of the datasets `text` names (its
 * outputs and the dataset `except` aside) that the build will read.
 */
export async function fetchForBuild(
  text: string,
  datasets: readonly Dataset[],
  build: {
    outputs: readonly string[];
    /** The output partition column and the partitions built; no keys: a whole build. */
    column: string | undefined;
    keys: readonly string[] | undefined;
    /** Datasets fetched otherwise (those a partial build narrows, sql-reads.ts). */
    except?: readonly string[] | undefined;
  },
): Promise<void> {
  const spans = build.keys && spansOf(build.column, build.keys);
  // A partial build whose partitions are not dates: what it reads is not known.
  if (build.keys && !spans) return;
  for (const dataset of namedIn(text, datasets)) {
    if (build.outputs.includes(dataset.name) || build.except?.includes(dataset.name)) continue;
    await remoteFilesOf(dataset.folder)?.fetchPartitions(dataset.folder, (column, value) =>
      spans ? within(spans, column, value) : true,
    );
  }
}

/** Before an export writes months `months` (YYYY-MM) from `dataset`: their partitions. */
export async function fetchForMonths(dataset: Dataset, months: readonly string[]): Promise<void> {
  const spans = months.map((m): [string, string] => [`${m}-01`, `${m}-31`]);
  await remoteFilesOf(dataset.folder)?.fetchPartitions(dataset.folder, (column, value) =>
    within(spans, column, value),
  );
}
