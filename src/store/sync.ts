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
import { RunError } from '../errors.js';
import type { RemoteFiles } from './remote-files.js';
import type { ObjectStore } from './store.js';

export const COMMIT_KEY = '.state/commit.json';
/** The keys a put is about to upload, written before it uploads any. */
export const PUT_KEY = '.state/put.json';

/** Objects fetched or put at once. */
export const TRANSFERS = 8;

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

/** The keys a put that did not end (killed) was uploading; none when the last put ended. */
async function unfinishedPut(store: ObjectStore): Promise<string[]> {
  const text = await store.read(PUT_KEY);
  if (text === undefined) return [];
  const parsed = putSchema.safeParse(JSON.parse(text.toString('utf8')));
  if (!parsed.success)
    throw new RunError(
      `${store.url}${PUT_KEY} is not a put of road-etl (${parsed.error.issues[0]?.message ?? ''}): remove it`,
    );
  return parsed.data.keys;
}

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
  /**
   * The objects the folder may hold now (those the commit names, those a
   * killed put may have left, those the last put was to remove): a run that
   * holds the lock is the only one to change them.
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
): Promise<Fetched> {
  const [commit, unfinished] = await Promise.all([readCommit(store), unfinishedPut(store)]);
  // A folder never committed holds at most what a first put killed left: few objects.
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
  const maybeRewritten = new Set(unfinished);
  const atOnce = onDemand ? fetchedAtOnce(Object.keys(commit.files)) : undefined;
  let bytes = 0;
  let fetched = 0;
  const entries = Object.entries(commit.files);
  const path = (key: string): string => join(local, ...key.split('/'));
  // Folders and placeholders are made one after the other, synchronously: thousands of
  // them in a row cost least so (at once, they contend for the same folders).
  for (const folder of new Set(entries.map(([key]) => dirname(path(key)))))
    mkdirSync(folder, { recursive: true });
  const placed = onDemand
    ? entries.filter(([key]) => !atOnce!.has(key) && !maybeRewritten.has(key))
    : [];
  const placedKeys = new Set(placed.map(([key]) => key));
  const downloads = pLimit(TRANSFERS);
  const fetching = Promise.all(
    entries
      .filter(([key]) => !placedKeys.has(key))
      .map(([key, recorded]) =>
        downloads(async () => {
          const got = await store.download(key, path(key));
          bytes += got.bytes;
          fetched++;
          // The commit's own file: its time as it was written. Uploaded again since: as fetched now.
          if (got.version === recorded.version) {
            const time = new Date(recorded.mtime_ms);
            await utimes(path(key), time, time);
          }
        }),
      ),
  );
  for (const [key, recorded] of placed) onDemand!.place(key, path(key), recorded);
  await fetching;
  const listed = new Set([...Object.keys(commit.files), ...unfinished, ...(commit.obsolete ?? [])]);
  return {
    commit,
    listed: [...listed],
    files: Object.keys(commit.files).length,
    fetched,
    bytes,
  };
}
