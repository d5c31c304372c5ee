/**
 * Keeps the files of signs/events at a useful size. A unit lands a file in
 * every month it spans, and every night lands one more, so a month collects
 * many small files, and every query pays for each. When the step has landed
 * its units, the small files of a step in one publication_month partition are
 * merged into one.
 *
 * The merge is made in the run's copy of the folder (a killed run leaves the
 * last commit as it was): the merged file is written under a temporary name,
 * renamed into place, and the files it replaces are removed. It is named after
 * the first unit it holds, so the rules that find a step's files (and its
 * unrecorded units) still apply.
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { commitFile, temporaryPath } from '../../util/fs.js';
import { comparePositions, EVENTS_DATASET, parseUnitFile, unitStem } from './landing.js';
import { portableCopySql } from '../../duckdb/portable.js';
import { namesIn, type FolderFiles } from '../../duckdb/folder-files.js';

/** Files at least this large are of a useful size already, and are left as they are. */
const SMALL_FILE_BYTES = 32 * 2 ** 20;
/** A merged file holds at most about this much. */
const MERGED_BYTES = 128 * 2 ** 20;

export interface CompactionPaths {
  output: string;
  /** Where the folder is listed and files are removed. */
  files: FolderFiles;
  /** Where temporary files are written (on the output's file system). */
  scratch: string;
}

export interface Compacted {
  partitions: number;
  /** Files merged away (replaced by fewer). */
  replaced: number;
  /** The merged files, absolute. */
  merged: string[];
}

/** A step's files in one partition, in feed order, with their sizes. */
function stepFiles(
  files: FolderFiles,
  folder: string,
  stepId: string,
): { name: string; bytes: number }[] {
  const found: { name: string; bytes: number; start: { ms: number; index: number } }[] = [];
  for (const entry of files.list(folder)) {
    const start = entry.folder ? undefined : parseUnitFile(stepId, entry.name);
    if (!start) continue;
    const bytes = files.size(join(folder, entry.name));
    if (bytes !== undefined) found.push({ name: entry.name, bytes, start });
  }
  return found.sort((a, b) => comparePositions(a.start, b.start) || a.name.localeCompare(b.name));
}

/** Consecutive runs of small files, each at most about MERGED_BYTES: what is merged into one. */
function groups(files: readonly { name: string; bytes: number }[]): string[][] {
  const out: string[][] = [];
  let group: string[] = [];
  let bytes = 0;
  for (const file of files) {
    if (file.bytes >= SMALL_FILE_BYTES || bytes + file.bytes > MERGED_BYTES) {
      if (group.length > 1) out.push(group);
      group = [];
      bytes = 0;
      if (file.bytes >= SMALL_FILE_BYTES) continue;
    }
    group.push(file.name);
    bytes += file.bytes;
  }
  if (group.length > 1) out.push(group);
  return out;
}

/** The name of the file that replaces `names`: the first unit's, marked with a digest of the names. */
function mergedName(stepId: string, names: readonly string[]): string {
  const start = parseUnitFile(stepId, names[0]!)!;
  const digest = createHash('sha256').update(names.join('\n')).digest('hex').slice(0, 8);
  return `${unitStem(stepId, start)}-m${digest}.parquet`;
}

/**
 * Merges the small files of a step in each partition of signs/events. Only for
 * a step whose files are all recorded (its units landed and in its checkpoint).
 */
export async function compactEvents(
  db: Database,
  paths: CompactionPaths,
  stepId: string,
  signal: AbortSignal,
): Promise<Compacted> {
  const result: Compacted = { partitions: 0, replaced: 0, merged: [] };
  const root = join(paths.output, EVENTS_DATASET);
  for (const partition of namesIn(paths.files, root)) {
    if (!partition.includes('=')) continue;
    const folder = join(root, partition);
    const planned = groups(stepFiles(paths.files, folder, stepId));
    if (planned.length > 0) result.partitions++;
    for (const names of planned) {
      signal.throwIfAborted();
      const merged = mergedName(stepId, names);
      const target = join(folder, merged);
      const temporary = temporaryPath(target, paths.scratch);
      try {
        await paths.files.bring(names.map((name) => join(folder, name)));
        const files = names.map((name) => quotedString(join(folder, name))).join(', ');
        await db.run(
          await portableCopySql(
            db,
            `(SELECT * FROM read_parquet([${files}], union_by_name = true, hive_partitioning = false))`,
            temporary,
          ),
        );
        await commitFile(temporary, target);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
      for (const name of names) await paths.files.remove(join(folder, name));
      result.replaced += names.length;
      result.merged.push(target);
    }
  }
  return result;
}
