/**
 * The local folder a command works on: a copy of the output folder's last
 * commit in an empty local folder (store/scratch.ts), removed after, its data
 * files known from the commit (remote-files.ts) and fetched when the command
 * reads them. A command that writes (report) holds the store's lock and puts
 * back what changed. A local folder that no run has committed is read (and a
 * report written into it) as it lies.
 */
import { scratchCopy } from '../store/scratch.js';
import { LocalStore } from '../store/local-store.js';
import { join, relative, sep } from 'node:path';
import { openStore } from '../store/open.js';
import { assertOwnFolder, fetchFolder } from '../store/sync.js';
import { COMMIT_KEY, assertCommitNotLost } from '../store/commit.js';
import { commitId, putFolder } from '../store/put-folder.js';
import { RemoteFiles } from '../store/remote-files.js';
import { nameCommit } from '../pipeline/manifest.js';
import { outputTarget, type CommonArgs } from './common.js';
import type { CliIo } from './io.js';
import { DISK, type FolderFiles } from '../duckdb/folder-files.js';
import { existsSync } from 'node:fs';

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
  {
    writes,
    without = new Set(),
  }: {
    /** Puts what the command wrote back to the store, under its lock (named so). */
    writes?: { lock: string };
    /** Files of the commit left out of the copy, as the run removes them first (--repair). */
    without?: ReadonlySet<string>;
  } = {},
): Promise<T> {
  const target = outputTarget(args);
  // A local folder no run committed (Parquet made otherwise, or none yet): its files as they lie,
  // unless they are a committed folder's whose commit is gone.
  if (target.kind === 'local' && !existsSync(join(target.folder, ...COMMIT_KEY.split('/')))) {
    const store = new LocalStore(target.folder, { reading: true });
    assertCommitNotLost(store, await store.list());
    return work({ folder: target.folder, shown: (path) => path, files: DISK });
  }
  const url = target.kind === 'local' ? target.folder : target.url;
  const store =
    target.kind === 'local'
      ? new LocalStore(url, { reading: !writes })
      : await openStore(url, io.env);
  const scratch = await scratchCopy(store);
  const local = scratch.folder;
  let held: Awaited<ReturnType<typeof store.lock>> | undefined;
  try {
    await assertOwnFolder(store);
    await scratch.make();
    held = writes ? await store.lock(writes.lock) : undefined;
    const remote = new RemoteFiles(store, local);
    const fetched = await fetchFolder(store, local, remote, without);
    const result = await work({
      folder: local,
      shown: (path) =>
        target.kind === 'local'
          ? join(url, relative(local, path))
          : `${url.replace(/\/?$/, '/')}${relative(local, path).split(sep).join('/')}`,
      files: remote,
    });
    if (writes) {
      const commit = commitId();
      await nameCommit(local, commit);
      await putFolder(store, local, fetched, { onDemand: remote, id: commit });
    }
    return result;
  } finally {
    await held?.release();
    await scratch.remove();
  }
}
