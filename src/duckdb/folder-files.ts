/**
 * What an output folder holds, as a run sees it: the names in its folders,
 * each file's size and content (its SHA-256), and what the steps write and
 * remove. Every step lists the folder through this seam, never the disk
 * directly: in a run, the folder is its last commit and what the night's
 * steps did since (store/working-copy.ts), whose files are fetched when a
 * step reads them. A folder read as it lies on a disk (one no run committed)
 * is the disk.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { sha256File } from '../util/fs.js';

export interface FolderEntry {
  name: string;
  /** A folder (else a file). */
  folder: boolean;
}

export interface FolderFiles {
  /** The entries of `folder`, sorted by name; none when it is not there. */
  list(folder: string): FolderEntry[];
  /** A file's size in bytes; undefined when there is none. */
  size(file: string): number | undefined;
  /** What a file holds: the SHA-256 of its bytes (hex); undefined when there is none. */
  content(file: string): string | undefined;
  /** Removes a file, or a folder with all it holds (nothing when it is not there). */
  remove(path: string): Promise<void>;
  /** Makes these files of the folder readable here; resolves to those fetched for it (none on a disk). */
  bring(files: readonly string[]): Promise<readonly string[]>;
  /** A file a step (or the run's description) wrote: its size and content, as the writer knows them. */
  record(file: string, written: { bytes: number; sha256: string }): void;
}

/** The SHA-256 of a file's bytes, read at once (a folder read as it lies: its files are few or small). */
function hashNow(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** The folder as the disk holds it. */
export const DISK: FolderFiles = {
  list(folder) {
    try {
      return readdirSync(folder, { withFileTypes: true })
        .map((entry) => ({ name: entry.name, folder: entry.isDirectory() }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch {
      return [];
    }
  },
  size(file) {
    const info = statSync(file, { throwIfNoEntry: false });
    return info?.isFile() ? info.size : undefined;
  },
  content(file) {
    return this.size(file) === undefined ? undefined : hashNow(file);
  },
  remove(path) {
    return rm(path, { recursive: true, force: true });
  },
  bring() {
    return Promise.resolve([]);
  },
  record() {
    return undefined;
  },
};

/** The listing a step's context carries (its run's), or the disk. */
export function folderFilesOf(context: { partitions?: { folderFiles: FolderFiles } }): FolderFiles {
  return context.partitions?.folderFiles ?? DISK;
}

/** The names of the entries of `folder`, sorted. */
export function namesIn(files: FolderFiles, folder: string): string[] {
  return files.list(folder).map((entry) => entry.name);
}

/** Records a file just written (a description, a sidecar, a dataset's file) in the folder, hashing its bytes; resolves to its content. */
export async function recordWritten(files: FolderFiles, file: string): Promise<string> {
  const [{ size }, sha256] = await Promise.all([stat(file), sha256File(file)]);
  files.record(file, { bytes: size, sha256 });
  return sha256;
}
