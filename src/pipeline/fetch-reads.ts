/**
 * A step's reads brought here before it runs: the files of the partitions its
 * decision says it reads, of each dataset (all of them, where the pipeline
 * does not narrow them), as the folder's listing names them. On a disk they
 * are here; a local copy of a folder in an object store fetches them.
 */
import { join } from 'node:path';
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import { namesIn, type FolderFiles } from '../duckdb/folder-files.js';
import { PartitionIndex, partitionFolder, partitionNames } from '../duckdb/partitions.js';
import type { Logger } from '../log.js';
import type { PartitionSet } from '../steps/step-kind.js';

/** The files of a dataset's partitions (all, or those of these values). */
function readFiles(index: PartitionIndex, folder: string, partitions: PartitionSet['partitions']) {
  const { column } = partitionNames(namesIn(index.folderFiles, folder));
  if (partitions === 'all' || column === undefined) return index.files(folder);
  return partitions.flatMap((value) => index.filesIn(join(folder, partitionFolder(column, value))));
}

/**
 * Brings the files `reads` names; resolves to those fetched for it (none on a
 * disk) and the bytes of all the files read.
 */
export async function bringReads(
  index: PartitionIndex,
  datasets: readonly Pick<Dataset, 'name' | 'folder'>[],
  { stepId, reads, logger }: { stepId: string; reads: readonly PartitionSet[]; logger: Logger },
): Promise<{ fetched: readonly string[]; bytes: number }> {
  const wanted: string[] = [];
  for (const read of reads) {
    const dataset = datasets.find((d) => d.name === read.dataset);
    if (dataset) wanted.push(...readFiles(index, dataset.folder, read.partitions));
  }
  const fetched = await index.folderFiles.bring(wanted);
  if (fetched.length > 0)
    logger.log('info', 'store.fetch', `${stepId}: fetched the ${fetched.length} file(s) it reads`, {
      step: stepId,
      fetched: fetched.length,
    });
  let bytes = 0;
  for (const file of wanted) bytes += index.folderFiles.size(file) ?? 0;
  return { fetched, bytes };
}

/** Brings every file of these datasets of the folder `output` (all of them when none are named). */
export async function bringDatasets(
  output: string,
  files: FolderFiles,
  { reader, logger, names }: { reader: string; logger: Logger; names?: readonly string[] },
): Promise<void> {
  const datasets = await discoverDatasets(output, files);
  const read = names ? datasets.filter((d) => names.includes(d.name)) : datasets;
  await bringReads(new PartitionIndex(files), datasets, {
    stepId: reader,
    reads: read.map((d) => ({ dataset: d.name, partitions: 'all' })),
    logger,
  });
}
