import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { RunError } from '../../src/errors.js';
import { StateStore } from '../../src/pipeline/state.js';
import { LOCK_HEARTBEAT_MS, LOCK_STALE_MS, acquireLock } from '../../src/store/folder-lock.js';
import { processIdentity } from '../../src/util/process.js';
import { removeTemporaryFiles } from '../../src/util/fs.js';
import { ROOT } from '../helpers/cli.js';
import { testDir } from '../helpers/tmp.js';

describe('the output lock', () => {
  it('stops a second run on the same output folder with a clear error', async () => {
    const dir = await testDir();
    const release = await acquireLock(dir, 'first');
    await expect(acquireLock(dir, 'second')).rejects.toThrow(
      new RegExp(
        `in use by another road-etl run \\(pipeline first, pid ${process.pid} on ${hostname()}`,
      ),
    );
    await release();
    const again = await acquireLock(dir, 'second');
    await again();
  });

  it('takes over a lock left by a process that is gone', async () => {
    const dir = await testDir();
    const child = spawn(process.execPath, ['-e', '']);
    await once(child, 'exit');
    await acquireLock(dir, 'x').then((release) => release());
    await writeFile(
      join(dir, '.state', 'lock'),
      JSON.stringify({
        pid: child.pid,
        hostname: hostname(),
        started_at: 'then',
        pipeline: 'dead',
      }),
    );
    const release = await acquireLock(dir, 'alive');
    expect(JSON.parse(await readFile(join(dir, '.state', 'lock'), 'utf8'))).toMatchObject({
      pid: process.pid,
      pipeline: 'alive',
    });
    await release();
  });

  it('takes over a lock file that is empty or damaged', async () => {
    const dir = await testDir();
    await acquireLock(dir, 'x').then((release) => release());
    await writeFile(join(dir, '.state', 'lock'), '');
    const release = await acquireLock(dir, 'next');
    expect(JSON.parse(await readFile(join(dir, '.state', 'lock'), 'utf8'))).toMatchObject({
      pid: process.pid,
      pipeline: 'next',
    });
    await release();
  });
});

/** Writes a lock file as another run would have, and sets its time (the heartbeat) `ageMs` back. */
async function writeLock(dir: string, held: Record<string, unknown>, ageMs = 0): Promise<void> {
  await mkdir(join(dir, '.state'), { recursive: true });
  const file = join(dir, '.state', 'lock');
  await writeFile(file, JSON.stringify({ started_at: 'then', pipeline: 'other', ...held }));
  const then = new Date(Date.now() - ageMs);
  await utimes(file, then, then);
}

async function holder(dir: string): Promise<unknown> {
  return JSON.parse(await readFile(join(dir, '.state', 'lock'), 'utf8'));
}

