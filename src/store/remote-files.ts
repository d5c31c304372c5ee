/**
 * The local copy of a folder in an object store, as the run sees it: the
 * files fetched or written here, and the files of the folder's commit not
 * fetched (FolderFiles, duckdb/folder-files.ts). A file not fetched is listed
 * and stat'ed with the size and time its commit gives it, so that listings,
 * fingerprints and plans see the folder whole; it is fetched before a step
 * whose plan reads it (pipeline/fetch-reads.ts). One removed by a step is no
 * longer part of the folder; the put carries those left over from the commit
 * into the next one as they are.
 */
import { rm } from 'node:fs/promises';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { FileStat } from '../duckdb/fingerprints.js';
import { DISK, type FolderEntry, type FolderFiles } from '../duckdb/folder-files.js';
import { MissingObjectError } from '../errors.js';
import type { ObjectStore } from './store.js';
import { giveTime, transferAll } from './transfer.js';
import { sha256File } from '../util/fs.js';

/** A file of the commit not fetched: the object that holds it, its size and time. */
export interface Unfetched {
  key: string;
  bytes: number;
  mtime_ms: number;
  /** The object's version the commit names (a data file's). */
  version?: string | undefined;
  /** The content the commit names (a file written after it: an extract, the report). */
  sha256?: string | undefined;
}

/**
 * Whether a file fetched as `got` (its version) holds what the commit names:
 * the version the commit records, or the content (sha256) of a file written
 * after the commit.
 */
export async function holdsCommitted(
  file: string,
  recorded: Pick<Unfetched, 'version' | 'sha256'>,
  got: string,
): Promise<boolean> {
  if (recorded.version !== undefined) return got === recorded.version;
  return recorded.sha256 !== undefined && (await sha256File(file)) === recorded.sha256;
}

export class RemoteFiles implements FolderFiles {
  readonly #store: ObjectStore;
  readonly #root: string;
  /** Local path -> the object it stands for, while not fetched. */
  readonly #unfetched = new Map<string, Unfetched>();
  /** Folder -> the names in it that stand for files not fetched, or folders holding some. */
  readonly #names = new Map<string, Map<string, boolean>>();
  /** What was fetched for the steps. */
  fetched = { files: 0, bytes: 0 };

  /** The local copy's folder. */
  get root(): string {
    return this.#root;
  }

  constructor(store: ObjectStore, root: string) {
    this.#store = store;
    this.#root = root;
  }

  /** Names `file` as the commit's, held by the object `recorded`, not fetched. */
  expect(file: string, recorded: Unfetched): void {
    this.#unfetched.set(file, recorded);
    let folder = false;
    for (let path = file; path.startsWith(this.#root + sep); path = dirname(path)) {
      const parent = dirname(path);
      let names = this.#names.get(parent);
      if (!names) this.#names.set(parent, (names = new Map<string, boolean>()));
      names.set(path.slice(parent.length + 1), folder);
      folder = true;
    }
  }

  list(folder: string): FolderEntry[] {
    const entries = DISK.list(folder);
    const named = this.#names.get(folder);
    if (!named) return entries;
    const seen = new Set(entries.map((entry) => entry.name));
    for (const [name, isFolder] of named)
      if (!seen.has(name) && this.#holds(join(folder, name), isFolder))
        entries.push({ name, folder: isFolder });
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Whether `path` still stands for a file not fetched, or (a folder) holds one. */
  #holds(path: string, isFolder: boolean): boolean {
    if (!isFolder) return this.#unfetched.has(path);
    const names = this.#names.get(path);
    return names !== undefined && [...names].some(([name, f]) => this.#holds(join(path, name), f));
  }

  stat(file: string): FileStat | undefined {
    const local = statSync(file, { bigint: true, throwIfNoEntry: false });
    if (local) return local;
    const recorded = this.#unfetched.get(file);
    return (
      recorded && { size: BigInt(recorded.bytes), mtimeNs: BigInt(recorded.mtime_ms) * 1_000_000n }
    );
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
    for (const file of this.#unfetched.keys())
      if (file === path || file.startsWith(path + sep)) this.#unfetched.delete(file);
  }

  /** Whether `file` is the commit's and not fetched (nor written here since). */
  has(file: string): boolean {
    return this.#unfetched.has(file) && statSync(file, { throwIfNoEntry: false }) === undefined;
  }

  /**
   * Fetches the object of a file not fetched into its place, with the
   * commit's time; an object changed since the commit (by something other
   * than a put of road-etl, which writes down what it uploads) is refused,
   * not taken for the commit's.
   */
  async #download(file: string, recorded: Unfetched): Promise<void> {
    mkdirSync(dirname(file), { recursive: true });
    const got = await this.#store.download(recorded.key, file).catch((error: unknown) => {
      // Named by the file it holds, which a repair names.
      if (error instanceof MissingObjectError)
        throw new MissingObjectError(error.url, error.key, {
          cause: error,
          path: relative(this.#root, file).split(sep).join('/'),
        });
      throw error;
    });
    if (!(await holdsCommitted(file, recorded, got.version))) {
      await rm(file, { force: true });
      throw new MissingObjectError(this.#store.url, recorded.key, {
        path: relative(this.#root, file).split(sep).join('/'),
        changed: true,
      });
    }
    await giveTime(file, recorded.mtime_ms);
    this.fetched.files++;
    this.fetched.bytes += got.bytes;
  }

  /** Fetches those of `files` not fetched (TRANSFERS at a time); resolves to those fetched. */
  async bring(files: readonly string[]): Promise<string[]> {
    const wanted = [...new Set(files)].filter((file) => this.has(file));
    await transferAll(wanted, async (file) => {
      await this.#download(file, this.#unfetched.get(file)!);
      this.#unfetched.delete(file);
    });
    return wanted;
  }

  /**
   * The commit's files neither fetched, nor removed, nor written here since,
   * by their path in the folder (with `/`): what the next commit names as the
   * last one did.
   */
  get left(): Map<string, Unfetched> {
    const left = new Map<string, Unfetched>();
    for (const [file, recorded] of this.#unfetched)
      if (this.has(file)) left.set(relative(this.#root, file).split(sep).join('/'), recorded);
    return left;
  }
}
