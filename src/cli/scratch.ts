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

const COPY = new RegExp(`^${PREFIX}(\\d+)-(\\d+)-\\w+$`);

/** Removes the local copies of commands whose process is gone. */
async function removeLeftCopies(): Promise<void> {
  for (const name of await readdir(tmpdir()).catch(() => [])) {
    const m = COPY.exec(name);
    if (!m) continue;
    const who = { pid: Number(m[1]), start: m[2] === '0' ? undefined : m[2], boot: undefined };
    if (!(await isRunning(who))) await rm(join(tmpdir(), name), { recursive: true, force: true });
  }
}
