/**
 * The local copy a command makes of its output folder's commit: a folder
 * named after the process that made it, so that the copy a killed command
 * left behind is known and removed by the next one. A copy of a local folder
 * lies in the folder's own `.state/work/` (on its file system: fetched and
 * put by hard links), or, for a command that only reads a folder it may not
 * write, in the system's temporary folder; a copy of a folder in a store lies
 * in the system's temporary folder.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore, WORK_FOLDER } from './local-store.js';
import type { ObjectStore } from './store.js';
import { exists, makeFolder } from '../util/fs.js';
import { isRunning, processIdentity } from '../util/process.js';

const PREFIX = 'road-etl-output-';

export interface ScratchCopy {
  /** The copy's folder (made by `make`). */
  folder: string;
  /** Makes the copy's folder, empty, once the command is known to go on (bad input writes nothing). */
  make(): Promise<void>;
  /** Removes the copy, and the folders made for it that nothing else holds. */
  remove(): Promise<void>;
}

/** A local copy's folder for `store`: `road-etl-output-<pid>-<start>-XXXXXX`. */
export async function scratchCopy(store: ObjectStore): Promise<ScratchCopy> {
  const me = await processIdentity();
  const name = `${PREFIX}${me.pid}-${me.start ?? 0}-${randomBytes(3).toString('hex')}`;
  let local = store instanceof LocalStore ? store.folder : undefined;
  if (
    local !== undefined &&
    store instanceof LocalStore &&
    store.reading &&
    !(await writable(local))
  )
    local = undefined;
  const parent = local === undefined ? tmpdir() : join(local, ...WORK_FOLDER.split('/'));
  const folder = join(parent, name);
  let made: boolean | undefined;
  return {
    folder,
    async make() {
      made = local !== undefined && !(await exists(local));
      await removeLeftCopies(parent);
      await makeFolder(parent);
      await mkdir(folder);
    },
    async remove() {
      if (made === undefined) return;
      await rm(folder, { recursive: true, force: true });
      if (local === undefined) return;
      // The folders made for it that nothing else holds: `.state/work`, `.state/tmp` (a put's
      // drafts), `.state`, and the folder itself where this command made it.
      const state = join(local, '.state');
      for (const folder of [parent, join(state, 'tmp'), state, ...(made ? [local] : [])])
        await rmdir(folder).catch(() => undefined);
    },
  };
}

/** Whether this process may make files in `folder` (an existing folder). */
async function writable(folder: string): Promise<boolean> {
  return access(folder, constants.W_OK).then(
    () => true,
    () => false,
  );
}

const COPY = new RegExp(`^${PREFIX}(\\d+)-(\\d+)-\\w+$`);

/** Removes the local copies of commands whose process is gone. */
async function removeLeftCopies(parent: string): Promise<void> {
  for (const name of await readdir(parent).catch(() => [])) {
    const m = COPY.exec(name);
    if (!m) continue;
    const who = { pid: Number(m[1]), start: m[2] === '0' ? undefined : m[2], boot: undefined };
    if (!(await isRunning(who))) await rm(join(parent, name), { recursive: true, force: true });
  }
}
