/** The run's DuckDB over the output folder. */
import { join } from 'node:path';
import type { Database, DatabaseOptions } from '../duckdb/database.js';
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import { PartitionIndex } from '../duckdb/partitions.js';
import { DISK, type FolderFiles } from '../duckdb/folder-files.js';
import { openOutputFolder, type OutputFolder, type EmptyViews } from '../duckdb/folder.js';
import { formatSize, parseSize } from '../duckdb/memory.js';
import { STATE_FOLDER } from '../layout.js';
import type { Logger } from '../log.js';
import { DATASET_VIEWS } from '../sources/views.js';
import { STEP_KINDS } from '../steps/registry.js';
import { makeFolder } from '../util/fs.js';
import type { Pipeline } from './build.js';

/** The folder as the decisions of a plan see it: its DuckDB, datasets and partitions. */
export interface FolderView {
  database(): Promise<Database>;
  datasets(): Promise<readonly Dataset[]>;
  partitions: PartitionIndex;
}

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
  files: FolderFiles,
): Promise<OutputFolder> {
  await makeFolder(join(output, STATE_FOLDER, 'duckdb-tmp'));
  // Every dataset road-etl knows is a view, empty until extracted, so SQL can name it.
  const empty: EmptyViews = Object.fromEntries(
    [...STEP_KINDS.values()].flatMap((k) => Object.entries(k.views ?? {})),
  );
  const folder = await openOutputFolder(output, {
    database: runDatabaseOptions(pipeline, output),
    derived: DATASET_VIEWS,
    empty,
    views: false,
    files,
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
 * The folder as a plan's decisions see it (FolderView): a DuckDB of its own
 * over the folder's datasets, in memory (nothing is written in the folder).
 */
export async function openPlanFolder(
  output: string,
  files: FolderFiles = DISK,
): Promise<FolderView & { close(): void }> {
  const empty: EmptyViews = Object.fromEntries(
    [...STEP_KINDS.values()].flatMap((k) => Object.entries(k.views ?? {})),
  );
  const folder = await openOutputFolder(output, {
    derived: DATASET_VIEWS,
    empty,
    views: false,
    files,
  });
  let discovered: Promise<readonly Dataset[]> | undefined;
  const datasets = () => (discovered ??= discoverDatasets(output, files));
  return {
    datasets,
    database: async () => {
      await folder.refresh(await datasets());
      return folder.db;
    },
    partitions: new PartitionIndex(files),
    close: () => folder.close(),
  };
}
