/**
 * Files of the output folder that DuckDB cannot read (cut short by a disk, a
 * copy or a hand): found from DuckDB's own words, and named with what repairs
 * the folder.
 */
import { relative, sep } from 'node:path';
import { RunError } from '../errors.js';
import { DERIVED_FOLDER } from './datasets.js';

/** A file of a dataset that cannot be read. Exit 1; the message says what repairs it. */
export class DamagedFileError extends RunError {
  override name = 'DamagedFileError';
  constructor(
    message: string,
    readonly file: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** DuckDB's words for a Parquet file it cannot read, with the file's path. */
const DAMAGED = [
  /No magic bytes found at end of file '([^']+)'/,
  /Footer length error in file '([^']+)'/,
  /File '([^']+)' too small to be a Parquet file/,
  /Invalid Input Error: .*?file '([^']+\.parquet)'/i,
];

/** The file a DuckDB error says it cannot read, and DuckDB's words, when it says so. */
export function damagedFileOf(error: unknown): { file: string; words: string } | undefined {
  const message = error instanceof Error ? error.message : String(error);
  for (const pattern of DAMAGED) {
    const found = pattern.exec(message);
    if (found) return { file: found[1]!, words: found[0] };
  }
  return undefined;
}

/** The dataset a file of the output folder belongs to (its view's name), as discoverDatasets names it. */
export function datasetOfFile(output: string, file: string): string | undefined {
  const parts = relative(output, file).split(sep);
  if (parts[0] === '..' || parts.length < 2) return undefined;
  const folders = parts.slice(0, -1).filter((p) => !p.includes('='));
  if (folders[0] === DERIVED_FOLDER) return folders[1];
  return folders.join('_');
}

/**
 * The error that names a damaged file of the folder and the command that
 * repairs it (`writer`: the step that writes its dataset, when known);
 * undefined when `error` is about no such file.
 */
export function explainDamagedFile(
  error: unknown,
  output: string,
  /** The repair of a file (relative, with `/`) of a dataset, in words: a command that runs as printed. */
  repair: (file: string, dataset: string | undefined) => string,
): DamagedFileError | undefined {
  if (error instanceof DamagedFileError) return error;
  const damaged = damagedFileOf(error);
  if (damaged === undefined || relative(output, damaged.file).startsWith('..')) return undefined;
  const { file, words } = damaged;
  const dataset = datasetOfFile(output, file);
  const key = relative(output, file).split(sep).join('/');
  return new DamagedFileError(
    `The file ${key}${dataset ? ` of dataset ${dataset}` : ''} cannot be read: it is damaged or not Parquet (DuckDB: ${words}). To repair the folder, ${repair(key, dataset)}`,
    file,
    { cause: error },
  );
}
