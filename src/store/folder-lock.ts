/**
 * The lock of an output folder on a local (or mounted) file system,
 * `.state/lock`: taken with an atomic link, so that two runs never hold it;
 * a lock of a run that is gone is taken over (object-lock.ts is the same for
 * a folder in an object store).
 */
import { randomUUID } from 'node:crypto';
import { link, readFile, rm, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { FolderInUseError, StateError } from '../errors.js';
import { STATE_FOLDER, scratchFolder } from '../layout.js';
import { makeFolder, temporaryPath, writeFileAtomic } from '../util/fs.js';
import { isRunning, processIdentity } from '../util/process.js';

/** What the lock file says of the run that holds it. */
export interface LockInfo {
  pid: number;
  hostname: string;
  started_at: string;
  pipeline: string;
  /** The holder's start time (clock ticks since boot) and boot id: its identity beyond the pid. */
  process_start?: string | undefined;
  boot_id?: string | undefined;
  /** Tells this lock from a later one of another run. */
  token?: string;
}

/** How often a run touches its lock file to show that it is alive. */
export const LOCK_HEARTBEAT_MS = 15_000;
/**
 * A lock written on another host is taken over once it has gone this long
 * without a heartbeat (its holder cannot be asked whether it is alive).
 */
export const LOCK_STALE_MS = 120_000;

/**
 * Whether the run that wrote `held` may still be running (see acquireLock):
 * on this host, its process is asked; on another, its last heartbeat (`mtimeMs`).
 */
export async function holderAlive(held: LockInfo, mtimeMs: number, now: number): Promise<boolean> {
  if (held.hostname === hostname()) {
    return isRunning({ pid: held.pid, start: held.process_start, boot: held.boot_id });
  }
  return now - mtimeMs < LOCK_STALE_MS;
}

/**
 * Takes the output folder's lock, or fails with a clear error when a live run
 * holds it. A lock of a run that is gone is taken over at once on the same host
 * (the holder's pid, start time and boot id tell whether it still runs: a
 * zombie or a reused pid does not count); a lock written on another host
 * (workers sharing a volume) is taken over once its heartbeat is older than
 * LOCK_STALE_MS. While held, the lock file's time is touched every
 * LOCK_HEARTBEAT_MS.
 */
export async function acquireLock(output: string, pipeline: string): Promise<() => Promise<void>> {
  const folder = join(output, STATE_FOLDER);
  await makeFolder(folder);
  const lock = join(folder, 'lock');
  const me = await processIdentity();
  const mine: LockInfo = {
    pid: process.pid,
    hostname: hostname(),
    started_at: new Date().toISOString(),
    pipeline,
    process_start: me.start,
    boot_id: me.boot,
    token: randomUUID(),
  };
  const scratch = scratchFolder(output);
  const draft = temporaryPath(lock, scratch);
  // The bid for the lock; gone while written (another run cleaning its scratch as it
  // starts), it is written again.
  const write = (): Promise<void> =>
    writeFileAtomic(draft, JSON.stringify(mine) + '\n', scratch).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return writeFileAtomic(draft, JSON.stringify(mine) + '\n', scratch);
    });
  try {
    await write();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await link(draft, lock); // atomic: fails if the lock exists
        return holdLock(lock, mine.token!);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && attempt < 2) {
          await write();
          continue;
        }
        if (code !== 'EEXIST') throw error;
      }
      const mtimeMs = await stat(lock).then(
        (s) => s.mtimeMs,
        () => 0,
      );
      const held = await readFile(lock, 'utf8')
        .then((text) => JSON.parse(text) as LockInfo)
        .catch(() => undefined);
      if (held && (await holderAlive(held, mtimeMs, Date.now()))) {
        const other = held.hostname !== mine.hostname;
        throw new FolderInUseError(
          `The output folder ${output} is in use by another road-etl run (pipeline ${held.pipeline}, pid ${held.pid} on ${held.hostname}, since ${held.started_at}); wait for it to finish` +
            (other
              ? ` (a lock of another host is taken over once it has had no heartbeat for ${LOCK_STALE_MS / 1000} s)`
              : ''),
        );
      }
      // Left by a run that is gone (or unreadable): take it over.
      await unlink(lock).catch(() => undefined);
    }
    throw new StateError(`Could not take the lock ${lock}: another run keeps taking it`);
  } finally {
    await rm(draft, { force: true });
  }
}

/** Keeps the heartbeat of a lock taken; the function returned releases it (if still ours). */
function holdLock(lock: string, token: string): () => Promise<void> {
  const beat = setInterval(() => {
    const now = new Date();
    utimes(lock, now, now).catch(() => undefined);
  }, LOCK_HEARTBEAT_MS);
  beat.unref();
  return async () => {
    clearInterval(beat);
    const held = await readFile(lock, 'utf8')
      .then((text) => JSON.parse(text) as LockInfo)
      .catch(() => undefined);
    if (held?.token === token) await unlink(lock).catch(() => undefined);
  };
}
