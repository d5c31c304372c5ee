/**
 * A step's reads brought to a local copy of a folder in an object store
 * before the step runs: the partitions its decision says it reads, of each
 * dataset (all of them, where the pipeline does not narrow them).
 */
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import type { Logger } from '../log.js';
import type { PartitionSet } from '../steps/step-kind.js';
import type { FolderFiles } from '../duckdb/folder-files.js';

/** Fetches the partitions of a dataset folder (all, or those of these values); resolves to the files fetched. */
export type FetchReads = (
  folder: string,
  partitions: readonly string[] | 'all',
) => Promise<readonly string[]>;

export async function fetchDecisionReads(
  fetchReads: FetchReads,
  datasets: readonly Dataset[],
  { stepId, reads, logger }: { stepId: string; reads: readonly PartitionSet[]; logger: Logger },
): Promise<string[]> {
  const fetched: string[] = [];
  for (const read of reads) {
    const dataset = datasets.find((d) => d.name === read.dataset);
    if (dataset) fetched.push(...(await fetchReads(dataset.folder, read.partitions)));
  }
  if (fetched.length > 0)
    logger.log('info', 'store.fetch', `${stepId}: fetched the ${fetched.length} file(s) it reads`, {
      step: stepId,
      fetched: fetched.length,
    });
  return fetched;
}

/** Fetches every dataset of the folder `output` (what reads them all: the run's report). */
export async function fetchEveryDataset(
  output: string,
  fetchReads: FetchReads,
  logger: Logger,
  files: FolderFiles,
): Promise<string[]> {
  const datasets = await discoverDatasets(output, files);
  return fetchDecisionReads(fetchReads, datasets, {
    stepId: 'the report',
    reads: datasets.map((d) => ({ dataset: d.name, partitions: 'all' })),
    logger,
  });
}
