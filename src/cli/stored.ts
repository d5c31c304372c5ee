/**
 * The local folder a command works on when --output names a folder in an
 * object store: a copy of its last commit, fetched into an empty local folder
 * and removed after. A command that writes (report) holds the store's lock and
 * puts back what changed; one that reads (query, validate) reads the commit.
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

export interface OutputFolder {
  /** The local folder to work on. */
  folder: string;
  /** A path in it as the user names it (under the store's URL when there is one). */
  shown: (path: string) => string;
}

export async function withOutputFolder<T>(
  args: CommonArgs,
  io: CliIo,
  work: (output: OutputFolder) => Promise<T>,
  /** Puts what the command wrote back to the store, under its lock (named so). */
  writes?: { lock: string },
  /** A command that reads the folder's partitions, not its data (plan): files fetched when read. */
  { onDemand = false }: { onDemand?: boolean } = {},
): Promise<T> {
  const target = outputTarget(args);
  if (target.kind === 'local') return work({ folder: target.folder, shown: (path) => path });
  const store = openStore(target.url, io.env);
  const local = await makeScratchCopy();
  let held: Awaited<ReturnType<typeof store.lock>> | undefined;
  try {
    await assertOwnFolder(store);
    held = writes ? await store.lock(writes.lock) : undefined;
    const remote = onDemand ? new RemoteFiles(store, local) : undefined;
    try {
      const fetched = await fetchFolder(store, local, remote);
      const result = await work({
        folder: local,
        shown: (path) =>
          `${target.url.replace(/\/?$/, '/')}${relative(local, path).split(sep).join('/')}`,
      });
      // views.sql as this folder's listing names it: the copy fetched may be a killed put's.
      if (writes) await writeViews(local);
      if (writes) await putFolder(store, local, fetched, remote ? { onDemand: remote } : {});
      return result;
    } finally {
      remote?.close();
    }
  } finally {
    await held?.release();
    await rm(local, { recursive: true, force: true });
  }
}
