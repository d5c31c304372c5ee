/**
 * The commit of an output folder: one object, `.state/commit.json`, naming
 * every file of the folder (sync.ts tells how a run fetches it and
 * put-folder.ts how the next one is written). Its layout, its own check
 * (the count and hash of its list of files, each object named once, every
 * extract the folder knows), and its reading: a damaged commit, or one gone
 * while the data it named is there, is refused with what to do (exit 1).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { StateError } from '../errors.js';
import { olderFolder } from './folder-format.js';
import type { ObjectStore, StoredObject } from './store.js';

export const COMMIT_KEY = '.state/commit.json';

/** What to do about a damaged or missing commit. */
const COMMIT_REPAIR = `restore it from the store's versions (or a backup), or start the folder over in an empty prefix`;

/** A data file's object as a put names it: `data.v20261002T031500Z-3f9a1c.parquet`. */
const VERSIONED_OBJECT = /\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/;

/** The commit's own layout (a folder of another is refused with the way to rebuild it). */
export const COMMIT_VERSION = 5;

const committedFileSchema = z.object({
  key: z.string(),
  bytes: z.number(),
  /** The SHA-256 of its bytes: what a partition's fingerprint is made of. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The store's version of the object, as its upload returned it (a data file's). */
  version: z.string().optional(),
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
    hash.update(JSON.stringify([path, file.key, file.bytes, file.version ?? '', file.sha256]));
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
  const missing = known.filter((path) => !(path in commit.files));
  if (missing.length > 0)
    return `it names no file for ${missing.length} extract(s) the folder knows (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', ...' : ''})`;
  return undefined;
}

/** Where the folder keeps what it knows of its extracts (pipeline/manifest.ts writes it). */
const EXPORTS_KEY = '.state/exports.json';

/** The extracts the folder knows (`.state/exports.json`, held in the commit's state), by path; undefined when that file is not JSON. */
function knownExtracts(state: Commit['state']): string[] | undefined {
  try {
    return Object.keys((JSON.parse(state[EXPORTS_KEY] ?? '{}') ?? {}) as object);
  } catch {
    return undefined;
  }
}

/** A JSON document of the store's own, parsed: damaged, it is named with what to do. */
export function parsedOwn<T>(
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

/** The folder's last commit; undefined for a folder never written. A damaged one is refused (exit 1). */
export async function readCommit(store: ObjectStore): Promise<Commit | undefined> {
  return (await readCommitVersioned(store))?.commit;
}

/** The folder's last commit and the version of its object (the parent the next commit names). */
export async function readCommitVersioned(
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
