/**
 * Where road-etl keeps its own files in an output folder: checkpoints, the
 * lock, staging and temporaries all live under `.state/`, apart from the
 * datasets users read.
 */
import { join } from 'node:path';

export const STATE_FOLDER = '.state';

/**
 * The folder's scratch folder: files are written there and renamed into place
 * when whole. Never part of a commit.
 */
export function scratchFolder(output: string): string {
  return join(output, STATE_FOLDER, 'tmp');
}

/** A step's staging folder: what it has fetched but not yet landed. Never part of a commit. */
export function stagingFolder(output: string, stepId: string): string {
  return join(output, STATE_FOLDER, 'staging', stepId);
}
