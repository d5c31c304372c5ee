/**
 * The files of a folder in an object store that a run has not fetched: each
 * stands in the local copy as a placeholder of its size and time (a sparse
 * file, no disk space), so that listing, fingerprints and plans see the folder
 * as its commit names it. The runner fetches what each step's decision reads
 * before the step runs (pipeline/fetch-reads.ts); the put fetches a
 * placeholder a step moved, and puts no other.
 */
import { closeSync, fstatSync, ftruncateSync, futimesSync, openSync, statSync } from 'node:fs';
import { rm, utimes } from 'node:fs/promises';
import { once } from 'node:events';
import { basename, dirname, relative, sep } from 'node:path';
import { Worker } from 'node:worker_threads';
import { RunError } from '../errors.js';
import type { ObjectStore } from './store.js';
import { transferAll } from './sync.js';

interface Waiting {
  key: string;
  bytes: number;
  mtimeMs: number;
  /** The object's version the commit names. */
  version: string;
  ino: number;
}

/** What a stat says of a file that tells a placeholder (its time in milliseconds). */
export interface FileInfo {
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * Whether a file's stat is the placeholder's: the same file (inode), size and
 * time (to the millisecond: a time set from milliseconds reads back a hair off).
 */
function isPlaceholder(info: FileInfo, waiting: Waiting) {
  return (
    info.ino === waiting.ino &&
    info.size === waiting.bytes &&
    Math.round(info.mtimeMs) === waiting.mtimeMs
  );
}

/** Removes `files`, then those of `folders` left empty (a thread's code: RemoteFiles.discard). */
const REMOVER = `
const { rmdirSync, unlinkSync } = require('node:fs');
const { workerData } = require('node:worker_threads');
for (const file of workerData.files) try { unlinkSync(file); } catch {}
for (const folder of workerData.folders) try { rmdirSync(folder); } catch {}
`;

export class RemoteFiles {
  readonly #store: ObjectStore;
  readonly #root: string;
  /** Local path -> the object it stands for. */
  readonly #waiting = new Map<string, Waiting>();
  /** What was fetched on demand. */
  fetched = { files: 0, bytes: 0 };

  /** The local copy's folder. */
  get root(): string {
    return this.#root;
  }

  constructor(store: ObjectStore, root: string) {
    this.#store = store;
    this.#root = root;
  }

  /**
   * Puts a placeholder for the object `key`, of the size and time the commit
   * gives it, at `file` (synchronous: thousands in a row cost least so).
   */
  place(
    file: string,
    {
      key,
      bytes,
      mtime_ms: mtimeMs,
      version,
    }: { key: string; bytes: number; mtime_ms: number; version: string },
  ): void {
    const fd = openSync(file, 'w');
    try {
      ftruncateSync(fd, bytes);
      // The commit's time (whole milliseconds), given again to the file once fetched.
      const time = new Date(mtimeMs);
      futimesSync(fd, time, time);
      this.#waiting.set(file, { key, bytes, mtimeMs, version, ino: fstatSync(fd).ino });
    } finally {
      closeSync(fd);
    }
  }

  /** Whether `file` is a placeholder still (not fetched, not replaced). */
  has(file: string): boolean {
    const waiting = this.#waiting.get(file);
    const info = waiting && statSync(file, { throwIfNoEntry: false });
    return info !== undefined && isPlaceholder(info, waiting!);
  }

  /**
   * Fetches the object a placeholder stands for into `file`, with the commit's
   * time; an object changed since the commit (by something other than a put
   * of road-etl, which writes down what it uploads) is refused, not taken for
   * the commit's.
   */
  async #download(waiting: Waiting, file: string): Promise<void> {
    const got = await this.#store.download(waiting.key, file);
    if (got.version !== waiting.version) {
      await rm(file, { force: true });
      throw new RunError(
        `${this.#store.url}${waiting.key} is not the object the folder's last commit names (it was written since by something other than road-etl): restore it from the store's versions or a backup`,
      );
    }
    const time = new Date(waiting.mtimeMs);
    await utimes(file, time, time);
    this.fetched.files++;
    this.fetched.bytes += got.bytes;
  }

  /**
   * Fetches those of `files` that are placeholders (TRANSFERS at a time), each
   * with the time it had; resolves to those fetched.
   */
  async fetch(files: Iterable<string>): Promise<string[]> {
    const wanted = [...new Set(files)].filter((file) => this.has(file));
    await transferAll(wanted, async (file) => {
      await this.#download(this.#waiting.get(file)!, file);
      this.#waiting.delete(file);
    });
    return wanted;
  }

  /**
   * Fetches the placeholders under the dataset folder `dataset` whose
   * partition folder (`column=value`) `wanted` accepts (every one without
   * partitions when `wanted` accepts the empty column). Resolves to the files fetched.
   */
  fetchPartitions(dataset: string, wanted: (column: string, value: string) => boolean) {
    const chosen = [...this.#waiting.keys()].filter((path) => {
      if (!path.startsWith(dataset + sep)) return false;
      const name = basename(dirname(path));
      const at = name.indexOf('=');
      return dirname(path) === dataset
        ? wanted('', '')
        : at > 0 && wanted(name.slice(0, at), name.slice(at + 1));
    });
    return this.fetch(chosen);
  }

  /**
   * Before the folder is put back: a placeholder moved elsewhere by a step
   * (renamed: the same file) is fetched where it is, so that no placeholder
   * is ever put as data. `files`: every file of the folder with its inode,
   * size and time, as just stat'ed (none is stat'ed again). Resolves to the
   * number fetched.
   */
  async settle(files: ReadonlyMap<string, FileInfo>): Promise<number> {
    // Those no longer where they were placed (moved, or removed, or replaced by a new file).
    const gone = new Map<number, Waiting>();
    for (const [file, waiting] of this.#waiting) {
      const info = files.get(file);
      if (info === undefined || !isPlaceholder(info, waiting)) {
        gone.set(waiting.ino, waiting);
        this.#waiting.delete(file);
      }
    }
    let count = 0;
    if (gone.size === 0) return count;
    for (const [file, info] of files) {
      const moved = gone.get(info.ino);
      if (!moved || !isPlaceholder(info, moved)) continue;
      await this.#download(moved, file);
      count++;
    }
    return count;
  }

  /**
   * The put has listed the folder, so nothing reads a placeholder any more:
   * those still waiting go, with the partition folders they leave empty, in
   * a thread of their own while the put uploads (a year's 2,500 take a fifth
   * of a second to remove). What is left goes with the local copy.
   */
  async discard(): Promise<void> {
    const files = [...this.#waiting.keys()];
    this.#waiting.clear();
    if (files.length === 0) return;
    const folders = [...new Set(files.map((file) => dirname(file)))];
    const remover = new Worker(REMOVER, { eval: true, workerData: { files, folders } });
    // A file it could not remove is removed with the local copy.
    await once(remover, 'exit').catch(() => undefined);
  }

  /** The placeholders left, relative to the folder (for tests and logs). */
  get waiting(): string[] {
    return [...this.#waiting.keys()].map((file) => relative(this.#root, file));
  }
}
