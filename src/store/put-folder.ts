/**
 * Puts a night's folder back into its object store as the folder's new
 * commit: the last commit, with what the night's steps wrote and removed
 * (working-copy.ts). sync.ts says how a put stays atomic for readers and for
 * a run killed in it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ObjectStore } from './store.js';
import { PUT_KEY, localOnly, type Fetched } from './sync.js';
import { COMMIT_KEY, COMMIT_VERSION, filesDigest, type Commit } from './commit.js';
import { CommitConflictError } from '../errors.js';
import { transferAll } from './transfer.js';
import type { FolderFile, WorkingCopy } from './working-copy.js';
import { STATE_FOLDER } from '../layout.js';

/** Whether a file is data (a dataset's Parquet), each version of which is an object of its own. */
function versioned(path: string): boolean {
  return path.endsWith('.parquet') && !path.startsWith('exports/');
}

/**
 * A new commit's id, which names the objects its put writes: the time (to the
 * second) and a random part (two runs in a second differ).
 */
export function commitId(at: Date = new Date()): string {
  return `${at.toISOString().replace(/[-:]|\.\d+/g, '')}-${randomBytes(3).toString('hex')}`;
}

/** The object of a file's version written by the commit `id`: data by version, the rest by its path. */
function objectKey(path: string, id: string): string {
  return versioned(path) ? `${path.slice(0, -'.parquet'.length)}.v${id}.parquet` : path;
}

/** The boundaries of a put, in order (tests stop a put at each). */
export type PutPhase = 'uploaded' | 'committed' | 'described';

export interface Put {
  uploaded: number;
  bytes: number;
  removed: number;
}

/** Writes `value` as the object `key`, through a file of the local folder's scratch. */
async function putJson(store: ObjectStore, local: string, key: string, value: unknown) {
  const draft = join(local, STATE_FOLDER, 'tmp', key.replaceAll('/', '_'));
  await mkdir(dirname(draft), { recursive: true });
  await writeFile(draft, JSON.stringify(value));
  await store.upload(draft, key);
  await rm(draft, { force: true });
}

/**
 * The folder's state files (checkpoints, the runs, the extracts known; small
 * JSON), by path: the commit holds their text.
 */
async function stateFiles(local: string): Promise<Commit['state']> {
  const state: Commit['state'] = {};
  const folder = join(local, STATE_FOLDER);
  for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
    const key = `${STATE_FOLDER}/${entry.name}`;
    if (entry.isFile() && entry.name.endsWith('.json') && !localOnly(key))
      state[key] = await readFile(join(folder, entry.name), 'utf8');
  }
  return state;
}

/**
 * `.state/put.json`: the keys a put is about to upload, and those a put
 * killed before it left (listed, and named by no commit), which stay known
 * until a commit names them obsolete.
 */
async function writeDownPut(
  store: ObjectStore,
  local: string,
  startedAt: string,
  keys: readonly string[],
  listed: readonly string[],
  previous: Commit | undefined,
): Promise<void> {
  const committed = new Set(Object.values(previous?.files ?? {}).map((file) => file.key));
  const left = listed.filter((key) => !committed.has(key) && !localOnly(key));
  await putJson(store, local, PUT_KEY, {
    version: 1,
    started_at: startedAt,
    keys: [...new Set([...keys, ...left])],
  });
}

/**
 * Puts the night's folder (`working`, whose local copy is `local`) back as the
 * folder's new commit: the data files written since `fetched.commit`, each
 * at most TRANSFERS at once, as new objects; the commit; the files that keep
 * their names (extracts, the report, the descriptions made from the commit:
 * views.sql, manifest.json), whose commit names them by content, as the
 * store's version of an object not yet written is not known; then the removal
 * of the objects it no longer names. A put refused its commit has
 * overwritten none. `passed` is told of each phase (tests stop a put there).
 */
export async function putFolder(
  store: ObjectStore,
  local: string,
  working: WorkingCopy,
  { commit: previous, parent, listed }: Pick<Fetched, 'commit' | 'parent' | 'listed'>,
  {
    passed = () => undefined,
    id = commitId(),
  }: {
    passed?: (phase: PutPhase) => void;
    /** The new commit's id (commitId), which the run's manifest names. */
    id?: string;
  } = {},
): Promise<Put> {
  const committedAt = new Date().toISOString();
  const state = await stateFiles(local);
  const folder = working.folder;
  const named: Commit['files'] = {};
  const written: [string, FolderFile][] = [];
  for (const [path, file] of folder)
    if (file.written) written.push([path, file]);
    else named[path] = file.committed!;
  const data = written.filter(([path]) => versioned(path));
  const later = written.filter(([path]) => !versioned(path));
  const keys = new Map(written.map(([path]) => [path, objectKey(path, id)]));
  // Written down before the first upload: a put killed half-way leaves no object unknown.
  if (written.length > 0)
    await writeDownPut(store, local, committedAt, [...keys.values()], listed, previous);
  let bytes = 0;
  // Data first, each version a new object: a put failing here changes no object of the folder.
  await transferAll(data, async ([path, file]) => {
    const key = keys.get(path)!;
    const put = await store.upload(join(local, ...path.split('/')), key);
    named[path] = { key, bytes: file.bytes, sha256: file.sha256, version: put.version };
    bytes += file.bytes;
  });
  passed('uploaded');
  for (const [path, file] of later)
    named[path] = { key: path, bytes: file.bytes, sha256: file.sha256 };
  // What road-etl's own commits and puts wrote that this commit no longer names: never
  // an object of someone else's.
  const keysNamed = new Set(Object.values(named).map((file) => file.key));
  const before = Object.values(previous?.files ?? {}).map((file) => file.key);
  const obsolete = [...new Set([...listed, ...before, ...(previous?.obsolete ?? [])])].filter(
    (key) => !localOnly(key) && !keysNamed.has(key),
  );
  const sorted = Object.fromEntries(Object.entries(named).sort(([a], [b]) => (a < b ? -1 : 1)));
  const commit: Commit = {
    version: COMMIT_VERSION,
    id,
    committed_at: committedAt,
    state,
    files: sorted,
    file_count: Object.keys(sorted).length,
    files_sha256: filesDigest(sorted),
    ...(obsolete.length > 0 ? { obsolete } : {}),
  };
  // Only over the commit this put started from: another writer's commit since refuses this one.
  if ((await store.writeIf(COMMIT_KEY, JSON.stringify(commit), parent)) === undefined) {
    await store.remove(data.map(([path]) => keys.get(path)!));
    throw new CommitConflictError(
      `${store.url}${COMMIT_KEY} is no longer the commit this run started from: another run committed to the folder meanwhile, so this run's commit is refused. Nothing of that run's is touched; the objects this run uploaded are removed. Run it again: it starts from the new commit`,
    );
  }
  passed('committed');
  await transferAll(later, async ([path, file]) => {
    await store.upload(join(local, ...path.split('/')), path);
    bytes += file.bytes;
  });
  passed('described');
  // (also one a killed put left, when this one had nothing to upload)
  await store.remove([PUT_KEY]);
  await store.remove(obsolete);
  return { uploaded: written.length, bytes, removed: obsolete.length };
}
