/**
 * The run of a `sql` step: which build (sql-build.ts), the file run over the
 * datasets' views, its outputs written whole or by partition and recorded.
 */
import { join } from 'node:path';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { DERIVED_FOLDER, datasetLayout, datasetQuery, namedIn } from '../duckdb/datasets.js';
import { writePartitionedDataset, writeWholeDataset } from '../duckdb/dataset-write.js';
import { folderFilesOf, type FolderFiles } from '../duckdb/folder-files.js';
import { runSqlScript, SqlScriptError } from '../duckdb/script.js';
import { RunError } from '../errors.js';
import { applyBuild, type SqlBuild } from './sql-build.js';
import { outputPrints } from './sql-outputs.js';
import { buildOf, sqlTexts } from './sql-decision.js';
import { readOnly } from './sql-reads.js';
import { createdOutputs, putViewBack, putViewsBack, setViewsAside } from './sql-views.js';
import type { SqlStepOptions } from './sql-options.js';
import type { StepContext, StepDecision, StepOutcome } from './step-kind.js';

/**
 * Builds the step's outputs as `decision` (decideSql) says: whole, the
 * partitions new input touches, or folded. What it reads was fetched before.
 */
export async function runSqlStep(
  options: SqlStepOptions,
  context: StepContext,
  decision: StepDecision,
): Promise<StepOutcome> {
  const build = buildOf(decision);
  const { text, foldText } = await sqlTexts(options, context.sqlDir);
  const foldFile = options.incremental?.fold;
  // A connection of its own: the file's temporary tables go with it when the step ends.
  const db = await (await context.database()).fork();
  try {
    if (build.mode === 'unchanged') {
      context.log.log(
        'info',
        'sql.unchanged',
        `${context.stepId}: ${options.incremental?.from ?? 'its input'} has not changed since the last build; ${options.outputs.join(', ')} kept`,
        { step: context.stepId },
      );
      // Checked whole (planBuild): a partition not written again need not be opened next time.
      await context.state.save({
        ...build.checkpoint,
        outputs: outputPrints(context, options.outputs),
      });
      // Nothing built: each count is of no rows, said as 0 rather than left out.
      const none = Object.fromEntries(Object.keys(options.counts ?? {}).map((name) => [name, 0]));
      return {
        rowsIn: 0,
        rowsOut: 0,
        notes: { unchanged: true, ...(Object.keys(none).length > 0 ? { counts: none } : {}) },
      };
    }
    logBuild(build, options, context);
    await applyBuild(db, build);
    await readyInputs(db, build, options, context);
    const outcome = await runFile(
      db,
      build.mode === 'fold' ? foldText! : text,
      { ...options, file: build.mode === 'fold' ? foldFile! : options.file },
      context,
      build.keys,
    );
    // What was written is whole, and what was not was checked (planBuild).
    if (build.checkpoint)
      await context.state.save({
        ...build.checkpoint,
        outputs: outputPrints(context, options.outputs),
      });
    const notes = {
      ...(options.partition_by !== undefined || options.incremental
        ? {
            build: build.mode,
            ...(build.keys ? { partitions: build.keys.length } : {}),
            ...(build.mode === 'fold' ? { partitions_folded: build.changed.length } : {}),
          }
        : {}),
      ...(outcome.notes ?? {}),
    };
    return { ...outcome, ...(Object.keys(notes).length > 0 ? { notes } : {}) };
  } finally {
    db.close();
  }
}

/** What the build reads, made ready: narrowed, the outputs as they were. */
async function readyInputs(
  db: Database,
  build: Exclude<SqlBuild, { mode: 'unchanged' }>,
  options: SqlStepOptions,
  context: StepContext,
): Promise<void> {
  if (build.mode === 'partial')
    for (const read of build.reads ?? []) await readOnly(db, read, context.partitions);
  // The outputs as they are, for the fold file: read before they are replaced.
  if (build.mode === 'fold')
    await previousViews(db, options.outputs, context.output, folderFilesOf(context));
}

async function runFile(
  db: Database,
  text: string,
  options: SqlStepOptions,
  context: StepContext,
  keys: readonly string[] | undefined,
): Promise<StepOutcome> {
  // An earlier run's result is a view of the same name: make room for the new table.
  const aside = await setViewsAside(db, options.outputs, keys !== undefined);
  // The rows of the datasets the file names (an incremental build reads only some of them).
  const rowsIn = keys === undefined ? await inputRows(db, text, options.outputs, context) : 0;
  try {
    return await runAndWrite(db, text, options, context, keys, aside, rowsIn);
  } finally {
    // (after a failure: the error said is the file's, not this one's)
    await putViewsBack(db, aside).catch(() => undefined);
  }
}

