/**
 * What a run writes about the folder besides the manifest: `views.sql` (the
 * views of `road-etl query` for plain DuckDB) and, where there are extracts,
 * `exports/dataset.jsonld` (their DCAT description).
 */
import { openOutputFolder, type OutputFolder } from '../duckdb/folder.js';
import { VIEWS_FILE, writeViewsScript } from '../duckdb/views-script.js';
import { explainIoError } from '../errors.js';
import { DATASET_VIEWS } from '../sources/views.js';
import type { Pipeline } from './build.js';
import { DATASET_DESCRIPTION, writeDatasetDescription } from './dataset-description.js';
import type { ManifestWriter } from './manifest.js';
import { recordWritten, type FolderFiles } from '../duckdb/folder-files.js';
import { join } from 'node:path';

/**
 * Writes views.sql and, where there are extracts, exports/dataset.jsonld (then
 * listed again with the extracts), from one DuckDB over the folder as `road-etl
 * query` opens it. Resolves to what went wrong, if anything.
 */
export async function describeFolder(
  output: string,
  pipeline: Pipeline,
  writer: ManifestWriter | undefined,
  files: FolderFiles,
): Promise<Error | undefined> {
  let folder: OutputFolder;
  try {
    folder = await openOutputFolder(output, { derived: DATASET_VIEWS, listed: true, files });
  } catch (error) {
    return explainIoError(error, `writing ${VIEWS_FILE}`);
  }
  try {
    await writeViewsScript(folder.db, output, folder.named);
    await recordWritten(files, join(output, VIEWS_FILE));
    if (
      writer &&
      (await writeDatasetDescription(folder.db, { output, files }, pipeline, writer.exports))
    ) {
      await recordWritten(files, join(output, DATASET_DESCRIPTION));
      writer.relist();
    }
    return undefined;
  } catch (error) {
    return explainIoError(error, `writing ${VIEWS_FILE} and ${DATASET_DESCRIPTION}`);
  } finally {
    folder.close();
  }
}
