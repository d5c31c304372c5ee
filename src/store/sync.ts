/**
 * An output folder in an object store, worked on in a local folder: a run
 * fetches the folder's last commit into an empty local folder, runs there as
 * on disk, and puts back what changed (put-folder.ts).
 *
 * The commit is one object, `.state/commit.json`: the folder's state files
 * (checkpoints, the runs, the extracts known; small JSON) held in it whole,
 * and every other file of the folder with its object, size, version and time.
 * A data file (a dataset's Parquet) is never overwritten: each version is an
 * object of its own, named with the put that wrote it
 * (`date=2026-10-01/data.v20261002T031500Z-3f9a1c.parquet` for the file
 * `date=2026-10-01/data.parquet`), so the objects a commit names stay as they
 * are until a later commit no longer names them. Writing the commit is the one
 * atomic step of a put:
 *   0. the keys about to be uploaded are written down (`.state/put.json`), with
 *      those a put killed before left that no commit names;
 *   1. the data files that changed are uploaded, each version a new object;
 *   2. the commit is written (only over the commit the put started from),
 *      naming the objects no longer part of the folder and, by their content,
 *      the files that keep their names (extracts, the report, and the
 *      descriptions made from the commit: views.sql naming its objects,
 *      manifest.json), with the count and hash of its list of files, by which
 *      a damaged commit is known (readCommit);
 *   3. those files are written;
 *   4. `.state/put.json` is removed, then the objects no longer named.
 * A run killed in 1 leaves objects the last commit does not name: a fetch
 * ignores them (the next put removes them: put.json names them), so what
 * reads through the commit reads one commit. A run killed in 2 or 3 leaves
 * the descriptions of the commit before, whose objects are removed only in 4:
 * a reader of views.sql reads that commit whole, until the next put. Extracts, the manifest, views.sql
 * and the report keep their names (publishers link to them): one a killed put
 * may have uploaded again (put.json names it) is fetched at once, with the
 * time of the fetch when it was, so that the steps see it rewritten and redo
 * what it fed; every other file keeps the commit's time, so that incremental
 * builds see only what the night changed. The folder is never listed once it
 * has a commit: a night costs the same whatever the history in the bucket.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { InputError, MissingObjectError, StateError } from '../errors.js';
import { formatNamed, olderFolder } from './folder-format.js';
import { holdsCommitted, type RemoteFiles } from './remote-files.js';
import type { ObjectStore, StoredObject } from './store.js';
import { giveTime, transferAll } from './transfer.js';

export const COMMIT_KEY = '.state/commit.json';
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

/** What to do about a damaged or missing commit. */
const COMMIT_REPAIR = `restore it from the store's versions (or a backup), or start the folder over in an empty prefix`;

/** A data file's object as a put names it: `data.v20261002T031500Z-3f9a1c.parquet`. */
const VERSIONED_OBJECT = /\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/;

/** The commit's own layout (a folder of another is refused with the way to rebuild it). */
export const COMMIT_VERSION = 4;

const committedFileSchema = z
  .object({
    key: z.string(),
    bytes: z.number(),
    /** The store's version of the object, as its upload returned it. */
    version: z.string().optional(),
    /** A description's content (written after the commit: its version is not known to it). */
    sha256: z.string().optional(),
    mtime_ms: z.number(),
  })
  .refine((file) => file.version !== undefined || file.sha256 !== undefined, {
    message: 'a file without its version or content hash',
  });

const commitSchema = z.object({
  version: z.literal(COMMIT_VERSION),
  /** The commit's name: the time its run started and a random part; each data object it wrote carries it. */
  id: z.string(),
  committed_at: z.string(),
  /** State files (under .state/), by path: their text. */
  state: z.record(z.string(), z.string()),
  /** Every other file, by its path in the folder: the object that holds it. */
  files: z.record(z.string(), committedFileSchema),
  /** The commit's own check of `files`: how many, and the hash of the list (filesDigest). */
  file_count: z.number(),
  files_sha256: z.string(),
  /** Objects no longer part of the folder, removed after the commit (again by the next put). */
  obsolete: z.array(z.string()).optional(),
});

export type Commit = z.output<typeof commitSchema>;

/** The hash of a commit's list of files: each path, object, size, version and content hash, in order. */
export function filesDigest(files: Commit['files']): string {
  const hash = createHash('sha256');
  for (const path of Object.keys(files).sort()) {
    const file = files[path]!;
    hash.update(
      JSON.stringify([path, file.key, file.bytes, file.version ?? '', file.sha256 ?? '']),
    );
    hash.update('\n');
  }
  return hash.digest('hex');
}

/**
 * Why a commit fails its own check, if it does: a list of files that is not
 * the one it was written with (emptied, cut, edited), an object named for two
 * files, an extract the folder knows (`.state/exports.json`) that it does not
 * name.
 */
