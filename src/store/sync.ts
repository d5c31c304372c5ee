/**
 * An output folder in an object store, worked on in a local folder: a run
 * fetches the folder's last commit into an empty local folder, runs there as
 * on disk, and puts back what changed (put-folder.ts).
 *
 * The commit is one object, `.state/commit.json`: the folder's state files
 * (checkpoints, the runs, the extracts known; small JSON) held in it whole,
 * and every other file of the folder with its size, version and time. Writing
 * it is the one atomic step of a put:
 *   0. the keys about to be uploaded are written down (`.state/put.json`);
 *   1. the files that changed are uploaded (data, extracts, then manifest.json);
 *   2. the commit is written, naming the objects no longer part of the folder;
 *   3. `.state/put.json` is removed, then those objects.
 * A run killed in 1 leaves objects the last commit does not name: a fetch
 * ignores them (and the next put removes them: put.json names them), so no
 * checkpoint is ever seen without the data it records. A file the commit
 * names that a killed put may have uploaded again (put.json names it) is
 * fetched at once, and, when it was, with the time of the fetch, so that the
 * steps see it rewritten, as after a crash on disk, and redo what it fed;
 * every other file keeps the time the commit gives it, so that nightly
 * incremental builds see only what the night changed. The folder is never
 * listed once it has a commit: the commit and put.json say what is there, so
 * a night costs the same whatever the history in the bucket.
 */
import { mkdirSync } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import pLimit from 'p-limit';
import { z } from 'zod';
import { InputError, StateError } from '../errors.js';
import type { RemoteFiles } from './remote-files.js';
import type { ObjectStore } from './store.js';

export const COMMIT_KEY = '.state/commit.json';
/** The keys a put is about to upload, written before it uploads any. */
export const PUT_KEY = '.state/put.json';

/** Objects fetched or put at once. */
export const TRANSFERS = 8;

/**
 * Runs `transfer` for each item, TRANSFERS at once, and waits for every one
 * to end before it fails with the first failure: nothing is still writing
 * into the local folder when the caller cleans it up.
 */
export async function transferAll<T>(
  items: readonly T[],
  transfer: (item: T) => Promise<void>,
): Promise<void> {
  const limit = pLimit(TRANSFERS);
  const ended = await Promise.allSettled(items.map((item) => limit(() => transfer(item))));
  const failed = ended.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failed) throw failed.reason;
}

/** What of the local folder is never put: the lock, temporary and staged files, the put's own. */
export function localOnly(key: string): boolean {
  return (
    key === '.state/lock' ||
    key.startsWith('.state/tmp/') ||
    key.startsWith('.state/staging/') ||
    key === COMMIT_KEY ||
    key === PUT_KEY
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
  /** Objects no longer part of the folder, removed after the commit (again by the next put). */
  obsolete: z.array(z.string()).optional(),
});

export type Commit = z.output<typeof commitSchema>;

const putSchema = z.object({
  version: z.literal(1),
  started_at: z.string(),
  keys: z.array(z.string()),
});

