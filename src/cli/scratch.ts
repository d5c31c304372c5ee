/**
 * The local copy a command makes of a folder in an object store: a folder of
 * the system's temporary folder named after the process that made it, so that
 * the copy a killed run left behind is known and removed by the next command.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRunning, processIdentity } from '../util/process.js';

const PREFIX = 'road-etl-output-';

/** A new, empty local copy's folder: `road-etl-output-<pid>-<start>-XXXXXX`. */
export async function makeScratchCopy(): Promise<string> {
  const me = await processIdentity();
  await removeLeftCopies();
  return mkdtemp(join(tmpdir(), `${PREFIX}${me.pid}-${me.start ?? 0}-`));
}

/** Removes the local copies of commands whose process is gone; resolves to how many. */
export async function removeLeftCopies(): Promise<number> {
  const names = await readdir(tmpdir()).catch(() => []);
  let removed = 0;
  for (const name of names) {
    const m = new RegExp(`^${PREFIX}(\\d+)-(\\d+)-\\w+$`).exec(name);
    if (!m) continue;
    const who = { pid: Number(m[1]), start: m[2] === '0' ? undefined : m[2], boot: undefined };
    if (await isRunning(who)) continue;
    await rm(join(tmpdir(), name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}
