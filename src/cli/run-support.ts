/** What `road-etl run` needs besides its command: taking turns on a folder, a store's paths, a definition's name. */
import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { parse } from 'yaml';
import { FolderInUseError, InterruptedError } from '../errors.js';
import type { Pipeline } from '../pipeline/build.js';
import { waitForFolder } from '../pipeline/state.js';
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
 * waited for (up to that long), and the definition built again with the
 * folder's state as that run left it, before the run takes the folder.
 */
export async function takingTurns<T>(
  first: Pipeline,
  rebuild: () => Promise<Pipeline>,
  options: {
    output: string;
    seconds: number;
    controller: AbortController;
    logger: ReturnType<typeof loggerFor>;
    run: (pipeline: Pipeline) => Promise<T>;
  },
): Promise<T> {
  const { output, controller, logger } = options;
  const waitMs = Math.max(0, options.seconds) * 1000;
  const deadline = Date.now() + waitMs;
  let pipeline = first;
  for (;;) {
    if (waitMs > 0) {
      await waitForFolder(output, {
        timeoutMs: Math.max(0, deadline - Date.now()),
        signal: controller.signal,
        waiting: (holder) =>
          logger.log(
            'info',
            'lock.wait',
            `The output folder is in use by another run (pipeline ${holder.pipeline}, pid ${holder.pid} on ${holder.hostname}): waiting for it, up to ${options.seconds} s`,
            { pipeline: holder.pipeline, pid: holder.pid, hostname: holder.hostname },
          ),
      }).catch((error: unknown) => {
        if (controller.signal.aborted)
          throw new InterruptedError(String(controller.signal.reason ?? 'a signal'));
        throw error;
      });
      pipeline = await rebuild();
    }
    try {
      return await options.run(pipeline);
    } catch (error) {
      // Taken by another run between the wait and the lock: wait again.
      if (error instanceof FolderInUseError && waitMs > 0 && Date.now() < deadline) continue;
      throw error;
    }
  }
}

/** A run on a local copy of a folder in an object store. */
export interface StoreRun {
  url: string;
  /** Puts the local copy back. */
  put(): Promise<void>;
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
 * waited for (asked again every 2 s) up to that long.
 */
export async function lockWaiting(
  store: ObjectStore,
  pipeline: string,
  seconds: number,
  logger: ReturnType<typeof loggerFor>,
): Promise<HeldLock> {
  const deadline = Date.now() + Math.max(0, seconds) * 1000;
  let told = false;
  for (;;) {
    try {
      return await store.lock(pipeline);
    } catch (error) {
      if (!(error instanceof FolderInUseError) || Date.now() >= deadline) throw error;
      if (!told)
        logger.log('info', 'lock.wait', `${error.message}: waiting for it, up to ${seconds} s`);
      told = true;
      await new Promise((wake) => setTimeout(wake, 2000));
    }
  }
}
