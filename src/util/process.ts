/**
 * Who a process is, beyond its pid: a pid is reused once its process is gone,
 * and a process that has died stays in the table as a zombie until its parent
 * reaps it. On Linux, /proc/<pid>/stat gives the process's state and its start
 * time (clock ticks since boot), and the boot id tells one boot from the next;
 * together they name one process for as long as it lives.
 */
import { readFile } from 'node:fs/promises';

export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat field 22); undefined without /proc. */
  start: string | undefined;
  /** The kernel's boot id; undefined without /proc. */
  boot: string | undefined;
}

/** The identity of a running process (this one by default). */
export async function processIdentity(pid = process.pid): Promise<ProcessIdentity> {
  const stat = await readStat(pid);
  return { pid, start: stat?.start, boot: await bootId() };
}

/**
 * Whether the process `who` names is still running: its pid is in use by a
 * process that started at the same moment of the same boot, and is not a
 * zombie. Without /proc, whether the pid is in use at all.
 */
export async function isRunning(who: ProcessIdentity): Promise<boolean> {
  const boot = await bootId();
  if (who.boot !== undefined && boot !== undefined && who.boot !== boot) return false;
  const stat = await readStat(who.pid);
  if (stat) {
    if (stat.state === 'Z' || stat.state === 'X' || stat.state === 'x') return false;
    return who.start === undefined || who.start === stat.start;
  }
  if (boot !== undefined) return false; // /proc is there, and the pid is not
  try {
    process.kill(who.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readStat(pid: number): Promise<{ state: string; start: string } | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  // "pid (comm) state ..." where comm may hold spaces and parentheses: fields follow the last ")".
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const start = fields[19]; // field 22 of the whole line
  if (state === undefined || start === undefined) return undefined;
  return { state, start };
}

let boot: Promise<string | undefined> | undefined;

function bootId(): Promise<string | undefined> {
  boot ??= readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
    (text) => text.trim() || undefined,
    () => undefined,
  );
  return boot;
}
