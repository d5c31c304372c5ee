/**
 * Where road-etl keeps its own files in an output folder: checkpoints, the
 * lock, staging and temporaries all live under `.state/`, apart from the
 * datasets users read.
 */
import { join } from 'node:path';

export const STATE_FOLDER = '.state';

/**
 * The output folder's scratch folder: files are written there and renamed into
 * place when whole, so that a killed run leaves nothing half-written where
 * users look. Cleared at the start of every run.
 */
export function scratchFolder(output: string): string {
  return join(output, STATE_FOLDER, 'tmp');
}

/** A step's staging folder: what it has fetched but not yet landed, kept across a crash. */
export function stagingFolder(output: string, stepId: string): string {
  return join(output, STATE_FOLDER, 'staging', stepId);
}
