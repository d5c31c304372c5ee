/**
 * The local folder a command works on when --output names a folder in an
 * object store: a copy of its last commit in an empty local folder, removed
 * after, its data files known from the commit (remote-files.ts) and fetched
 * when the command reads them. A command that writes (report) holds the
 * store's lock and puts back what changed.
 */
import { rm } from 'node:fs/promises';
import { makeScratchCopy } from './scratch.js';
import { relative, sep } from 'node:path';
import { openStore } from '../store/open.js';
import { assertOwnFolder, fetchFolder } from '../store/sync.js';
import { putFolder } from '../store/put-folder.js';
import { RemoteFiles } from '../store/remote-files.js';
import { writeViews } from '../pipeline/folder-description.js';
import { outputTarget, type CommonArgs } from './common.js';
import type { CliIo } from './io.js';
import { DISK, type FolderFiles } from '../duckdb/folder-files.js';

export interface OutputFolder {
  /** The local folder to work on. */
  folder: string;
  /** A path in it as the user names it (under the store's URL when there is one). */
  shown: (path: string) => string;
  /** The folder's listing (a folder in a store: with the commit's files not fetched, which it fetches when brought). */
  files: FolderFiles;
}

export async function withOutputFolder<T>(
  args: CommonArgs,
  io: CliIo,
  work: (output: OutputFolder) => Promise<T>,
  /** Puts what the command wrote back to the store, under its lock (named so). */
  writes?: { lock: string },
): Promise<T> {
  const target = outputTarget(args);
  if (target.kind === 'local')
    return work({
      folder: target.folder,
      shown: (path) => path,
      files: DISK,
    });
  const store = await openStore(target.url, io.env);
  const local = await makeScratchCopy();
  let held: Awaited<ReturnType<typeof store.lock>> | undefined;
  try {
    await assertOwnFolder(store);
    held = writes ? await store.lock(writes.lock) : undefined;
    const remote = new RemoteFiles(store, local);
    const fetched = await fetchFolder(store, local, remote);
    const result = await work({
      folder: local,
      shown: (path) =>
        `${target.url.replace(/\/?$/, '/')}${relative(local, path).split(sep).join('/')}`,
      files: remote,
    });
    if (writes) {
      // views.sql as this folder's listing names it: the copy fetched may be a killed put's.
      await writeViews(local, remote);
      await putFolder(store, local, fetched, { onDemand: remote });
    }
    return result;
  } finally {
    await held?.release();
    await rm(local, { recursive: true, force: true });
  }
}
