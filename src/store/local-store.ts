/**
 * The output folder on a local (or mounted) file system, as an ObjectStore:
 * its files are the objects, each written to a temporary name and renamed, and
 * the lock is the folder's own (.state/lock, see acquireLock).
 */
import { copyFile, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { MissingObjectError } from '../errors.js';
import { acquireLock } from './folder-lock.js';
import { scratchFolder } from '../layout.js';
import { writeThrough } from '../util/fs.js';
import type { HeldLock, ObjectStore, StoredObject } from './store.js';

export class LocalStore implements ObjectStore {
  readonly url: string;
  readonly #folder: string;

  constructor(folder: string) {
    this.#folder = folder;
    this.url = folder;
  }

  #path(key: string): string {
    return join(this.#folder, ...key.split('/'));
  }

  async #object(key: string): Promise<StoredObject> {
    const info = await stat(this.#path(key), { bigint: true });
    return { key, bytes: Number(info.size), version: `${info.size}:${info.mtimeNs}` };
  }

  async list(prefix = ''): Promise<StoredObject[]> {
    const entries = await readdir(this.#folder, { recursive: true, withFileTypes: true }).catch(
      () => [],
    );
    const keys = entries
      .filter((e) => e.isFile())
      .map((e) => relative(this.#folder, join(e.parentPath, e.name)).split(sep).join('/'))
      .filter((key) => key.startsWith(prefix))
      .sort();
    return Promise.all(keys.map((key) => this.#object(key)));
  }

  async read(key: string): Promise<Buffer | undefined> {
    return readFile(this.#path(key)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
  }

  async download(key: string, file: string): Promise<StoredObject> {
    const object = await this.#object(key).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new MissingObjectError(`${this.url}/`, key, { cause: error });
      throw error;
    });
    const partial = `${file}.download-${process.pid}`;
    await copyFile(this.#path(key), partial);
    await rename(partial, file);
    return object;
  }

  async upload(file: string, key: string): Promise<StoredObject> {
    await writeThrough(this.#path(key), scratchFolder(this.#folder), (temporary) =>
      copyFile(file, temporary),
    );
    return this.#object(key);
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (const key of keys) await rm(this.#path(key), { force: true });
  }

  async lock(pipeline: string): Promise<HeldLock> {
    const release = await acquireLock(this.#folder, pipeline);
    return { guarantee: 'enforced', release };
  }
}
