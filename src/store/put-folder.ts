/**
 * Puts a local folder back into its object store as the folder's new commit
 * (sync.ts says how a put stays atomic for readers and for a run killed in it).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { mtimeMillis } from '../duckdb/fingerprints.js';
import type { RemoteFiles } from './remote-files.js';
import type { ObjectStore } from './store.js';
import { PUT_KEY, localOnly, type Fetched } from './sync.js';
import {
  COMMIT_KEY,
  COMMIT_VERSION,
  filesDigest,
  knownExtracts,
  type Commit,
  type KnownExtract,
} from './commit.js';
import { sha256File } from '../util/fs.js';
import { CommitConflictError } from '../errors.js';
import { transferAll } from './transfer.js';

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

interface LocalFile {
  bytes: number;
  mtime_ms: number;
}

/**
 * Every file of the local folder, by key, with its size and time in
 * milliseconds (listed and stat'ed synchronously: thousands in a row cost
 * least so; a year of partitions is listed in a fifth of the time it takes
 * through the thread pool).
 */
function localFiles(local: string): Map<string, LocalFile> {
  const found = new Map<string, LocalFile>();
  const entries = readdirSync(local, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || /\.tmp-|\.download-/.test(entry.name)) continue;
    const key = relative(local, join(entry.parentPath, entry.name)).split(sep).join('/');
    if (localOnly(key)) continue;
    const info = statSync(join(local, ...key.split('/')), { bigint: true });
    found.set(key, { bytes: Number(info.size), mtime_ms: Number(mtimeMillis(info.mtimeNs)) });
  }
  return found;
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
  const draft = join(local, '.state', 'tmp', key.replaceAll('/', '_'));
  await mkdir(dirname(draft), { recursive: true });
  await writeFile(draft, JSON.stringify(value));
  await store.upload(draft, key);
  await rm(draft, { force: true });
}

/**
 * Puts the local folder back as the folder's new commit: the files that
 * changed since `previous` (size or time), each at most TRANSFERS at once,
 * the commit, the descriptions made from it (views.sql, manifest.json), then
 * the removal of what it no longer names. `passed` is told of each phase
 * (tests stop a put there).
 */
export async function putFolder(
  store: ObjectStore,
  local: string,
  /**
   * The commit fetched and its object's version (the next commit is written over it only),
   * and the objects of road-etl's own the folder may hold: the only ones removed.
   */
  fetched: Pick<Fetched, 'commit' | 'parent' | 'listed' | 'unfinished'>,
  {
    passed = () => undefined,
    onDemand,
    id = commitId(),
  }: {
    passed?: (phase: PutPhase) => void;
    onDemand?: RemoteFiles;
    /** The new commit's id (commitId), which the run's manifest names. */
    id?: string;
  } = {},
): Promise<Put> {
  const files = localFiles(local);
  // The commit's files not fetched (nor removed, nor written since): named again as they are.
  for (const [path, recorded] of onDemand?.left ?? [])
    if (!files.has(path)) files.set(path, { bytes: recorded.bytes, mtime_ms: recorded.mtime_ms });
  return putListed(store, local, files, fetched, { id, passed });
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
 * The files a put writes after its commit, under the names publishers link
 * to: extracts, the report, and the folder's descriptions (views.sql, which
 * reads the files of the commit the folder holds, manifest.json, naming its
 * commit). The commit names each by its content (sha256), as the store's
 * version of an object not yet written is not known; a put refused its commit
 * has overwritten none.
 */
function afterCommit(path: string): boolean {
  return !versioned(path);
}

/**
 * Names in `named` each file written after the commit by its content (an
 * extract's hash is the one its export recorded), and resolves to the files
 * to write: those whose content is not the one the last commit names, or
 * whose object a killed put may have left otherwise (`unsure`).
 */
async function namedByContent(
  local: string,
  paths: readonly string[],
  named: Commit['files'],
  state: Commit['state'],
  previous: Commit | undefined,
  unsure: ReadonlySet<string>,
): Promise<string[]> {
  const known = knownExtracts(state) ?? new Map<string, KnownExtract>();
  const changed: string[] = [];
  for (const path of paths) {
    const file = join(local, ...path.split('/'));
    const info = statSync(file, { bigint: true });
    const size = Number(info.size);
    const time = Number(mtimeMillis(info.mtimeNs));
    const hashed = known.get(path);
    const sha256 =
      hashed && hashed.bytes === size && hashed.mtime_ms === time
        ? hashed.sha256
        : await sha256File(file);
    const before = previous?.files[path];
    named[path] = { key: path, bytes: size, sha256, mtime_ms: time };
    if (before?.sha256 === sha256 && before.key === path && !unsure.has(path)) named[path] = before;
    else changed.push(path);
  }
  return changed;
}

/** putFolder once the local folder is listed (`files`). */
async function putListed(
  store: ObjectStore,
  local: string,
  files: Map<string, LocalFile>,
  {
    commit: previous,
    parent,
    listed,
    unfinished = [],
  }: Pick<Fetched, 'commit' | 'parent' | 'listed' | 'unfinished'>,
  { id, passed }: { id: string; passed: (phase: PutPhase) => void },
): Promise<Put> {
  const committedAt = new Date().toISOString();
  const state: Commit['state'] = {};
  const named: Commit['files'] = {};
  const changed: string[] = [];
  for (const [path, file] of files) {
    if (path.startsWith('.state/')) {
      state[path] = await readFile(join(local, ...path.split('/')), 'utf8');
      continue;
    }
    const before = previous?.files[path];
    if (before && before.bytes === file.bytes && before.mtime_ms === file.mtime_ms)
      named[path] = before;
    else changed.push(path);
  }
  const keys = new Map(changed.map((path) => [path, objectKey(path, id)]));
  // Written down before the first upload: a put killed half-way leaves no object unknown.
  if (changed.length > 0)
    await writeDownPut(store, local, committedAt, [...keys.values()], listed, previous);
  let bytes = 0;
  // Data first, each version a new object: a put failing here changes no object of the folder.
  await transferAll(changed.filter(versioned), async (path) => {
    const file = files.get(path)!;
    const key = keys.get(path)!;
    const put = await store.upload(join(local, ...path.split('/')), key);
    named[path] = { key, bytes: file.bytes, version: put.version, mtime_ms: file.mtime_ms };
    bytes += file.bytes;
  });
  passed('uploaded');
  // The files written after the commit, named by their content (those of the last commit's left as they are).
  const later = await namedByContent(
    local,
    changed.filter(afterCommit),
    named,
    state,
    previous,
    new Set(unfinished),
  );
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
    await store.remove(changed.filter(versioned).map((path) => keys.get(path)!));
    throw new CommitConflictError(
      `${store.url}${COMMIT_KEY} is no longer the commit this run started from: another run committed to the folder meanwhile, so this run's commit is refused. Nothing of that run's is touched; the objects this run uploaded are removed. Run it again: it starts from the new commit`,
    );
  }
  passed('committed');
  await transferAll(later, async (path) => {
    await store.upload(join(local, ...path.split('/')), path);
    bytes += named[path]!.bytes;
  });
  passed('described');
  // (also one a killed put left, when this one had nothing to upload)
  await store.remove([PUT_KEY]);
  await store.remove(obsolete);
  return {
    uploaded: changed.filter(versioned).length + later.length,
    bytes,
    removed: obsolete.length,
  };
}
