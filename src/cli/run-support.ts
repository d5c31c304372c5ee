/** What `road-etl run` needs besides its command: its arguments, a definition's name, the signals. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { CommonArgs, loggerFor } from './common.js';

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
