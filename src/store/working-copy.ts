/**
 * The folder a run works on: its last commit and what the night's steps did
 * since. Each file is named with the object that holds it, its size and its
 * content (SHA-256); a step lists the folder here (FolderFiles), never on the
 * disk. The commit's files are fetched into the local copy when a step's plan
 * reads them (pipeline/fetch-reads.ts); a file a step writes is recorded with
 * the size and content its writer knows, and one it removes is no longer
 * part of the folder. The next commit is this folder as the night leaves it
 * (put-folder.ts): the last commit's files as they were, the files written
 * since, without those removed. Nothing is listed on the disk to make it.
 */
import { rm } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { FolderEntry, FolderFiles } from '../duckdb/folder-files.js';
import { MissingObjectError } from '../errors.js';
import type { ObjectStore } from './store.js';
import { transferAll } from './transfer.js';
import { sha256File } from '../util/fs.js';

/** A file as a commit names it: the object that holds it, its size, content and (data) version. */
export interface CommittedFile {
  key: string;
  bytes: number;
  /** The SHA-256 of its bytes. */
  sha256: string;
  /** The store's version of the object, as its upload returned it (a data file's). */
  version?: string | undefined;
}

/** A file of the working folder. */
interface Held {
  /** As the last commit names it; undefined for a file written since. */
  committed: CommittedFile | undefined;
  bytes: number;
  sha256: string;
  /** Whether its bytes are in the local copy. */
  here: boolean;
}

/**
 * Whether a file fetched as `got` (its version) holds what the commit names:
 * the version the commit records (a data file), or its content.
 */
export async function holdsCommitted(
  file: string,
  recorded: CommittedFile,
  got: string,
): Promise<boolean> {
  if (recorded.version !== undefined) return got === recorded.version;
  return (await sha256File(file)) === recorded.sha256;
}

/** A file of the folder as a night leaves it (WorkingCopy.folder). */
export interface FolderFile {
  /** As the last commit names it; undefined for a file written since. */
  committed: CommittedFile | undefined;
  bytes: number;
  sha256: string;
  /** Written since the last commit with other bytes: the next commit names the local copy's. */
  written: boolean;
}

export class WorkingCopy implements FolderFiles {
  readonly #store: ObjectStore;
  readonly #root: string;
  /** Local path -> the file. */
  readonly #files = new Map<string, Held>();
  /** Folder -> the names in it that stand for files, or folders holding some (some perhaps removed since). */
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

  #local(path: string): string {
    return join(this.#root, ...path.split('/'));
  }

  #relative(file: string): string {
    return relative(this.#root, file).split(sep).join('/');
  }

  /**
   * Names the commit's file `path` (relative, with `/`); `here` when its bytes
   * are in the local copy. `held`: the bytes fetched when its object is not
   * what the commit names (a killed put's upload), which the next put writes
   * whatever the steps do.
   */
  place(
    path: string,
    recorded: CommittedFile,
    here: boolean,
    held?: { bytes: number; sha256: string },
  ): void {
    const file = this.#local(path);
    this.#files.set(
      file,
      held
        ? { committed: undefined, ...held, here: true }
        : { committed: recorded, bytes: recorded.bytes, sha256: recorded.sha256, here },
    );
    this.#name(file);
  }

  #name(file: string): void {
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
    const named = this.#names.get(folder);
    if (!named) return [];
    const entries: FolderEntry[] = [];
    for (const [name, isFolder] of named)
      if (this.#holds(join(folder, name), isFolder)) entries.push({ name, folder: isFolder });
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Whether `path` is a file of the folder, or (a folder) holds one. */
  #holds(path: string, isFolder: boolean): boolean {
    if (!isFolder) return this.#files.has(path);
    const names = this.#names.get(path);
    return names !== undefined && [...names].some(([name, f]) => this.#holds(join(path, name), f));
  }

  size(file: string): number | undefined {
    return this.#files.get(file)?.bytes;
  }

  content(file: string): string | undefined {
    return this.#files.get(file)?.sha256;
  }

  record(file: string, written: { bytes: number; sha256: string }): void {
    const before = this.#files.get(file);
    // (written again with the commit's bytes, it stays the commit's file: folder)
    this.#files.set(file, { committed: before?.committed, ...written, here: true });
    this.#name(file);
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
    for (const file of this.#files.keys())
      if (file === path || file.startsWith(path + sep)) this.#files.delete(file);
  }

  /**
   * Fetches the object of a commit's file into its place; an object changed
   * since the commit (by something other than a put of road-etl, which writes
   * down what it uploads) is refused, not taken for the commit's.
   */
  async #download(file: string, recorded: CommittedFile): Promise<void> {
    mkdirSync(dirname(file), { recursive: true });
    const path = this.#relative(file);
    const got = await this.#store.download(recorded.key, file).catch((error: unknown) => {
      // Named by the file it holds, which a repair names.
      if (error instanceof MissingObjectError)
        throw new MissingObjectError(error.url, error.key, { cause: error, path });
      throw error;
    });
    if (!(await holdsCommitted(file, recorded, got.version))) {
      await rm(file, { force: true });
      throw new MissingObjectError(this.#store.url, recorded.key, { path, changed: true });
    }
    this.fetched.files++;
    this.fetched.bytes += got.bytes;
  }

  /** Fetches those of `files` not here yet (TRANSFERS at a time); resolves to those fetched. */
  async bring(files: readonly string[]): Promise<string[]> {
    const wanted = [...new Set(files)].filter((file) => {
      const held = this.#files.get(file);
      return held !== undefined && !held.here;
    });
    await transferAll(wanted, async (file) => {
      const held = this.#files.get(file)!;
      await this.#download(file, held.committed!);
      held.here = true;
    });
    return wanted;
  }

  /**
   * The folder as the night leaves it, by path (relative, with `/`): each
   * file as the last commit names it, or (`written`) with the size and
   * content of the bytes in the local copy that the next commit names.
   */
  get folder(): Map<string, FolderFile> {
    const now = new Map<string, FolderFile>();
    for (const [file, { committed, bytes, sha256 }] of this.#files) {
      const same = committed?.sha256 === sha256 && committed.bytes === bytes;
      now.set(this.#relative(file), { committed, bytes, sha256, written: !same });
    }
    return now;
  }
}
