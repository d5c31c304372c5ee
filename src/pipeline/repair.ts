/**
 * Repairing a folder that holds a damaged file, or whose bucket lost one:
 * `road-etl run ... --repair FILE` removes that file alone (saying so) before
 * the run, which fetches or builds again what it held where its steps can:
 * a sql table's partitions are built anew, the bicycle counts of the period
 * given are fetched again. The repair road-etl prints is a command that runs
 * as printed: this run's pipeline and params (the period of the file's
 * partition, for the bicycle counts), never a --reset.
 */
import { join, relative } from 'node:path';
import type { Logger } from '../log.js';
import type { FolderFiles } from '../duckdb/folder-files.js';
import type { ParamValue } from '../config/params.js';
import { InputError } from '../errors.js';
import type { Pipeline } from './build.js';
import { datasetOfFile } from '../duckdb/damaged.js';

/** A data file of the folder, as --repair names it: relative, under a dataset folder, Parquet. */
export function repairPath(path: string): string {
  // An object's name (`data.v20261002T031500Z-3f9a1c.parquet`) stands for its file's.
  const key = path
    .replaceAll('\\', '/')
    .replace(/^\.\//, '')
    .replace(/\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/, '.parquet');
  const parts = key.split('/');
  if (
    key.startsWith('/') ||
    parts.some((p) => p === '..' || p === '' || p.startsWith('.')) ||
    !key.endsWith('.parquet') ||
    parts[0] === 'exports' ||
    parts.length < 3
  )
    throw new InputError(
      `--repair ${path}: names a Parquet file of a dataset, relative to the output folder (for example bicycle/measurements/date=2026-10-02/data.parquet)`,
    );
  return key;
}

/** Whether `path` is a data file of the folder, which --repair fetches or builds again. */
export function isDataFile(path: string): boolean {
  try {
    repairPath(path);
    return true;
  } catch {
    return false;
  }
}

/** A value as a shell word: quoted where it holds anything but plain characters. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function paramText(value: ParamValue): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** The step of the pipeline that writes a dataset (its view's name), if one does. */
function writerOf(pipeline: Pipeline, dataset: string) {
  return pipeline.steps.find((s) => {
    const outputs = (s.options as { outputs?: unknown }).outputs;
    return (
      Object.keys(s.kind.views ?? {}).includes(dataset) ||
      (Array.isArray(outputs) && outputs.includes(dataset))
    );
  });
}

/**
 * The command that repairs the folder `output` (as the user names it) of the
 * file `file` (relative) of `dataset`: this run again, with --repair.
 */
export function repairCommand(
  pipeline: Pipeline,
  output: string,
  file: string,
  dataset: string | undefined,
): string {
  const step = dataset === undefined ? undefined : writerOf(pipeline, dataset);
  const params: Record<string, ParamValue> = { ...pipeline.params };
  const value = /\/[^/=]+=([^/]+)\/[^/]+$/.exec(file)?.[1];
  const period = value === undefined ? undefined : step?.kind.repairPeriod?.(value);
  if (period && 'start' in params && 'end' in params) Object.assign(params, period);
  const near = relative(process.cwd(), pipeline.file);
  const words = [
    'road-etl run',
    shellWord(near.startsWith('..') ? pipeline.file : near),
    '--output',
    shellWord(output),
    ...Object.entries(params)
      .filter(([, v]) => v !== null && v !== '')
      .map(([k, v]) => `--param ${shellWord(`${k}=${paramText(v)}`)}`),
    '--repair',
    shellWord(file),
  ];
  return words.join(' ');
}

/**
 * What a repair of `file` (relative) loses for good, in words: undefined
 * where the step that writes it fetches or builds again what it held.
 */
export function repairLoses(pipeline: Pipeline, file: string): string | undefined {
  const partition = /=([^/]+)\/[^/]+$/.exec(file)?.[1];
  // (the dataset as a damaged file's names it: the path relative to the folder)
  const dataset = datasetOfFile('.', join(...file.split('/')));
  const step = dataset === undefined ? undefined : writerOf(pipeline, dataset);
  return step?.kind.repairLoses?.(partition);
}

/**
 * --repair: the data files named are removed, said first, once the run holds
 * the folder; its steps then fetch or build again what they held. What a
 * file held that no step can fetch again is named first (warn).
 */
export async function removeRepaired(
  pipeline: Pipeline,
  output: string,
  paths: readonly string[],
  { logger, files }: { logger: Logger; files: FolderFiles },
): Promise<void> {
  for (const path of paths) {
    const key = repairPath(path);
    const lost = repairLoses(pipeline, key);
    if (lost)
      logger.log(
        'warn',
        'run.repair',
        `--repair ${key}: removes ${lost}; no step can fetch it again`,
        { file: key, lost },
      );
    await files.remove(join(output, ...key.split('/')));
    logger.log(
      'warn',
      'run.repair',
      `--repair: removed ${key} (and no other file); ${lost ? 'what it held is gone' : 'the steps fetch or build again what it held'}`,
      { file: key },
    );
  }
}

/** What a repair does, in words, after its command. */
export const REPAIR_DOES =
  'it removes that file alone, keeps every other partition and night, and fetches or builds again what the file held where the steps can (a sql table is built anew; the bicycle counts of the period given and the events of the v1 feed are fetched again; a past snapshot of the current state cannot be, and the run says so before it removes one)';
