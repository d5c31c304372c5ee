/**
 * An output folder in an object store, worked on in a local folder: a run
 * fetches the folder's last commit into an empty local folder, runs there as
 * on disk, and puts back what changed.
 *
 * The commit is one object, `.state/commit.json`: the folder's state files
 * (checkpoints, the runs, the extracts known; small JSON) held in it whole,
 * and every other file of the folder with its size, version and time. Writing
 * it is the one atomic step of a put:
 *   1. the files that changed are uploaded (data, extracts, then manifest.json);
 *   2. the commit is written;
 *   3. the objects the commit no longer names are removed.
 * A run killed in 1 leaves objects the last commit does not name: a fetch
 * ignores them (and the next put removes them), so no checkpoint is ever seen
 * without the data it records. A file the commit names that was uploaded again
 * since (killed in 1) is fetched as it is now, with the time of the fetch, so
 * that the steps see it rewritten, as after a crash on disk, and redo what it
 * fed; every other file keeps the time the commit gives it, so that nightly
 * incremental builds see only what the night changed.
 */
import { mkdir, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { z } from 'zod';
import { mtimeMillis } from '../duckdb/fingerprints.js';
import { RunError } from '../errors.js';
import type { RemoteFiles } from './remote-files.js';
import type { ObjectStore } from './store.js';

export const COMMIT_KEY = '.state/commit.json';

/** What of the local folder is never put: the lock, temporary and staged files. */
function localOnly(key: string): boolean {
  return (
    key === '.state/lock' ||
    key.startsWith('.state/tmp/') ||
    key.startsWith('.state/staging/') ||
    key === COMMIT_KEY
  );
}

const commitSchema = z.object({
  version: z.literal(1),
  committed_at: z.string(),
  /** State files (under .state/), by key: their text. */
  state: z.record(z.string(), z.string()),
  /** Every other file, by key. */
  files: z.record(
    z.string(),
    z.object({ bytes: z.number(), version: z.string(), mtime_ms: z.number() }),
  ),
});

export type Commit = z.output<typeof commitSchema>;

/** The folder's last commit; undefined for a folder never written. */
export async function readCommit(store: ObjectStore): Promise<Commit | undefined> {
  const text = await store.read(COMMIT_KEY);
  if (text === undefined) return undefined;
  const parsed = commitSchema.safeParse(JSON.parse(text.toString('utf8')));
  if (!parsed.success)
    throw new RunError(
      `${store.url}${COMMIT_KEY} is not a commit of road-etl (${parsed.error.issues[0]?.message ?? ''}): restore it or start the folder over`,
    );
  return parsed.data;
}

export interface Fetched {
  commit: Commit | undefined;
  /** The folder's objects when fetched (a run that holds the lock is the only one to change them). */
  listed: string[];
  /** The files of the commit, and those of them fetched now (the rest on demand). */
  files: number;
  fetched: number;
  bytes: number;
}

/** A dataset's folder (above its partitions) for a Parquet file's key; undefined for other files. */
function datasetOfKey(key: string): string | undefined {
  if (!key.endsWith('.parquet')) return undefined;
  const parts = key.split('/').slice(0, -1);
  while (parts.length > 0 && parts.at(-1)!.includes('=')) parts.pop();
  return parts.join('/');
}

/**
 * What a run on demand fetches at once: files that are not data (the
 * manifest, views.sql, the report; extracts aside) and the first file of each
 * dataset, which DuckDB reads to make its view.
 */
function fetchedAtOnce(keys: readonly string[]): Set<string> {
  const now = new Set<string>();
  const firsts = new Map<string, string>();
  for (const key of keys) {
    const dataset = datasetOfKey(key);
    if (dataset === undefined) {
      if (!key.startsWith('exports/')) now.add(key);
      continue;
    }
    const first = firsts.get(dataset);
    if (first === undefined || key < first) firsts.set(dataset, key);
  }
  for (const key of firsts.values()) now.add(key);
  return now;
}

/**
 * Fetches the folder's last commit into the local folder `local` (empty):
 * every file, or, with `onDemand`, a placeholder for each file that is data
 * (fetched when read: remote-files.ts).
 */
export async function fetchFolder(
  store: ObjectStore,
  local: string,
  onDemand?: RemoteFiles,
): Promise<Fetched> {
  const commit = await readCommit(store);
  if (!commit)
    return {
      commit,
      listed: (await store.list()).map((o) => o.key),
      files: 0,
      fetched: 0,
      bytes: 0,
    };
  for (const [key, text] of Object.entries(commit.state)) {
    const file = join(local, ...key.split('/'));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  const now = new Map((await store.list()).map((o) => [o.key, o]));
  const atOnce = onDemand ? fetchedAtOnce(Object.keys(commit.files)) : undefined;
  let bytes = 0;
  let fetched = 0;
  for (const [key, recorded] of Object.entries(commit.files)) {
    const there = now.get(key);
    if (!there)
      throw new RunError(
        `${store.url}${key}, named by the folder's last commit, is not there: restore it, or start the step that wrote it over with --reset`,
      );
    const file = join(local, ...key.split('/'));
    await mkdir(dirname(file), { recursive: true });
    // Uploaded again since the commit (a put killed half-way): fetched now, as below.
    if (onDemand && !atOnce!.has(key) && there.version === recorded.version) {
      onDemand.place(key, file, recorded.bytes, recorded.mtime_ms);
      continue;
    }
    const got = await store.download(key, file);
    bytes += got.bytes;
    fetched++;
    // The commit's own file: its time as it was written. Uploaded again since: as fetched now.
    if (got.version === recorded.version) {
      const time = new Date(recorded.mtime_ms);
      await utimes(file, time, time);
    }
  }
  return {
    commit,
    listed: [...now.keys()],
    files: Object.keys(commit.files).length,
    fetched,
    bytes,
  };
}

/** Every file of the local folder, by key, with its size and time in milliseconds. */
async function localFiles(
  local: string,
): Promise<Map<string, { bytes: number; mtime_ms: number; ino: number }>> {
  const found = new Map<string, { bytes: number; mtime_ms: number; ino: number }>();
  const entries = await readdir(local, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const key = relative(local, join(entry.parentPath, entry.name)).split(sep).join('/');
    if (localOnly(key) || /\.tmp-|\.download-/.test(entry.name)) continue;
    const info = await stat(join(local, ...key.split('/')), { bigint: true });
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

/**
 * Puts the local folder back as the folder's new commit: the files that
 * changed since `previous` (size or time), the commit, then the removal of
 * what it no longer names. `passed` is told of each phase (tests stop a run there).
 */
export async function putFolder(
  store: ObjectStore,
  local: string,
  previous: Commit | undefined,
  passed: (phase: 'uploaded' | 'committed') => void = () => undefined,
  onDemand?: RemoteFiles,
  /** The folder's objects when the run fetched it (Fetched.listed): it need not be listed again. */
  listed?: readonly string[],
): Promise<Put> {
  let files = await localFiles(local);
  // No placeholder is ever put as data: one a step moved is fetched where it is.
  if (onDemand) {
    const moved = await onDemand.settle(
      [...files].map(([key, file]) => [join(local, ...key.split('/')), file.ino]),
    );
    if (moved > 0) files = await localFiles(local);
  }
  const commit: Commit = {
    version: 1,
    committed_at: new Date().toISOString(),
    state: {},
    files: {},
  };
  const order = [...files.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  let uploaded = 0;
  let bytes = 0;
  for (const key of order) {
    const file = files.get(key)!;
    const path = join(local, ...key.split('/'));
    if (key.startsWith('.state/')) {
      commit.state[key] = await readFile(path, 'utf8');
      continue;
    }
    const before = previous?.files[key];
    if (before && before.bytes === file.bytes && before.mtime_ms === file.mtime_ms) {
      commit.files[key] = before;
      continue;
    }
    const put = await store.upload(path, key);
    commit.files[key] = { bytes: file.bytes, version: put.version, mtime_ms: file.mtime_ms };
    uploaded++;
    bytes += file.bytes;
  }
  passed('uploaded');
  const draft = join(local, '.state', 'tmp', 'commit.json');
  await mkdir(dirname(draft), { recursive: true });
  await writeFile(draft, JSON.stringify(commit));
  await store.upload(draft, COMMIT_KEY);
  passed('committed');
  // What was there when the run began (listed by fetchFolder), else what is there now.
  const there = listed ?? (await store.list()).map((o) => o.key);
  const obsolete = [...new Set([...there, ...Object.keys(previous?.files ?? {})])].filter(
    (key) => !localOnly(key) && !(key in commit.files),
  );
  await store.remove(obsolete);
  await rm(draft, { force: true });
  return { uploaded, bytes, removed: obsolete.length };
}

/** Data first, the manifest after it (it names them), the state last (into the commit). */
function rank(key: string): number {
  if (key.startsWith('.state/')) return 2;
  return key === 'manifest.json' ? 1 : 0;
}