function commitFault(commit: Commit): string | undefined {
  const paths = Object.keys(commit.files);
  if (paths.length !== commit.file_count || filesDigest(commit.files) !== commit.files_sha256)
    return `its list of files is not the one it was written with (${paths.length} file(s) named, ${commit.file_count} written)`;
  const byKey = new Map<string, string>();
  for (const [path, file] of Object.entries(commit.files)) {
    const other = byKey.get(file.key);
    if (other !== undefined)
      return `it names the object ${file.key} for two files (${other}, ${path})`;
    byKey.set(file.key, path);
  }
  const known = knownExtracts(commit.state);
  if (known === undefined) return `its ${EXPORTS_KEY} is not JSON`;
  const missing = [...known.keys()].filter((path) => !(path in commit.files));
  if (missing.length > 0)
    return `it names no file for ${missing.length} extract(s) the folder knows (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', ...' : ''})`;
  return undefined;
}

/** Where the folder keeps what it knows of its extracts (pipeline/manifest.ts writes it). */
const EXPORTS_KEY = '.state/exports.json';

/** An extract as the folder knows it: its size, content and time when its export hashed it. */
export interface KnownExtract {
  bytes: number;
  sha256: string;
  mtime_ms: number;
}

/**
 * The extracts the folder knows (`.state/exports.json`, held in the commit's
 * state), by path; undefined when that file is not JSON.
 */
export function knownExtracts(state: Commit['state']): Map<string, KnownExtract> | undefined {
  let known: unknown;
  try {
    known = JSON.parse(state[EXPORTS_KEY] ?? '{}');
  } catch {
    return undefined;
  }
  const entries = Object.entries((known ?? {}) as Record<string, Partial<KnownExtract>>);
  return new Map(
    entries.map(([path, e]) => [
      path,
      { bytes: Number(e.bytes), sha256: String(e.sha256), mtime_ms: Number(e.mtime_ms) },
    ]),
  );
}

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
  // A commit of an earlier layout: refused with the way to rebuild the folder.
  const version = (value as { version?: unknown } | null)?.version;
  if (key === COMMIT_KEY && typeof version === 'number' && version !== COMMIT_VERSION) {
    const format = (value as { state?: Record<string, string> }).state?.['.state/format.json'];
    throw olderFolder(store.url, Number(/"format":\s*(\d+)/.exec(format ?? '')?.[1] ?? 0));
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

/** The folder's last commit; undefined for a folder never written. A damaged one is refused (exit 1). */
export async function readCommit(store: ObjectStore): Promise<Commit | undefined> {
  return (await readCommitVersioned(store))?.commit;
}

/** The folder's last commit and the version of its object (the parent the next commit names). */
async function readCommitVersioned(
  store: ObjectStore,
): Promise<{ commit: Commit; version: string } | undefined> {
  const got = await store.readVersioned(COMMIT_KEY);
  if (got === undefined) return undefined;
  const commit = parsedOwn(store, COMMIT_KEY, got.data, commitSchema, COMMIT_REPAIR);
  const fault = commitFault(commit);
  if (fault !== undefined)
    throw new StateError(
      `${store.url}${COMMIT_KEY} is damaged (${fault}): ${COMMIT_REPAIR}. Nothing was written`,
    );
  return { commit, version: got.version };
}

/** Where a folder names its layout (held whole in the commit, as every state file). */
const FORMAT_KEY = '.state/format.json';

/** Objects under `.state/` that road-etl writes for a moment and a killed run may leave: lock probes. */
const LEFTOVER = /^\.state\/probe-[0-9a-f-]+$/;

/**
 * Refuses a folder whose commit is gone: data files a put named by their
 * version (put-folder.ts) beside the views.sql a run writes, and no commit
 * naming them (exit 1, nothing written).
 */
export function assertCommitNotLost(store: ObjectStore, objects: readonly StoredObject[]): void {
  const versions = objects.filter((o) => VERSIONED_OBJECT.test(o.key));
  // (datasets copied out of a folder by hand, without the views.sql a run writes, are read as they lie)
  const described = objects.some((o) => o.key === 'views.sql');
  if (versions.length > 0 && described)
    throw new StateError(
      `${store.url}${COMMIT_KEY} is missing, though the folder holds ${versions.length} data file(s) that road-etl's commits name by version (${store.url}${versions[0]!.key}${versions.length > 1 ? ', ...' : ''}): ${COMMIT_REPAIR}. Nothing was written`,
    );
}

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
 * every file, or, with `onDemand`, the files other than data and extracts,
 * the others named to it (fetched before a step that reads them: remote-files.ts).
 */
export async function fetchFolder(
  store: ObjectStore,
  local: string,
  onDemand?: RemoteFiles,
  /** Files the run is to remove (--repair): neither fetched nor placed, so gone from the next commit. */
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
  const later = onDemand
    ? entries.filter(
        ([key, { key: object }]) => fetchedWhenRead(key) && !maybeRewritten.has(object),
      )
    : [];
  const laterKeys = new Set(later.map(([key]) => key));
  const now = entries.filter(([key]) => !laterKeys.has(key));
  for (const folder of new Set(now.map(([key]) => dirname(path(key)))))
    mkdirSync(folder, { recursive: true });
  for (const [key, recorded] of later) onDemand!.expect(path(key), recorded);
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
    // The commit's own file: its time as it was written. Uploaded again since: as fetched now.
    if (await holdsCommitted(path(key), recorded, got.version))
      await giveTime(path(key), recorded.mtime_ms);
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
