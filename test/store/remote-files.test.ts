import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/store/local-store.js';
import { RemoteFiles } from '../../src/store/remote-files.js';
import { testDir } from '../helpers/tmp.js';

/** A store holding `keys` (each its own text), and an empty local folder with a placeholder of each. */
async function placed(keys: string[]) {
  const served = join(await testDir(), 'store');
  const local = join(await testDir(), 'local');
  const store = new LocalStore(served);
  const staged = join(await testDir(), 'staged');
  const versions = new Map<string, string>();
  for (const key of keys) {
    const file = join(staged, key);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, `the bytes of ${key}`);
    versions.set(key, (await store.upload(file, key)).version);
  }
  const remote = new RemoteFiles(store, local);
  const time = Date.parse('2026-10-01T12:00:00.123Z');
  for (const key of keys) {
    const file = join(local, key);
    await mkdir(dirname(file), { recursive: true });
    remote.place(file, {
      key,
      bytes: `the bytes of ${key}`.length,
      mtime_ms: time,
      version: versions.get(key)!,
    });
  }
  return { remote, local, time, store, staged };
}

describe('a folder fetched on demand (RemoteFiles)', () => {
  it('stands each file in as a placeholder of its size and time, fetched when asked, with that time', async () => {
    const { remote, local, time } = await placed(['d/day=2026-10-01/data.parquet']);
    const file = join(local, 'd/day=2026-10-01/data.parquet');
    const info = await stat(file);
    expect(info.size).toBe('the bytes of d/day=2026-10-01/data.parquet'.length);
    expect(Math.round(info.mtimeMs)).toBe(time);
    expect((await readFile(file)).every((b) => b === 0)).toBe(true);
    expect(remote.has(file)).toBe(true);
    expect(await remote.fetch([file])).toEqual([file]);
    expect(await readFile(file, 'utf8')).toBe('the bytes of d/day=2026-10-01/data.parquet');
    expect(Math.round((await stat(file)).mtimeMs)).toBe(time);
    expect(remote.has(file)).toBe(false);
  });

  it('knows a placeholder replaced by a step as data, and never fetches over it', async () => {
    const { remote, local } = await placed(['d/day=2026-10-01/data.parquet']);
    const file = join(local, 'd/day=2026-10-01/data.parquet');
    await writeFile(`${file}.new`, 'written by the run');
    await rename(`${file}.new`, file);
    expect(remote.has(file)).toBe(false);
    expect(await remote.fetch([file])).toEqual([]);
    expect(await readFile(file, 'utf8')).toBe('written by the run');
  });

  it('fetches a placeholder a step moved where it is now before the folder is put', async () => {
    const { remote, local } = await placed(['d/day=2026-10-01/data.parquet']);
    const from = join(local, 'd/day=2026-10-01/data.parquet');
    const to = join(local, 'd/month=2026-10/data.parquet');
    await mkdir(dirname(to), { recursive: true });
    await rename(from, to);
    const info = await stat(to);
    const moved = { ino: info.ino, size: info.size, mtimeMs: Math.round(info.mtimeMs) };
    expect(await remote.settle(new Map([[to, moved]]))).toBe(1);
    expect(await readFile(to, 'utf8')).toBe('the bytes of d/day=2026-10-01/data.parquet');
  });

  it('refuses an object written since the commit by something else, rather than take it for the commit’s', async () => {
    const key = 'd/day=2026-10-01/data.parquet';
    const { remote, local, store, staged } = await placed([key]);
    const file = join(local, key);
    await writeFile(join(staged, key), 'the bytes of another writer');
    await store.upload(join(staged, key), key);
    await expect(remote.fetch([file])).rejects.toThrow(
      /is not the object the folder's last commit names/,
    );
    expect(remote.has(file)).toBe(false);
  });
});
