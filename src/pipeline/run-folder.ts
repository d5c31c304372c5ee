/** The run's DuckDB over the output folder, and the upgrade of what earlier versions wrote there. */
import { join } from 'node:path';
import type { Database, DatabaseOptions } from '../duckdb/database.js';
import { discoverDatasets } from '../duckdb/datasets.js';
import { openOutputFolder, type OutputFolder, type PlaceholderViews } from '../duckdb/folder.js';
import { formatSize, parseSize } from '../duckdb/memory.js';
import { portableTypes } from '../duckdb/upgrade.js';
import { STATE_FOLDER, scratchFolder } from '../layout.js';
import type { Logger } from '../log.js';
import { DATASET_VIEWS } from '../sources/views.js';
import { STEP_KINDS } from '../steps/registry.js';
import { makeFolder } from '../util/fs.js';
import type { Pipeline } from './build.js';

/** The DuckDB of a run (and its report): the definition's budget and threads, spilling under .state/. */
export function runDatabaseOptions(pipeline: Pipeline, output: string): DatabaseOptions {
  const { memory_limit: limit, threads } = pipeline.duckdb;
  return {
    budget: limit === undefined ? undefined : parseSize(limit),
    threads,
    tempDirectory: join(output, STATE_FOLDER, 'duckdb-tmp'),
  };
}

/** The run's DuckDB over the output folder, within the definition's budget, spilling under .state/. */
export async function openRunFolder(
  pipeline: Pipeline,
  output: string,
  logger: Logger,
): Promise<OutputFolder> {
  await makeFolder(join(output, STATE_FOLDER, 'duckdb-tmp'));
  // Every dataset road-etl knows is a view, empty until extracted, so SQL can name it.
  const placeholders: PlaceholderViews = Object.fromEntries(
    [...STEP_KINDS.values()].flatMap((k) => Object.entries(k.views ?? {})),
  );
  const folder = await openOutputFolder(output, {
    database: runDatabaseOptions(pipeline, output),
    derived: DATASET_VIEWS,
    placeholders,
    views: false,
  });
  const { budget, memoryLimit, threads, wanted } = folder.db.memory;
  logger.log(
    'info',
    'duckdb.memory',
    `Memory budget ${formatSize(budget)}: DuckDB ${formatSize(memoryLimit)}, ${threads} thread${threads === 1 ? '' : 's'}` +
      (threads < wanted ? ` (of ${wanted}: the budget feeds no more)` : ''),
    { budget, memory_limit: memoryLimit, threads, threads_wanted: wanted },
  );
  return folder;
}

/**
 * Brings the datasets an earlier version wrote to today's layout, for every
 * kind of the definition (selected or not: a later step may read them), before
 * any view is made over them.
 */
export async function upgradeDatasets(
  pipeline: Pipeline,
  output: string,
  logger: Logger,
  open: () => Promise<Database>,
): Promise<void> {
  const kinds = [...new Set(pipeline.steps.map((s) => s.kind))].filter(
    (k) => k.upgrade !== undefined,
  );
  const datasets = await discoverDatasets(output);
  if (kinds.length === 0 && datasets.length === 0) return;
  // The run's own DuckDB, before it has any view: the files change under it here.
  const db = await open();
  const scratch = scratchFolder(output);
  for (const dataset of datasets) {
    const rewritten = await portableTypes(db, dataset.folder, scratch);
    if (rewritten > 0)
      logger.log(
        'info',
        'upgrade.types',
        `${dataset.relative}: ${rewritten} file(s) of an earlier version rewritten as this one writes them (ids and JSON as text, GeoParquet 1.1)`,
        { dataset: dataset.relative, files: rewritten },
      );
  }
  for (const kind of kinds) await kind.upgrade?.({ output, scratch, db, log: logger });
}
