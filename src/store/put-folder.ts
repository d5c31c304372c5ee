/**
 * Puts a local folder back into its object store as the folder's new commit
 * (sync.ts says how a put stays atomic for readers and for a run killed in it).
 */
import { readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { mtimeMillis } from '../duckdb/fingerprints.js';
import type { RemoteFiles } from './remote-files.js';
import type { ObjectStore } from './store.js';
import { COMMIT_KEY, PUT_KEY, localOnly, transferAll, type Commit, type Fetched } from './sync.js';

interface LocalFile {
  bytes: number;
  mtime_ms: number;
  ino: number;
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
    found.set(key, {
      bytes: Number(info.size),
      mtime_ms: Number(mtimeMillis(info.mtimeNs)),
      ino: Number(info.ino),
    });
  }
  return found;
}

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
 * changed since `previous` (size or time), each at most TRANSFERS at once
 * (manifest.json after the data it names), the commit, then the removal of
 * what it no longer names. `passed` is told of each phase (tests stop a put there).
 */
export async function putFolder(
  store: ObjectStore,
  local: string,
  /** The commit fetched, and the objects of road-etl's own the folder may hold: the only ones removed. */
  { commit: previous, listed }: Pick<Fetched, 'commit' | 'listed'>,
  {
    passed = () => undefined,
    onDemand,
  }: { passed?: (phase: 'uploaded' | 'committed') => void; onDemand?: RemoteFiles } = {},
): Promise<Put> {
  let files = localFiles(local);
  // No placeholder is ever put as data: one a step moved is fetched where it is.
  if (onDemand) {
    const stats = new Map(
      [...files].map(([key, file]) => [
        join(local, ...key.split('/')),
        { ino: file.ino, size: file.bytes, mtimeMs: file.mtime_ms },
      ]),
    );
    if ((await onDemand.settle(stats)) > 0) files = localFiles(local);
  }
  // Placeholders are never put: they go while the put uploads.
  const discarding = onDemand?.discard();
  try {
    return await putListed(store, local, files, previous, passed, listed);
  } finally {
    await discarding;
  }
}

/** putFolder once the local folder is listed (`files`). */
async function putListed(
  store: ObjectStore,
  local: string,
  files: Map<string, LocalFile>,
  previous: Commit | undefined,
  passed: (phase: 'uploaded' | 'committed') => void,
  listed: readonly string[],
): Promise<Put> {
  const commit: Commit = {
    version: 1,
    committed_at: new Date().toISOString(),
    state: {},
    files: {},
  };
  const changed: string[] = [];
  for (const [key, file] of files) {
    if (key.startsWith('.state/')) {
      commit.state[key] = await readFile(join(local, ...key.split('/')), 'utf8');
      continue;
    }
    const before = previous?.files[key];
    if (before && before.bytes === file.bytes && before.mtime_ms === file.mtime_ms)
      commit.files[key] = before;
    else changed.push(key);
  }
  // Written down before the first upload: a put killed half-way leaves no object unknown.
  if (changed.length > 0)
    await putJson(store, local, PUT_KEY, {
      version: 1,
      started_at: commit.committed_at,
      keys: changed,
    });
  let bytes = 0;
  const upload = async (key: string): Promise<void> => {
    const file = files.get(key)!;
    const put = await store.upload(join(local, ...key.split('/')), key);
    commit.files[key] = { bytes: file.bytes, version: put.version, mtime_ms: file.mtime_ms };
    bytes += file.bytes;
  };
  await transferAll(
    changed.filter((k) => k !== 'manifest.json'),
    upload,
  );
  if (changed.includes('manifest.json')) await upload('manifest.json');
  passed('uploaded');
  // What road-etl's own commits and puts wrote that this commit no longer names: never
  // an object of someone else's.
  const obsolete = [
    ...new Set([...listed, ...Object.keys(previous?.files ?? {}), ...(previous?.obsolete ?? [])]),
  ].filter((key) => !localOnly(key) && !(key in commit.files));
  if (obsolete.length > 0) commit.obsolete = obsolete;
  commit.files = Object.fromEntries(
    Object.entries(commit.files).sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  await putJson(store, local, COMMIT_KEY, commit);
  passed('committed');
  // (also one a killed put left, when this one had nothing to upload)
  await store.remove([PUT_KEY]);
  await store.remove(obsolete);
  return { uploaded: changed.length, bytes, removed: obsolete.length };
}
