/**
 * An export of one file per month of a date column (`per_month`), each file
 * complete for its month. A run writes again only the months whose rows may
 * have changed: those of the partitions of the dataset read (`from`, or the
 * table) that changed since the last export (input-changes.ts), when that
 * dataset is partitioned by the month's column; otherwise every month. A month
 * left without rows loses its file.
 */
import { basename, dirname } from 'node:path';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { folderFilesOf, namesIn, type FolderFiles } from '../duckdb/folder-files.js';
import type { ExportSource } from '../sinks/exports.js';
import { datasetsRead, exportFile } from './export-file.js';
import { MONTH, formatOf, type ExportStepOptions } from './export-options.js';
import { definitionHash, inputChanges } from './input-changes.js';
import { insideFolder } from './paths.js';
import type {
  ExportRecord,
  PlanContext,
  StepContext,
  StepDecision,
  StepOutcome,
} from './step-kind.js';
import { discoverDatasets } from '../duckdb/datasets.js';
import { csvSidecars } from '../sinks/csv-metadata.js';
import { readOnly } from './sql-reads.js';

/** The month (YYYY-MM) of a partition value that is a date or an instant (YYYY-MM-DD...). */
function monthOf(value: string): string | undefined {
  return /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 7) : undefined;
}

/** The months that files of this export exist for now, by their names. */
function monthsOnDisk(files: FolderFiles, pattern: string): string[] {
  const name = basename(pattern);
  const at = name.indexOf(MONTH);
  const [before, after] = [name.slice(0, at), name.slice(at + MONTH.length)];
  return namesIn(files, dirname(pattern))
    .filter((e) => e.startsWith(before) && e.endsWith(after))
    .map((e) => e.slice(before.length, e.length - after.length))
    .filter((m) => /^\d{4}-\d{2}$/.test(m))
    .sort();
}

type Changes = Awaited<ReturnType<typeof inputChanges>>;

/** What an export reads: the datasets its table or query names (view names). */
async function exportInputs(options: ExportStepOptions, context: PlanContext): Promise<string[]> {
  const text = options.table ?? options.query ?? '';
  const there =
    (await context.datasets?.()) ??
    (await discoverDatasets(context.output, folderFilesOf(context)));
  const names = new Set([...there.map((d) => d.name), ...(context.pending?.keys() ?? [])]);
  return datasetsRead(
    text,
    [...names].map((name) => ({ name })),
  ).map((d) => d.name);
}

/** The changes to an export by month's input since its last run (none without one). */
function monthChanges(
  options: ExportStepOptions,
  context: PlanContext,
): Promise<Changes | undefined> {
  const from = options.from ?? options.table;
  if (!from) return Promise.resolve(undefined);
  const pattern = insideFolder(context.output, options.path)!;
  return inputChanges(context, from, definitionHash([options]), () =>
    Promise.resolve(monthsOnDisk(folderFilesOf(context), pattern).length > 0),
  );
}

/** An export's decision (StepDecision): its files, and what it reads of the folder. */
async function exportDecision(
  options: ExportStepOptions,
  context: PlanContext,
  changes?: Changes,
): Promise<StepDecision> {
  const inputs = await exportInputs(options, context);
  const all = inputs.map((dataset) => ({ dataset, partitions: 'all' as const }));
  if (options.per_month === undefined)
    return {
      decision: 'whole',
      why: 'an extract is written whole at every run',
      builds: [],
      reads: all,
      files: [options.path],
    };
  const column = options.per_month;
  const from = options.from ?? options.table;
  if (changes?.mode === 'unchanged')
    return {
      decision: 'skip',
      why: `${from ?? ''} has not changed since the last export`,
      builds: [],
      reads: [],
    };
  const narrowed = narrowedInput(changes, column);
  if (changes?.mode === 'partial' && narrowed) {
    const months = [...new Set(changes.changed.map((value) => monthOf(value)!))].sort();
    return {
      decision: 'partial',
      why: `${changes.changed.length} partition(s) of ${from ?? ''} changed: ${months.length} month(s) written again`,
      builds: [],
      reads: inputs.map((dataset) => ({
        dataset,
        partitions:
          dataset === narrowed.source.name
            ? narrowed.current.filter((value) => months.includes(monthOf(value) ?? ''))
            : 'all',
      })),
      files: months.map((month) => options.path.replace(MONTH, month)),
    };
  }
  return {
    decision: 'whole',
    why:
      changes?.mode === 'full'
        ? changes.reason
        : `its months come from ${from ?? 'a query'}, not from partitions by ${column}`,
    builds: [],
    reads: all,
    files: [options.path],
  };
}

/** The months' changes each decision of decideExport stands for: what exportMonths carries out. */
const decided = new WeakMap<StepDecision, Changes | undefined>();

/** An export step's decision, made just before it runs (and by `road-etl plan`). */
export async function decideExport(
  options: ExportStepOptions,
  context: PlanContext,
): Promise<StepDecision> {
  const changes =
    options.per_month === undefined ? undefined : await monthChanges(options, context);
  const decision = await exportDecision(options, context, changes);
  decided.set(decision, changes);
  return decision;
}

