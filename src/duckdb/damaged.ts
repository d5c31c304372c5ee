/**
 * Files of the output folder that DuckDB cannot read (cut short by a disk, a
 * copy or a hand): found from DuckDB's own words, or by reading each file's
 * footer, and named with what repairs the folder.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { RunError } from '../errors.js';
import { quotedString, type Database } from './database.js';
import { DERIVED_FOLDER } from './datasets.js';
import type { FileStat } from './fingerprints.js';
import { PartitionIndex } from './partitions.js';

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

/**
 * Whether a Parquet file looks whole: `PAR1` at both ends and a footer that
 * fits in it, what a cut (a full disk, a copy stopped half-way) or a stray
 * write breaks. Read synchronously: a few bytes of each of hundreds of files.
 */
const head = Buffer.alloc(4);
const tail = Buffer.alloc(8);

function looksWhole(file: string): { whole: boolean; stat?: FileStat } {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const stat = fstatSync(fd, { bigint: true });
    const size = Number(stat.size);
    if (size < 12) return { whole: false, stat };
    readSync(fd, head, 0, 4, 0);
    readSync(fd, tail, 0, 8, size - 8);
    const whole =
      head.toString('latin1') === 'PAR1' &&
      tail.toString('latin1', 4) === 'PAR1' &&
      tail.readUInt32LE(0) + 12 <= size;
    return { whole, stat };
  } catch {
    return { whole: false };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The files of a dataset folder that DuckDB cannot read: those that do not
 * look whole (their ends), each confirmed by DuckDB reading its footer. The
 * ends only, so that a nightly check of a year of partitions costs
 * milliseconds; a footer damaged inside a whole-looking file is named when a
 * statement reads it (explainDamagedFile). `whole`: the fingerprints of the
 * partitions (PartitionIndex.scan) when they were last known whole; a
 * partition whose files have the same names, sizes and times is not opened.
 */
export async function damagedFiles(
  db: Database,
  folder: string,
  index: PartitionIndex = new PartitionIndex(),
  whole?: Readonly<Record<string, string>>,
): Promise<string[]> {
  const files = whole ? index.filesChangedSince(folder, whole) : index.files(folder);
  // A file of a folder in an object store not fetched is its commit's (checked when fetched).
  const suspects = files.filter((file) => existsSync(file) && !index.whole(file, looksWhole));
  const damaged: string[] = [];
  for (const file of suspects) {
    const readable = await db
      .all(`SELECT count(*) AS n FROM parquet_file_metadata(${quotedString(file)})`)
      .then(
        () => true,
        () => false,
      );
    if (!readable) damaged.push(file);
  }
  return damaged;
}