describe('the owner of the output lock', () => {
  it('is dead when its process is a zombie (exited, not yet reaped)', async () => {
    const dir = await testDir();
    // the inner process ends a moment after the outer one has become `sleep`, which never reaps it
    const parent = spawn('sh', ['-c', 'sh -c "sleep 0.2" & echo $!; exec sleep 30']);
    try {
      const [line] = (await once(parent.stdout, 'data')) as [Buffer];
      const pid = Number(line.toString().trim());
      let state = '';
      for (let i = 0; i < 100 && state !== 'Z'; i++) {
        await sleep(20);
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
      }
      expect(state).toBe('Z');
      const { start, boot } = await processIdentity(pid);
      await writeLock(dir, { pid, hostname: hostname(), process_start: start, boot_id: boot });
      const release = await acquireLock(dir, 'next');
      expect(await holder(dir)).toMatchObject({ pid: process.pid, pipeline: 'next' });
      await release();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('is dead when its pid now belongs to another process (started at another moment)', async () => {
    const dir = await testDir();
    const me = await processIdentity();
    const other = String(Number(me.start) - 1);
    await writeLock(dir, {
      pid: process.pid,
      hostname: hostname(),
      process_start: other,
      boot_id: me.boot,
    });
    const release = await acquireLock(dir, 'next');
    expect(await holder(dir)).toMatchObject({ pipeline: 'next' });
    await release();
  });

  it('is alive while its process runs: the lock of a live run is never taken over', async () => {
    const dir = await testDir();
    const child = spawn('sleep', ['30']);
    try {
      await once(child, 'spawn');
      const { start, boot } = await processIdentity(child.pid);
      await writeLock(
        dir,
        { pid: child.pid, hostname: hostname(), process_start: start, boot_id: boot },
        10 * LOCK_STALE_MS,
      );
      await expect(acquireLock(dir, 'next')).rejects.toThrow(/in use by another road-etl run/);
      expect(await holder(dir)).toMatchObject({ pid: child.pid });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('on another host is alive until its heartbeat is older than the stated staleness', async () => {
    const dir = await testDir();
    await writeLock(dir, { pid: 1, hostname: 'another-host' }, LOCK_STALE_MS - 10_000);
    await expect(acquireLock(dir, 'next')).rejects.toThrow(
      /in use by another road-etl run \(pipeline other, pid 1 on another-host.*no heartbeat for 120 s/,
    );
    await writeLock(dir, { pid: 1, hostname: 'another-host' }, LOCK_STALE_MS + 10_000);
    const release = await acquireLock(dir, 'next');
    expect(await holder(dir)).toMatchObject({ pid: process.pid, pipeline: 'next' });
    await release();
  });

  it('keeps its lock fresh with a heartbeat, and releases only its own lock', async () => {
    vi.useFakeTimers({ toFake: ['setInterval'] });
    try {
      const dir = await testDir();
      const file = join(dir, '.state', 'lock');
      const release = await acquireLock(dir, 'mine');
      const then = new Date(Date.now() - LOCK_STALE_MS * 2);
      await utimes(file, then, then);
      vi.advanceTimersByTime(LOCK_HEARTBEAT_MS);
      for (let i = 0; i < 50 && (await stat(file)).mtimeMs < Date.now() - 60_000; i++)
        await sleep(10);
      expect((await stat(file)).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
      // another run took the folder over meanwhile: releasing leaves its lock alone
      await writeFile(file, JSON.stringify({ pid: 1, hostname: 'another-host', token: 'theirs' }));
      await release();
      expect(await holder(dir)).toMatchObject({ token: 'theirs' });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('checkpoints', () => {
  it('round-trips a step record', async () => {
    const dir = await testDir();
    const store = new StateStore(dir);
    expect(await store.read('s')).toBeUndefined();
    const state = store.step('s', undefined);
    await state.save({ offset: '2024-01-01T00:00:00.000Z', seen: ['a'] });
    await state.finish('succeeded');
    expect(await store.read('s')).toMatchObject({
      status: 'succeeded',
      checkpoint: { offset: '2024-01-01T00:00:00.000Z', seen: ['a'] },
    });
  });

  it('refuses a damaged state file with a message that says what to do', async () => {
    const dir = await testDir();
    const store = new StateStore(dir);
    await store.step('events', undefined).save({ offset: 1 });
    await writeFile(join(dir, '.state', 'events.json'), '{"status": "succ');
    const error = await store.read('events').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunError);
    expect((error as Error).message).toMatch(
      /state file .*events\.json is damaged .*--reset events/,
    );
  });

  it('is never half-written, however often the writer is killed', async () => {
    const dir = await testDir();
    // A writer that saves ever larger checkpoints as fast as it can.
    const script = `
      import { StateStore } from './dist/pipeline/state.js';
      const state = new StateStore(${JSON.stringify(dir)}).step('s', undefined);
      for (let i = 0; ; i++) {
        await state.save({ i, padding: 'x'.repeat(1000 + (i % 50) * 1000) });
        if (i === 0) process.stdout.write('saved\\n');
      }
    `;
    const seen: { i: number; padding: number }[] = [];
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = once(child, 'exit');
      // Killed once it writes (however long a busy machine takes to start it), somewhere in its saves.
      await once(child.stdout, 'data');
      await sleep(Math.random() * 250);
      child.kill('SIGKILL');
      const [code, signal] = (await exited) as [number | null, string | null];
      expect(signal, `the writer stopped by itself with code ${code}`).toBe('SIGKILL');
      // A damaged file would make read() throw.
      const record = await new StateStore(dir).read('s');
      if (record)
        seen.push({
          i: record.checkpoint['i'] as number,
          padding: (record.checkpoint['padding'] as string).length,
        });
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.map((s) => s.padding)).toEqual(seen.map((s) => 1000 + (s.i % 50) * 1000));
    // A killed writer leaves its temporary file in the scratch folder, never beside the checkpoint.
    expect((await readdir(join(dir, '.state'))).filter((n) => n.startsWith('.'))).toEqual([]);
    const leftovers = await readdir(join(dir, '.state', 'tmp'));
    const removed = await removeTemporaryFiles(dir);
    expect(removed.length).toBe(leftovers.length);
    expect(await readdir(join(dir, '.state', 'tmp'))).toEqual([]);
  });
});