async function runAndWrite(
  db: Database,
  text: string,
  options: SqlStepOptions,
  context: StepContext,
  keys: readonly string[] | undefined,
  aside: Map<string, string>,
  rowsIn: number,
): Promise<StepOutcome> {
  try {
    await runSqlScript(db, text, options.params);
  } catch (error) {
    if (error instanceof SqlScriptError) {
      throw new RunError(`sql/${options.file}, statement ${error.statement}: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
  const created = await createdOutputs(db, options.outputs);
  const missing = options.outputs.filter((t) => !created.has(t));
  if (missing.length > 0) {
    throw new RunError(
      `sql/${options.file} did not create ${missing.join(', ')} (declared in outputs)`,
    );
  }
  const counts = await countRows(db, options);
  let rowsOut = 0;
  for (const table of options.outputs) {
    context.signal.throwIfAborted();
    const folder = join(context.output, DERIVED_FOLDER, table);
    const files = folderFilesOf(context);
    const write = { source: quotedIdentifier(table), folder, scratch: context.scratch, files };
    let written;
    try {
      written = options.partition_by
        ? await writePartitionedDataset(db, { ...write, column: options.partition_by, keys })
        : await writeWholeDataset(db, write);
    } catch (error) {
      if (error instanceof RunError)
        throw new RunError(`sql/${options.file}, output ${table}: ${error.message}`, {
          cause: error,
        });
      throw error;
    }
    for (const { path, sha256 } of written.files) await context.recordFile(path, sha256);
    rowsOut += written.rows;
    await db.run(`DROP ${created.get(table) ?? 'TABLE'} ${quotedIdentifier(table)}`);
    // The view as it was (a partial build adds no column), or made anew.
    if (!(await putViewBack(db, aside, table)))
      await db.run(
        `CREATE VIEW ${quotedIdentifier(table)} AS ${await datasetQuery(db, await datasetLayout(folder, files), undefined, files)}`,
      );
  }
  return { rowsIn, rowsOut, ...(counts ? { notes: { counts } } : {}) };
}

/** The step's `counts`: each aggregate over the rows the build made for its first output. */
async function countRows(
  db: Database,
  options: SqlStepOptions,
): Promise<Record<string, number> | undefined> {
  const entries = Object.entries(options.counts ?? {});
  if (entries.length === 0) return undefined;
  const table = quotedIdentifier(options.outputs[0]!);
  const counts: Record<string, number> = {};
  for (const [name, aggregate] of entries) {
    try {
      const [row] = await db.all(`SELECT CAST((${aggregate}) AS DOUBLE) AS value FROM ${table}`);
      counts[name] = Number(row?.['value'] ?? 0);
    } catch (error) {
      throw new RunError(
        `counts.${name} (${aggregate}) over ${options.outputs[0]!}: ${(error as Error).message.split('\n')[0]!}`,
        { cause: error },
      );
    }
  }
  return counts;
}

function logBuild(
  build: Exclude<SqlBuild, { mode: 'unchanged' }>,
  options: SqlStepOptions,
  context: StepContext,
): void {
  const incremental = options.incremental;
  if (!incremental) return;
  const outputs = options.outputs.join(', ');
  context.log.log(
    'info',
    'sql.build',
    build.mode === 'partial'
      ? `${context.stepId}: ${build.changed.length} partition(s) of ${incremental.from} changed: rebuilding ${build.keys?.length ?? 0} partition(s) of ${outputs}${build.reads ? ` from ${build.reads.map((r) => `${r.values.length} partition(s) of ${r.source.name}`).join(', ')}` : ''}`
      : build.mode === 'fold'
        ? `${context.stepId}: folding ${build.changed.length} new or rewritten partition(s) of ${incremental.from} into ${outputs}`
        : `${context.stepId}: building everything (${build.reason ?? 'first build'})`,
    {
      step: context.stepId,
      mode: build.mode,
      changed: build.changed.length,
      partitions: build.keys?.length ?? null,
      ...(build.reads
        ? { reads: Object.fromEntries(build.reads.map((r) => [r.source.name, r.values.length])) }
        : {}),
    },
  );
}

/** Views `previous_<output>` of the outputs as they are, for a fold file. */
async function previousViews(
  db: Database,
  outputs: readonly string[],
  output: string,
  files: FolderFiles,
): Promise<void> {
  for (const table of outputs) {
    const folder = join(output, DERIVED_FOLDER, table);
    await db.run(
      `CREATE OR REPLACE TEMP VIEW ${quotedIdentifier(`previous_${table}`)} AS ${await datasetQuery(db, await datasetLayout(folder, files), undefined, files)}`,
    );
  }
}

/** The rows of the datasets a SQL text names (its outputs aside). */
async function inputRows(
  db: Database,
  text: string,
  outputs: readonly string[],
  context: StepContext,
): Promise<number> {
  let rows = 0;
  for (const dataset of namedIn(text, await context.datasets())) {
    if (outputs.includes(dataset.name)) continue;
    const [count] = await db.all(`SELECT count(*) AS n FROM ${quotedIdentifier(dataset.name)}`);
    rows += Number(count?.['n'] ?? 0);
  }
  return rows;
}