export async function exportMonths(
  options: ExportStepOptions,
  column: string,
  source: ExportSource,
  context: StepContext,
  decision: StepDecision,
): Promise<StepOutcome> {
  if (!decided.has(decision))
    throw new Error('an export step was given a decision decideExport did not make');
  const changes = decided.get(decision);
  const pattern = insideFolder(context.output, options.path)!;
  const db = await context.database();
  const from = options.from ?? options.table;
  if (changes?.mode === 'unchanged') {
    context.log.log(
      'info',
      'export.unchanged',
      `${context.stepId}: ${from ?? ''} has not changed since the last export; the files are kept`,
      { step: context.stepId },
    );
    await context.state.save(changes.checkpoint);
    return { rowsIn: 0, rowsOut: 0, notes: { unchanged: true } };
  }

  const months = await monthsToWrite(db, column, source, pattern, changes, folderFilesOf(context));
  // A month's rows come from its partitions (what makes writing some months enough): its
  // statements read their files only, on a connection of its own. DuckDB lists every
  // partition of a view at each statement otherwise, a year's 365 for each.
  const reader = narrowedInput(changes, column) ? await db.fork() : db;
  try {
    return await writeMonths(options, pattern, column, source, context, reader, months, changes);
  } finally {
    if (reader !== db) reader.close();
  }
}

/**
 * The input whose partitions of a month give that month's rows, when the
 * months to write are those of its partitions that changed (it is partitioned
 * by the export's column, each changed partition a date).
 */
function narrowedInput(changes: Changes | undefined, column: string) {
  return changes?.mode === 'partial' &&
    changes.input.column === column &&
    changes.changed.every((value) => monthOf(value) !== undefined)
    ? changes.input
    : undefined;
}

/** Writes the export's file of each month in `months` (a month without rows loses its file). */
async function writeMonths(
  options: ExportStepOptions,
  pattern: string,
  column: string,
  source: ExportSource,
  context: StepContext,
  db: Database,
  months: readonly string[],
  changes: Changes | undefined,
): Promise<StepOutcome> {
  const narrowed = narrowedInput(changes, column);
  const pathOf = (month: string): string => pattern.replace(MONTH, month);
  const ref = quotedIdentifier(column);

  const exports: ExportRecord[] = [];
  const removed: string[] = [];
  let rows = 0;
  let withoutGeometry = 0;
  for (const month of months) {
    context.signal.throwIfAborted();
    const path = pathOf(month);
    if (narrowed) {
      const values = narrowed.current.filter((value) => monthOf(value) === month);
      await readOnly(db, { source: narrowed.source, column, values }, context.partitions);
    }
    const first = `DATE ${quotedString(`${month}-01`)}`;
    const rowsOfMonth: ExportSource = {
      sql: `(SELECT * FROM ${source.sql} WHERE ${ref} >= ${first} AND ${ref} < ${first} + INTERVAL 1 MONTH)`,
      params: source.params,
    };
    const result = await exportFile(db, options, rowsOfMonth, path, context);
    if (result.rows === 0) {
      const files = folderFilesOf(context);
      await files.remove(path);
      for (const sidecar of Object.values(csvSidecars(path))) await files.remove(sidecar);
      removed.push(month);
      continue;
    }
    rows += result.rows;
    withoutGeometry += result.withoutGeometry ?? 0;
    const record = await context.recordFile(path, result.sha256);
    exports.push({ ...record, format: formatOf(options)!, rows: result.rows });
  }
  if (changes) await context.state.save(changes.checkpoint);
  context.log.log(
    'info',
    'export.months',
    `${context.stepId}: wrote ${exports.length} month(s) of ${options.path}${removed.length > 0 ? `, removed ${removed.length} without rows` : ''}`,
    { step: context.stepId, written: exports.length, removed: removed.length },
  );
  return {
    rowsIn: rows,
    rowsOut: rows,
    exports,
    notes: {
      months_written: exports.map((e) => basename(e.path)),
      ...(removed.length > 0 ? { months_removed: removed } : {}),
      ...(withoutGeometry > 0 ? { features_without_geometry: withoutGeometry } : {}),
    },
  };
}

/**
 * The months to write: those of the input partitions that changed, when the
 * input is partitioned by the same column; otherwise every month with rows, and
 * every month on disk (whose file goes when the month has none left).
 */
async function monthsToWrite(
  db: Database,
  column: string,
  source: ExportSource,
  pattern: string,
  changes: Changes | undefined,
  files: FolderFiles,
): Promise<string[]> {
  if (changes?.mode === 'partial' && narrowedInput(changes, column))
    return [...new Set(changes.changed.map((value) => monthOf(value)!))].sort();
  const ref = quotedIdentifier(column);
  const found = await db.all(
    `SELECT DISTINCT strftime(${ref}, '%Y-%m') AS month FROM ${source.sql} WHERE ${ref} IS NOT NULL ORDER BY 1`,
    source.params,
  );
  const months = found.map((r) => String(r['month']));
  for (const month of monthsOnDisk(files, pattern)) if (!months.includes(month)) months.push(month);
  return months.sort();
}
