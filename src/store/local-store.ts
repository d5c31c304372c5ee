/**
 * The output folder on a local (or mounted) file system, as an ObjectStore:
 * its files are the objects. A run works on a copy of the folder's commit in
 * the folder's own `.state/work/` (store/scratch.ts), so that a fetch and a put
 * are hard links, not copies: a file is fetched by a link to its object,
 * and put by a link to the file written, renamed into place. Neither is ever
 * written to where it lies: every write of road-etl makes a new file and
 * renames it (DESIGN.md), and a data file's new version is an object of its
 * own (put-folder.ts). Where the copy cannot lie in the folder (a folder a
 * command may only read), a file of another file system is copied: never a
 * symbolic link, which DuckDB, kept to the copy's folder, does not follow.
 * The lock is the folder's own (.state/lock, see acquireLock).
 */
import { copyFile, link, readFile, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { MissingObjectError } from '../errors.js';
import { acquireLock } from './folder-lock.js';
import { scratchFolder } from '../layout.js';
import { commitFileDurably, makeFolder, temporaryPath, writeFileAtomic } from '../util/fs.js';
import type { HeldLock, ObjectStore, StoredObject, Versioned } from './store.js';

/** Where commands keep their copies of the folder, and a put its drafts: never objects. */
export const WORK_FOLDER = '.state/work';
const OWN_SCRATCH = ['.state/work/', '.state/tmp/'];

/** `to` as a hard link to `from`; where the file system has no link between them, a copy. */
async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP') throw error;
    await copyFile(from, to);
  }
}

export class LocalStore implements ObjectStore {
  readonly url: string;
  readonly folder: string;
  /** For a command that only reads: its copy lies outside the folder where the folder is read-only (store/scratch.ts). */
  readonly reading: boolean;

  constructor(folder: string, { reading = false }: { reading?: boolean } = {}) {
    this.folder = folder;
    this.url = folder.endsWith(sep) ? folder : `${folder}${sep}`;
    this.reading = reading;
  }

  #path(key: string): string {
    return join(this.folder, ...key.split('/'));
  }

  /**
   * An object's version is its size and time to the millisecond (kept by a
   * link, and by a copy that keeps times: `cp -a`, Node's `cp`).
   */
  async #object(key: string): Promise<StoredObject> {
    const info = await stat(this.#path(key), { bigint: true });
    if (!info.isFile())
      throw Object.assign(new Error(`${this.#path(key)} is not a file`), { code: 'EISDIR' });
    return {
      key,
      bytes: Number(info.size),
      version: `${info.size}:${(info.mtimeNs + 500_000n) / 1_000_000n}`,
    };
  }

  async list(prefix = ''): Promise<StoredObject[]> {
    const entries = await readdir(this.folder, { recursive: true, withFileTypes: true }).catch(
      () => [],
    );
    const keys = entries
      .filter((e) => e.isFile())
      .map((e) => relative(this.folder, join(e.parentPath, e.name)).split(sep).join('/'))
      .filter((key) => key.startsWith(prefix) && !OWN_SCRATCH.some((s) => key.startsWith(s)))
      .sort();
    return Promise.all(keys.map((key) => this.#object(key)));
  }

  async read(key: string): Promise<Buffer | undefined> {
    return readFile(this.#path(key)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
  }

  async readVersioned(key: string): Promise<Versioned | undefined> {
    const data = await this.read(key);
    if (data === undefined) return undefined;
    return { data, version: (await this.#object(key)).version };
  }

  /** Under the folder's lock (enforced), a check of the version, then a rename. */
  async writeIf(
    key: string,
    body: string,
    version: string | undefined,
  ): Promise<string | undefined> {
    const now = await this.#object(key).then(
      (object) => object.version,
      () => undefined,
    );
    if (now !== version) return undefined;
    const path = this.#path(key);
    await makeFolder(dirname(path));
    await writeFileAtomic(path, body, scratchFolder(this.folder));
    return (await this.#object(key)).version;
  }

  async download(key: string, file: string): Promise<StoredObject> {
    const object = await this.#object(key).catch((error: unknown) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new MissingObjectError(this.url, key, { cause: error });
      // Something else in its place (a folder): not the object.
      if (code === 'EISDIR') throw new MissingObjectError(this.url, key, { changed: true });
      throw error;
    });
    const partial = `${file}.download-${process.pid}`;
    await rm(partial, { force: true });
    await linkOrCopy(this.#path(key), partial);
    await rename(partial, file);
    return object;
  }

  async upload(file: string, key: string): Promise<StoredObject> {
    const path = this.#path(key);
    await makeFolder(dirname(path));
    const temporary = temporaryPath(path, scratchFolder(this.folder));
    try {
      await linkOrCopy(file, temporary);
      await commitFileDurably(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return this.#object(key);
  }

  /** Removes the objects, and the folders they leave empty (a partition's, a dataset's). */
  async remove(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      await rm(this.#path(key), { force: true });
      for (let folder = dirname(this.#path(key)); folder !== this.folder; folder = dirname(folder))
        if (
          !(await rmdir(folder).then(
            () => true,
            () => false,
          ))
        )
          break;
    }
  }

  async lock(pipeline: string): Promise<HeldLock> {
    const release = await acquireLock(this.folder, pipeline);
    return { guarantee: 'enforced', release };
  }
}
