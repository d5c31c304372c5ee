/**
 * The files of an output folder as its commit names them: each data file of
 * a folder written by `road-etl run` is an object named by its version
 * (`data.v20261002T031500Z-3f9a1c.parquet` for `data.parquet`).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fetchFolder } from '../../src/store/sync.js';
import type { ObjectStore } from '../../src/store/store.js';
import { WorkingCopy } from '../../src/store/working-copy.js';

interface CommitFiles {
  files: Record<string, { key: string }>;
  state: Record<string, string>;
}

function commitOf(output: string): CommitFiles | undefined {
  const file = join(output, '.state', 'commit.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as CommitFiles) : undefined;
}

/**
 * Where the file `path` (relative, with `/`) of the folder lies: its object
 * in a committed folder, the path itself in a folder written without a
 * commit (a pipeline run by the library, a copy made by hand).
 */
export function committed(output: string, path: string): string {
  const commit = commitOf(output);
  if (!commit) return join(output, ...path.split('/'));
  const held = commit.files[path];
  if (!held) throw new Error(`${path} is not a file of the last commit of ${output}`);
  return join(output, ...held.key.split('/'));
}

/** The files of the folder's last commit (relative paths with `/`), sorted. */
export function committedPaths(output: string): string[] {
  return Object.keys(commitOf(output)?.files ?? {}).sort();
}

/** The text of the state file `.state/<name>`: held in the commit of a committed folder. */
export function stateText(output: string, name: string): string {
  const commit = commitOf(output);
  const key = `.state/${name}`;
  if (!commit) return readFileSync(join(output, '.state', name), 'utf8');
  const text = commit.state[key];
  if (text === undefined) throw new Error(`${key} is not in the last commit of ${output}`);
  return text;
}

/** The names of the folder's state files (`.state/<name>`, held in the commit of a committed folder). */
export function stateNames(output: string): string[] {
  const commit = commitOf(output);
  if (!commit) return readdirSync(join(output, '.state'));
  return Object.keys(commit.state)
    .filter((key) => /^\.state\/[^/]+$/.test(key))
    .map((key) => key.slice('.state/'.length));
}

/**
 * Whether a reader saw one commit: each daily total is the sum of the hourly
 * counts it reads, and each sum of hourly counts has its daily total (0 rows
 * apart), with how many daily rows there are.
 */
export const ONE_COMMIT = `SELECT (SELECT count(*) FROM bicycle_daily) AS daily, count(*) AS apart FROM (
  (SELECT location_id, local_date, category, subcategory, total FROM bicycle_daily
   EXCEPT ALL SELECT location_id, local_date, category, subcategory, sum(value) FROM bicycle_hourly GROUP BY ALL)
  UNION ALL
  (SELECT location_id, local_date, category, subcategory, sum(value) FROM bicycle_hourly GROUP BY ALL
   EXCEPT ALL SELECT location_id, local_date, category, subcategory, total FROM bicycle_daily))`;

/**
 * Fetches the store's last commit whole into `local` (every file, as a reader
 * who copies the folder has it); resolves to the night's folder over it and
 * what was fetched (for a put).
 */
export async function fetchCommit(store: ObjectStore, local: string) {
  const working = new WorkingCopy(store, local);
  const fetched = await fetchFolder(store, local, working);
  await working.bring([...working.folder.keys()].map((path) => join(local, ...path.split('/'))));
  return { working, fetched };
}
