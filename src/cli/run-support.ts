/** What `road-etl run` needs besides its command: taking a folder's lock, showing its paths, a definition's name. */
import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { parse } from 'yaml';
import { FolderInUseError, InterruptedError } from '../errors.js';
import type { RunSummary } from '../pipeline/summary.js';
import type { HeldLock, ObjectStore } from '../store/store.js';
import type { CommonArgs, loggerFor } from './common.js';
import type { LogFields, Logger } from '../log.js';

/**
 * The `name` a definition file gives itself, read as plain YAML (null when it
 * cannot be read or has none): a run refused before its definition is valid
 * still names the pipeline in its summary.
 */
export function definitionName(file: string): string | null {
  try {
    const name = (parse(readFileSync(file, 'utf8')) as { name?: unknown } | null)?.name;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    return null;
  }
}

/** A run on a local copy of a folder in an object store. */
import type { FolderFiles } from '../duckdb/folder-files.js';

/** The arguments of `road-etl run`. */
export interface RunArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
  reset: string[] | undefined;
  'accept-upstream': string[] | undefined;
  'dry-run': boolean;
  'wait-for-lock': number | undefined;
  repair: string[] | undefined;
}

export interface StoreRun {
  url: string;
  /** The id of the commit the put makes. */
  commit: string;
  /** Puts the local copy back. */
  put(): Promise<void>;
  /** The local copy as the folder's listing: with the commit's files not fetched. */
  files: FolderFiles;
}

/** Text with the output folder's URL (or path) where the local copy's paths are. */
export function shownText(text: string, local: string, url: string): string {
  return text.replaceAll(local, url.replace(/\/$/, ''));
}

/** A logger that names the output folder as the user did where the local copy's paths are. */
export function showingAt(logger: Logger, local: string, url: string): Logger {
  const shown = (text: string) => shownText(text, local, url);
  return {
    interactive: logger.interactive,
    log: (level, event, message, fields) =>
      logger.log(
        level,
        event,
        shown(message),
        fields && (JSON.parse(shown(JSON.stringify(fields))) as LogFields),
      ),
  };
}

/** The summary with the store's URL where the local copy's paths are. */
export function shownAt(summary: RunSummary, local: string, url: string): RunSummary {
  const at = (path: string | undefined): string | undefined =>
    path === undefined
      ? undefined
      : url.replace(/\/?$/, '/') + relative(local, path).split(sep).join('/');
  const manifest = at(summary.manifest);
  const report = at(summary.report);
  return {
    ...summary,
    ...(summary.error === undefined ? {} : { error: shownText(summary.error, local, url) }),
    output: url,
    ...(manifest ? { manifest } : {}),
    ...(report ? { report } : {}),
  };
}

/**
 * The store's lock; with `seconds` > 0, a folder held by another run is
 * waited for (asked again every 2 s) up to that long; `waiting` is told once.
 */
export async function lockWaiting(
  store: ObjectStore,
  pipeline: string,
  options: {
    seconds: number;
    logger: ReturnType<typeof loggerFor>;
    signal: AbortSignal;
    waiting: () => void;
  },
): Promise<HeldLock> {
  const { seconds, logger, signal } = options;
  const deadline = Date.now() + Math.max(0, seconds) * 1000;
  let told = false;
  for (;;) {
    if (signal.aborted) throw new InterruptedError(String(signal.reason ?? 'a signal'));
    try {
      return await store.lock(pipeline);
    } catch (error) {
      if (!(error instanceof FolderInUseError) || Date.now() >= deadline) throw error;
      if (!told) {
        logger.log('info', 'lock.wait', `${error.message}: waiting for it, up to ${seconds} s`);
        options.waiting();
      }
      told = true;
      await new Promise((wake) => setTimeout(wake, 2000));
    }
  }
}

/**
 * Runs `work` with SIGTERM and SIGINT aborting `controller`: the run finishes
 * the unit of work in hand and stops; a second signal stops the process at once.
 */
export async function onSignals<T>(
  controller: AbortController,
  logger: ReturnType<typeof loggerFor>,
  work: () => Promise<T>,
): Promise<T> {
  const stop = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(1); // a second signal: stop now
    logger.log(
      'warn',
      'run.interrupt',
      `${signal} received: finishing the current unit of work, then stopping`,
      { signal },
    );
    controller.abort(signal);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    return await work();
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}
