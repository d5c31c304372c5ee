/**
 * The files of a folder in an object store that a run has not fetched: each
 * stands in the local folder as a placeholder of its size and time (a sparse
 * file, no disk space), so that listing, fingerprints and incremental plans
 * see the folder as it is, and is fetched when something reads it.
 *
 * What reads a file fetches it first where it knows what it reads (the
 * partitions of an incremental build's `reads`, an extract hashed again); a
 * statement that meets a placeholder anyway fails on it as on a damaged file
 * (no Parquet magic), and the step is run again once that file's partition
 * is fetched, or more of its dataset where the step met more of it
 * (fetchAround). So a night fetches the partitions it reads, not the history
 * in the bucket.
 */
import { closeSync, ftruncateSync, openSync, statSync, utimesSync } from 'node:fs';
import { stat, utimes } from 'node:fs/promises';
import { dirname, relative, sep } from 'node:path';
import type { ObjectStore } from './store.js';

interface Waiting {
  key: string;
  bytes: number;
  mtimeMs: number;
  ino: number;
}

/**
 * Whether a file's stat is the placeholder's: the same file (inode), size and
 * time (to the millisecond: a time set from milliseconds reads back a hair off).
 */
function isPlaceholder(info: { ino: number; size: number; mtimeMs: number }, waiting: Waiting) {
  return (
    info.ino === waiting.ino &&
    info.size === waiting.bytes &&
    Math.round(info.mtimeMs) === waiting.mtimeMs
  );
}

/** The folders fetched on demand in this process, by their local root. */
const registry = new Set<RemoteFiles>();

/** The placeholders of the folder `path` lies in, if it lies in one fetched on demand. */
export function remoteFilesOf(path: string): RemoteFiles | undefined {
  for (const remote of registry) if (remote.holds(path)) return remote;
  return undefined;
}

/** A partition folder's value (`column=value`), if `folder` is one. */
function partitionValue(folder: string): string | undefined {
  const name = folder.slice(folder.lastIndexOf(sep) + 1);
  const at = name.indexOf('=');
  return at > 0 ? name.slice(at + 1) : undefined;
}

/** The dataset folder of a file: above its partition folders. */
function datasetFolder(file: string): string {
  let folder = dirname(file);
  while (partitionValue(folder) !== undefined) folder = dirname(folder);
  return folder;
}

/**
 * The month of a file of a dataset kept by day (a partition per date or
 * instant); undefined for any other (kept by month, say: a few partitions).
 */
function monthOf(file: string): string | undefined {
  const folder = dirname(file);
  const value = partitionValue(folder);
  const column = folder.slice(folder.lastIndexOf(sep) + 1).split('=')[0];
  if (value === undefined || column === 'month' || column === 'year') return undefined;
  return /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 7) : undefined;
}

export class RemoteFiles {
  readonly #store: ObjectStore;
  readonly #root: string;
  /** Local path -> the object it stands for. */
  readonly #waiting = new Map<string, Waiting>();
  /** What was fetched on demand. */
  fetched = { files: 0, bytes: 0 };

  constructor(store: ObjectStore, root: string) {
    this.#store = store;
    this.#root = root;
    registry.add(this);
  }

  /** Whether `path` lies in this folder. */
  holds(path: string): boolean {
    return path.startsWith(this.#root + sep);
  }

  /** Puts a placeholder of `bytes` and time `mtimeMs` for the object `key` at `file`. */
  place(key: string, file: string, bytes: number, mtimeMs: number): void {
    const fd = openSync(file, 'w');
    try {
      ftruncateSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    const time = new Date(mtimeMs);
    utimesSync(file, time, time);
    // The commit's time (whole milliseconds), given again to the file once fetched.
    this.#waiting.set(file, { key, bytes, mtimeMs, ino: statSync(file).ino });
  }

  /** Whether `file` is a placeholder still (not fetched, not replaced). */
  has(file: string): boolean {
    const waiting = this.#waiting.get(file);
    const info = waiting && statSync(file, { throwIfNoEntry: false });
    return info !== undefined && isPlaceholder(info, waiting!);
  }

  /** Fetches the object a placeholder stands for into `file`, with the commit's time. */
  async #download(waiting: Waiting, file: string): Promise<void> {
    const got = await this.#store.download(waiting.key, file);
    const time = new Date(waiting.mtimeMs);
    await utimes(file, time, time);
    this.fetched.files++;
    this.fetched.bytes += got.bytes;
  }

  /** Fetches those of `files` that are placeholders, each with the time it had. */
  async fetch(files: Iterable<string>): Promise<number> {
    let count = 0;
    for (const file of files) {
      if (!this.has(file)) continue;
      await this.#download(this.#waiting.get(file)!, file);
      this.#waiting.delete(file);
      count++;
    }
    return count;
  }

  /**
   * A statement met the placeholder `file`: fetches the placeholders of its
   * partition, or, when `misses` says the statement met others of its dataset
   * (`misses`: of this unit of work, file -> dataset folder), more of them:
   * the month's partitions at a second miss in that month, every partition
   * once it met three months. Resolves to the number fetched.
   */
  fetchAround(file: string, misses: Map<string, string>): Promise<number> {
    const dataset = datasetFolder(file);
    const month = monthOf(file);
    const before = [...misses].filter(([, d]) => d === dataset).map(([f]) => f);
    misses.set(file, dataset);
    const months = new Set([...before, file].map(monthOf));
    const sameMonth = before.some((f) => month !== undefined && monthOf(f) === month);
    const wanted =
      month === undefined || months.size >= 3
        ? (path: string) => path.startsWith(dataset + sep)
        : sameMonth
          ? (path: string) => path.startsWith(dataset + sep) && monthOf(path) === month
          : (path: string) => dirname(path) === dirname(file);
    return this.fetch([...this.#waiting.keys()].filter(wanted));
  }

  /**
   * Before the folder is put back: a placeholder moved elsewhere by a step
   * (renamed: the same file) is fetched where it is now, so that no
   * placeholder is ever put as data. `files`: the folder's files with their
   * inodes. Resolves to the number fetched.
   */
  async settle(files: Iterable<[string, number]>): Promise<number> {
    // Those no longer where they were placed (moved, or removed, or replaced by a new file).
    const gone = new Map<number, Waiting>();
    for (const [file, waiting] of this.#waiting)
      if (!this.has(file)) {
        gone.set(waiting.ino, waiting);
        this.#waiting.delete(file);
      }
    let count = 0;
    for (const [file, ino] of files) {
      const moved = gone.get(ino);
      if (!moved) continue;
      const info = await stat(file);
      if (!isPlaceholder(info, moved)) continue;
      await this.#download(moved, file);
      count++;
    }
    return count;
  }

  /** The folder is done with (its local copy goes). */
  close(): void {
    registry.delete(this);
  }

  /** The placeholders left, relative to the folder (for tests and logs). */
  get waiting(): string[] {
    return [...this.#waiting.keys()].map((file) => relative(this.#root, file));
  }
}

/**
 * The placeholder a DuckDB error says it met (it cannot be read as Parquet),
 * with its folder fetched on demand; undefined for any other error.
 */
export function remoteMiss(
  file: string | undefined,
): { remote: RemoteFiles; file: string } | undefined {
  if (file === undefined) return undefined;
  const remote = remoteFilesOf(file);
  return remote?.has(file) ? { remote, file } : undefined;
}
