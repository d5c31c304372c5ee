/**
 * What an output folder holds, as a run sees it: the names in its folders and
 * each file's size and time. Every step lists the folder through this seam,
 * never the disk directly, so that a folder whose files are not all on this
 * machine (a copy of a commit in an object store, of which only what the
 * steps read is fetched) is seen whole. On a disk, it is the disk.
 */
import { readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { FileStat } from './fingerprints.js';

export interface FolderEntry {
  name: string;
  /** A folder (else a file). */
  folder: boolean;
}

export interface FolderFiles {
  /** The entries of `folder`, sorted by name; none when it is not there. */
  list(folder: string): FolderEntry[];
  /** A file's size and time; undefined when there is none. */
  stat(file: string): FileStat | undefined;
  /** Removes a file, or a folder with all it holds (nothing when it is not there). */
  remove(path: string): Promise<void>;
  /** Makes these files of the folder readable here; resolves to those fetched for it (none on a disk). */
  bring(files: readonly string[]): Promise<readonly string[]>;
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
  stat(file) {
    return statSync(file, { bigint: true, throwIfNoEntry: false });
  },
  remove(path) {
    return rm(path, { recursive: true, force: true });
  },
  bring() {
    return Promise.resolve([]);
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