/** A JSON document of the store's own, parsed: damaged, it is named with what to do. */
function parsedOwn<T>(
  store: ObjectStore,
  key: string,
  text: Buffer,
  schema: z.ZodType<T>,
  repair: string,
): T {
  let value: unknown;
  try {
    value = JSON.parse(text.toString('utf8'));
  } catch (error) {
    throw new StateError(
      `${store.url}${key} is damaged (${text.length} bytes, not JSON: ${(error as Error).message}): ${repair}`,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new StateError(
      `${store.url}${key} is not road-etl's (${parsed.error.issues[0]?.message ?? ''}): ${repair}`,
    );
  return parsed.data;
}

/** The keys a put that did not end (killed) was uploading; none when the last put ended. */
async function unfinishedPut(store: ObjectStore): Promise<string[]> {
  const text = await store.read(PUT_KEY);
  if (text === undefined) return [];
  return parsedOwn(
    store,
    PUT_KEY,
    text,
    putSchema,
    'it only names the objects of an upload that did not end; remove it, and remove those objects by hand if the last commit does not name them',
  ).keys;
}

/** The folder's last commit; undefined for a folder never written. */
export async function readCommit(store: ObjectStore): Promise<Commit | undefined> {
  const text = await store.read(COMMIT_KEY);
  if (text === undefined) return undefined;
  return parsedOwn(
    store,
    COMMIT_KEY,
    text,
    commitSchema,
    `restore it from the store's versions (or a backup), or start the folder over in an empty prefix`,
  );
}

/** Objects under `.state/` that road-etl writes for a moment and a killed run may leave: lock probes. */
const LEFTOVER = /^\.state\/probe-[0-9a-f-]+$/;

/**
 * The objects under the folder's prefix that road-etl left without a commit
 * (a first put or a lock probe that was killed): a folder not yet committed
 * may hold these and nothing else. Any other object belongs to someone else:
 * the run refuses (exit 2), for road-etl never removes or overwrites what it
 * did not write.
 */
async function ownedBeforeCommit(store: ObjectStore, unfinished: readonly string[]) {
  const objects = await store.list();
  const own = new Set([...unfinished, PUT_KEY, '.state/lock']);
  const foreign = objects.filter((o) => !own.has(o.key) && !LEFTOVER.test(o.key));
  if (foreign.length > 0) {
    const named = foreign.slice(0, 5).map((o) => `${store.url}${o.key}`);
    throw new InputError(
      `--output ${store.url} already holds ${foreign.length} object(s) that road-etl did not write (${named.join(', ')}${foreign.length > 5 ? ', ...' : ''}): road-etl starts a folder only in an empty prefix and never touches what it did not write; choose an empty prefix (for example ${store.url}road-etl/)`,
    );
  }
  return objects.map((o) => o.key);
}

/**
 * Whether `--output` may be written: a folder road-etl committed, or a prefix
 * that holds nothing (or only what a killed first run of road-etl left).
 * Asked before the lock, so that a refused run writes nothing.
 */
export async function assertOwnFolder(store: ObjectStore): Promise<void> {
  if (await readCommit(store)) return;
  await ownedBeforeCommit(store, await unfinishedPut(store));
}

export interface Fetched {
  commit: Commit | undefined;
  /**
   * The objects of road-etl's own the folder may hold now (those the commit
   * names, those a killed put may have left, those the last put was to
   * remove, lock probes left): the only objects a put may remove.
   */
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
  /** Files the run is to remove (--repair): neither fetched nor placed, so gone from the next commit. */
  skip: ReadonlySet<string> = new Set(),
): Promise<Fetched> {
  const [commit, unfinished] = await Promise.all([readCommit(store), unfinishedPut(store)]);
  // A folder never committed holds at most what a first put killed left (or is refused).
  if (!commit)
    return {
      commit,
      listed: await ownedBeforeCommit(store, unfinished),
      files: 0,
      fetched: 0,
      bytes: 0,
    };
  const probes = (await store.list('.state/probe-')).filter((o) => LEFTOVER.test(o.key));
  for (const [key, text] of Object.entries(commit.state)) {
    const file = join(local, ...key.split('/'));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  const maybeRewritten = new Set(unfinished);
  const atOnce = onDemand ? fetchedAtOnce(Object.keys(commit.files)) : undefined;
  let bytes = 0;
  let fetched = 0;
  const entries = Object.entries(commit.files).filter(([key]) => !skip.has(key));
  const path = (key: string): string => join(local, ...key.split('/'));
  // Folders and placeholders are made one after the other, synchronously: thousands of
  // them in a row cost least so (at once, they contend for the same folders).
  for (const folder of new Set(entries.map(([key]) => dirname(path(key)))))
    mkdirSync(folder, { recursive: true });
  const placed = onDemand
    ? entries.filter(([key]) => !atOnce!.has(key) && !maybeRewritten.has(key))
    : [];
  const placedKeys = new Set(placed.map(([key]) => key));
  const fetching = transferAll(
    entries.filter(([key]) => !placedKeys.has(key)),
    async ([key, recorded]) => {
      const got = await store.download(key, path(key));
      bytes += got.bytes;
      fetched++;
      // The commit's own file: its time as it was written. Uploaded again since: as fetched now.
      if (got.version === recorded.version) {
        const time = new Date(recorded.mtime_ms);
        await utimes(path(key), time, time);
      }
    },
  );
  for (const [key, recorded] of placed) onDemand!.place(key, path(key), recorded);
  await fetching;
  const listed = new Set([
    ...Object.keys(commit.files),
    ...unfinished,
    ...(commit.obsolete ?? []),
    ...probes.map((o) => o.key),
  ]);
  return {
    commit,
    listed: [...listed],
    files: Object.keys(commit.files).length,
    fetched,
    bytes,
  };
}
