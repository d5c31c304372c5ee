/**
 * Why a step failed, as the run reports it: with the repair that runs as
 * printed, where a file of the folder is damaged or an object of its commit lost.
 */
import { datasetOfFile, explainDamagedFile } from '../duckdb/damaged.js';
import { join } from 'node:path';
import { explainOutOfMemory, type DuckDbMemory } from '../duckdb/memory.js';
import {
  InputError,
  InterruptedError,
  MissingObjectError,
  RunError,
  explainIoError,
} from '../errors.js';
import type { Pipeline } from './build.js';
import { REPAIR_DOES, isDataFile, repairCommand } from './repair.js';

export function stepFailure(
  error: unknown,
  stepId: string,
  run: {
    pipeline: Pipeline;
    output: string;
    /** The output folder as the user named it (a store's URL). */
    shown?: string | undefined;
    signal: AbortSignal;
    memory: DuckDbMemory | undefined;
  },
): Error {
  const { pipeline, output, shown, signal } = run;
  if (signal.aborted) return new InterruptedError(String(signal.reason ?? 'a signal'));
  const repair = (file: string, dataset: string | undefined): string =>
    `${repairCommand(pipeline, shown ?? output, file, dataset)} (${REPAIR_DOES})`;
  // An object of the folder's commit that the store no longer has, met as the step fetched it.
  if (error instanceof MissingObjectError && !error.message.includes(REPAIR_DOES))
    return new MissingObjectError(error.url, error.key, {
      cause: error,
      path: error.path,
      changed: error.changed,
      ...(isDataFile(error.path)
        ? {
            repair: repair(
              error.path,
              datasetOfFile(output, join(output, ...error.path.split('/'))),
            ),
          }
        : {}),
    });
  return (
    explainOutOfMemory(error, `step ${stepId}`, run.memory) ??
    explainDamagedFile(error, output, (file, dataset) => `run: ${repair(file, dataset)}`) ??
    explainIoError(afterStart(error), `step ${stepId}`)
  );
}

/**
 * A problem of the input found only once the run has started (a selection that
 * matches nothing in the catalog just fetched): the lock, state and manifest
 * are written by then, so it is a failed run (exit 1), not bad input (exit 2,
 * which promises that nothing was written).
 */
function afterStart(error: unknown): unknown {
  return error instanceof InputError ? new RunError(error.message, { cause: error }) : error;
}
