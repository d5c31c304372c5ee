/**
 * An output folder in an object store, worked on in a local folder: a run
 * fetches the folder's last commit into an empty local folder, runs there as
 * on disk, and puts back what its steps wrote and removed (put-folder.ts).
 *
 * The commit (commit.ts) is one object, `.state/commit.json`: the folder's state files
 * (checkpoints, the runs, the extracts known; small JSON) held in it whole,
 * and every other file of the folder with its object, size, content (sha256)
 * and, for data, the object's version.
 * A data file (a dataset's Parquet) is never overwritten: each version is an
 * object of its own, named with the put that wrote it
 * (`date=2026-10-01/data.v20261002T031500Z-3f9a1c.parquet` for the file
 * `date=2026-10-01/data.parquet`), so the objects a commit names stay as they
 * are until a later commit no longer names them. Writing the commit is the one
 * atomic step of a put:
 *   0. the keys about to be uploaded are written down (`.state/put.json`), with
 *      those a put killed before left that no commit names;
 *   1. the data files the night's steps wrote are uploaded, each version a new object;
 *   2. the commit is written (only over the commit the put started from),
 *      naming the objects no longer part of the folder and, by their content,
 *      the files that keep their names (extracts, the report, and the
 *      descriptions: views.sql, which reads the commit the folder holds, and
 *      manifest.json, which names its commit), with the count and hash of its
 *      list of files, by which a damaged commit is known (readCommit);
 *   3. those of them whose content changed are written;
 *   4. `.state/put.json` is removed, then the objects no longer named.
 * A run killed in 1 leaves objects the last commit does not name: a fetch
 * ignores them (the next put removes them: put.json names them), so what
 * reads through the commit reads one commit. A run killed in 2 or 3 leaves
 * the manifest of the commit before (its `commit` names that one) until the
 * next put; views.sql and `query` read the new commit, whose objects are all
 * there. Extracts, the manifest, views.sql
 * and the report keep their names (publishers link to them): one a killed put
 * may have uploaded again (put.json names it) is fetched at once and, when it
 * does not hold what the commit names, written again by the next put whatever
 * the steps do. The folder is never listed once it
 * has a commit: a night costs the same whatever the history in the bucket.
 */
import { mkdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { InputError, MissingObjectError } from '../errors.js';
import { formatNamed, olderFolder } from './folder-format.js';
import { holdsCommitted, type WorkingCopy } from './working-copy.js';
import { sha256File } from '../util/fs.js';
import type { ObjectStore } from './store.js';
import {
  COMMIT_KEY,
  assertCommitNotLost,
  parsedOwn,
  readCommit,
  readCommitVersioned,
  type Commit,
} from './commit.js';
import { transferAll } from './transfer.js';

/** The keys a put is about to upload, written before it uploads any. */
export const PUT_KEY = '.state/put.json';

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

const putSchema = z.object({
  version: z.literal(1),
  started_at: z.string(),
  keys: z.array(z.string()),
});

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

/** Where a folder names its layout (held whole in the commit, as every state file). */
const FORMAT_KEY = '.state/format.json';

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
  // `.gitkeep`: what git keeps in a folder otherwise empty (the project's own output/).
  const foreign = objects.filter(
    (o) => !own.has(o.key) && !LEFTOVER.test(o.key) && o.key !== '.gitkeep',
  );
  // A folder of road-etl's written before folders were commits: refused with the way to rebuild it.
  const named = foreign.some((o) => o.key === FORMAT_KEY)
    ? await store.read(FORMAT_KEY)
    : undefined;
  if (named !== undefined) throw olderFolder(store.url, formatNamed(named.toString('utf8')));
  assertCommitNotLost(store, foreign);
  if (foreign.some((o) => /^\.state\/[^/]+\.json$/.test(o.key) || o.key === 'manifest.json'))
    throw olderFolder(store.url, 0);
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
  /** The version of the commit's object: the next commit is written only over it (writeIf). */
  parent: string | undefined;
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

/** Whether a file is fetched only when a step reads it: data (Parquet) and extracts. */
function fetchedWhenRead(path: string): boolean {
  return path.endsWith('.parquet') || path.startsWith('exports/');
}

/**
 * Fetches the folder's last commit into the local folder `local` (empty):
 * its state files, and the files other than data and extracts; every file of
 * the commit is named to `working`, which fetches the others when a step
 * reads them (working-copy.ts).
 */
export async function fetchFolder(
  store: ObjectStore,
  local: string,
  working: WorkingCopy,
  /** Files the run is to remove (--repair): neither fetched nor named, so gone from the next commit. */
  skip: ReadonlySet<string> = new Set(),
): Promise<Fetched> {
  const [read, unfinished] = await Promise.all([readCommitVersioned(store), unfinishedPut(store)]);
  // A folder never committed holds at most what a first put killed left (or is refused).
  if (!read)
    return {
      commit: undefined,
      parent: undefined,
      listed: await ownedBeforeCommit(store, unfinished),
      files: 0,
      fetched: 0,
      bytes: 0,
    };
  const { commit } = read;
  const probes = (await store.list('.state/probe-')).filter((o) => LEFTOVER.test(o.key));
  for (const [key, text] of Object.entries(commit.state)) {
    const file = join(local, ...key.split('/'));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  const maybeRewritten = new Set(unfinished);
  const entries = Object.entries(commit.files).filter(([key]) => !skip.has(key));
  let bytes = 0;
  let fetched = 0;
  const path = (key: string): string => join(local, ...key.split('/'));
  // One a killed put may have uploaded again is fetched at once (see above).
  const now = entries.filter(
    ([key, { key: object }]) => !fetchedWhenRead(key) || maybeRewritten.has(object),
  );
  for (const [key, recorded] of entries) working.place(key, recorded, false);
  for (const folder of new Set(now.map(([key]) => dirname(path(key)))))
    mkdirSync(folder, { recursive: true });
  await transferAll(now, async ([key, recorded]) => {
    const got = await store.download(recorded.key, path(key)).catch((error: unknown) => {
      // Named by the file it holds, which a repair names.
      if (error instanceof MissingObjectError)
        throw new MissingObjectError(error.url, error.key, {
          cause: error,
          path: key,
          changed: error.changed,
        });
      throw error;
    });
    bytes += got.bytes;
    fetched++;
    // Not the commit's bytes (a killed put's upload): the next put writes the file again.
    const held = (await holdsCommitted(path(key), recorded, got.version))
      ? undefined
      : { bytes: got.bytes, sha256: await sha256File(path(key)) };
    working.place(key, recorded, true, held);
  });
  const listed = new Set([
    ...Object.values(commit.files).map((file) => file.key),
    ...unfinished,
    ...(commit.obsolete ?? []),
    ...probes.map((o) => o.key),
  ]);
  return {
    commit,
    parent: read.version,
    listed: [...listed],
    files: Object.keys(commit.files).length,
    fetched,
    bytes,
  };
}
