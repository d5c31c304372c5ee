/**
 * The layout an output folder is written in: `.state/format.json` names it.
 * road-etl has no release yet and carries no code that brings an older
 * layout up to date: a folder written in another one is refused (exit 2,
 * nothing written) with the way to rebuild it.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../errors.js';
import { STATE_FOLDER, scratchFolder } from '../layout.js';
import { writeFileAtomic } from '../util/fs.js';

/**
 * The layout this version writes (9: every folder, on disk too, is what its
 * commit names, each data file's version an object of its own, commit.json
 * version 5, named by its id, which checks its own list of files and names
 * every file's content (SHA-256), of which partitions' fingerprints are
 * made; views.sql reading the commit's files; each measured value with the issue that set it apart; a
 * sign's fingerprint a BIGINT; an empty partitioned dataset's file in a
 * partition of its column's type).
 */
export const FOLDER_FORMAT = 9;

const FORMAT_FILE = 'format.json';

/** The layout named by the text of a `format.json` (0 when it names none). */
export function formatNamed(text: string): number {
  try {
    const format = (JSON.parse(text) as { format?: unknown }).format;
    return typeof format === 'number' ? format : 0;
  } catch {
    return 0;
  }
}

/** The layout a folder names; 0 for a folder of road-etl's from before layouts were named; undefined for a new one. */
async function formatOf(output: string): Promise<number | undefined> {
  const state = join(output, STATE_FOLDER);
  const text = await readFile(join(state, FORMAT_FILE), 'utf8').catch(() => undefined);
  if (text !== undefined) return formatNamed(text);
  const states = (await readdir(state).catch(() => [])).filter((n) => n.endsWith('.json'));
  const manifest = await stat(join(output, 'manifest.json')).catch(() => undefined);
  return states.length > 0 || manifest ? 0 : undefined;
}

/**
 * Refuses a folder of another layout than this version's (exit 2), saying how
 * to rebuild it; a new folder, or one of this layout, passes.
 */
export async function checkFolderFormat(output: string, shown = output): Promise<void> {
  const format = await formatOf(output);
  if (format === undefined || format === FOLDER_FORMAT) return;
  throw olderFolder(shown, format);
}

/** The refusal of a folder written in layout `format` (0: before layouts were named). */
export function olderFolder(shown: string, format: number): InputError {
  return new InputError(
    `--output ${shown} was written by ${format === 0 ? 'an earlier' : 'another'} version of road-etl (folder format ${format}; this version writes format ${FOLDER_FORMAT}) and is left as it is. ` +
      `Rebuild it: run the pipelines into a new, empty --output over the same period (the bicycle counts and the sign feed are served again), check it, then replace the old folder with it. ` +
      `Today's API serves no past day: keep the old folder for its signs/live_snapshots and signs_live_history`,
  );
}

/** Names this version's layout in the folder (at every run that writes it). */
export async function writeFolderFormat(output: string): Promise<void> {
  await writeFileAtomic(
    join(output, STATE_FOLDER, FORMAT_FILE),
    `${JSON.stringify({ format: FOLDER_FORMAT })}\n`,
    scratchFolder(output),
  );
}
