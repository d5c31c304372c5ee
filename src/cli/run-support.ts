/** What `road-etl run` needs besides its command: taking turns on a folder, a store's paths, a definition's name. */
import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { parse } from 'yaml';
import { FolderInUseError, InterruptedError } from '../errors.js';
import type { Pipeline } from '../pipeline/build.js';
import { NOTHING_AHEAD, type StagedAhead } from '../pipeline/stage-ahead.js';
import { waitForFolder } from '../store/folder-lock.js';
import type { RunSummary } from '../pipeline/summary.js';
import type { HeldLock, ObjectStore } from '../store/store.js';
import type { loggerFor } from './common.js';

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

/**
 * Runs the pipeline; with `seconds` > 0, a folder held by another run is
 * waited for (up to that long), meanwhile fetching ahead what the run can
 * (`stage`), and the definition built again with the folder's state as that
 * run left it, before the run takes the folder.
 */
export async function takingTurns<T>(
  first: Pipeline,
  rebuild: () => Promise<Pipeline>,
  options: {
    output: string;
    seconds: number;
    controller: AbortController;
    logger: ReturnType<typeof loggerFor>;
    /** Fetches ahead what the run can while it waits (stage-ahead.ts). */
    stage: (pipeline: Pipeline) => Promise<StagedAhead>;
    /** What was fetched ahead already (while waiting for a store's lock). */
    staged?: StagedAhead | undefined;
    run: (pipeline: Pipeline, ahead: StagedAhead) => Promise<T>;
  },
): Promise<T> {
  const { output, controller, logger } = options;
  const waitMs = Math.max(0, options.seconds) * 1000;
  const deadline = Date.now() + waitMs;
  let pipeline = first;
  let ahead: Promise<StagedAhead> | undefined = options.staged && Promise.resolve(options.staged);
  try {
    for (;;) {
      if (waitMs > 0) {
        await waitForFolder(output, {
          timeoutMs: Math.max(0, deadline - Date.now()),
          signal: controller.signal,
          waiting: (holder) => {
            logger.log(
              'info',
              'lock.wait',
              `The output folder is in use by another run (pipeline ${holder.pipeline}, pid ${holder.pid} on ${holder.hostname}): waiting for it, up to ${options.seconds} s`,
              { pipeline: holder.pipeline, pid: holder.pid, hostname: holder.hostname },
            );
            ahead ??= options.stage(pipeline);
          },
        }).catch((error: unknown) => {
          if (controller.signal.aborted)
            throw new InterruptedError(String(controller.signal.reason ?? 'a signal'));
          throw error;
        });
        // What is being fetched ahead is fetched to the end, then the folder taken.
        await ahead;
        pipeline = await rebuild();
      }
      try {
        return await options.run(pipeline, (await ahead) ?? NOTHING_AHEAD);
      } catch (error) {
        // Taken by another run between the wait and the lock: wait again.
        if (error instanceof FolderInUseError && waitMs > 0 && Date.now() < deadline) continue;
        throw error;
      }
    }
  } finally {
    await (await ahead)?.close();
  }
}

/** A run on a local copy of a folder in an object store. */
import type { FolderFiles } from '../duckdb/folder-files.js';

export interface StoreRun {
  url: string;
  /** Puts the local copy back. */
  put(): Promise<void>;
  /** The local copy as the folder's listing: with the commit's files not fetched. */
  files: FolderFiles;
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
