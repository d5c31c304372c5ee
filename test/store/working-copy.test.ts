import { createHash } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/store/local-store.js';
import { WorkingCopy } from '../../src/store/working-copy.js';
import { testDir } from '../helpers/tmp.js';
import { PartitionIndex } from '../../src/duckdb/partitions.js';
import { createMemoryLogger } from '../../src/log.js';
import { bringReads } from '../../src/pipeline/fetch-reads.js';

/** A store holding `keys` (each its own text), and an empty local folder that knows them as its commit's. */
async function committed(keys: string[]) {
  const served = join(await testDir(), 'store');
  const local = join(await testDir(), 'local');
  const store = new LocalStore(served);
  const staged = join(await testDir(), 'staged');
  const remote = new WorkingCopy(store, local);
  for (const key of keys) {
    const file = join(staged, key);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, `the bytes of ${key}`);
    const { version } = await store.upload(file, key);
    remote.place(
      key,
      { key, bytes: `the bytes of ${key}`.length, sha256: sha256(key), version },
      false,
    );
  }
  return { remote, local, store, staged };
}

/** The content of the file `key` as committed(). */
const sha256 = (key: string) => createHash('sha256').update(`the bytes of ${key}`).digest('hex');

/** The folder as the night leaves it: each file's path, and whether the next put writes it. */
const leaves = (remote: WorkingCopy) =>
  Object.fromEntries([...remote.folder].map(([path, file]) => [path, file.written]));

const DAY_ONE = 'd/day=2026-10-01/data.parquet';
const DAY_TWO = 'd/day=2026-10-02/data.parquet';

describe('the folder a night works on (WorkingCopy)', () => {
  it('lists each file of the commit with the size and content the commit gives it, none of them here until fetched', async () => {
    const { remote, local } = await committed([DAY_ONE, DAY_TWO]);
    const file = join(local, DAY_ONE);
    await expect(stat(join(local, 'd'))).rejects.toThrow(/ENOENT/);
    expect(remote.list(local)).toEqual([{ name: 'd', folder: true }]);
    expect(remote.list(join(local, 'd'))).toEqual([
      { name: 'day=2026-10-01', folder: true },
      { name: 'day=2026-10-02', folder: true },
    ]);
    expect(remote.list(dirname(file))).toEqual([{ name: 'data.parquet', folder: false }]);
    expect(remote.size(file)).toBe(`the bytes of ${DAY_ONE}`.length);
    expect(remote.content(file)).toBe(sha256(DAY_ONE));
    expect(await remote.bring([file])).toEqual([file]);
    expect(await readFile(file, 'utf8')).toBe(`the bytes of ${DAY_ONE}`);
    expect(await remote.bring([file])).toEqual([]);
    expect(leaves(remote)).toEqual({ [DAY_ONE]: false, [DAY_TWO]: false });
  });

  it('takes a file a step wrote and recorded for the folder’s, never fetches over it, and the next put writes it', async () => {
    const { remote, local } = await committed([DAY_ONE]);
    const file = join(local, DAY_ONE);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, 'written by the run');
    remote.record(file, { bytes: 18, sha256: 'a'.repeat(64) });
    expect(remote.size(file)).toBe(18);
    expect(remote.content(file)).toBe('a'.repeat(64));
    expect(await remote.bring([file])).toEqual([]);
    expect(await readFile(file, 'utf8')).toBe('written by the run');
    expect(leaves(remote)).toEqual({ [DAY_ONE]: true });
  });

  it('a file written again with the bytes the commit names stays the commit’s file; one a step wrote but did not record is not the folder’s', async () => {
    const { remote, local } = await committed([DAY_ONE]);
    const file = join(local, DAY_ONE);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, `the bytes of ${DAY_ONE}`);
    remote.record(file, { bytes: `the bytes of ${DAY_ONE}`.length, sha256: sha256(DAY_ONE) });
    await writeFile(join(local, 'd/day=2026-10-01/other.parquet'), 'not recorded');
    expect(remote.list(dirname(file))).toEqual([{ name: 'data.parquet', folder: false }]);
    expect(leaves(remote)).toEqual({ [DAY_ONE]: false });
  });

  it('forgets what a step removed: a file, or a folder with all it holds', async () => {
    const { remote, local } = await committed([DAY_ONE, DAY_TWO, 'e/data.parquet']);
    await remote.remove(join(local, DAY_ONE));
    expect(remote.size(join(local, DAY_ONE))).toBeUndefined();
    expect(remote.list(join(local, 'd')).map((e) => e.name)).toEqual(['day=2026-10-02']);
    await remote.remove(join(local, 'd'));
    expect(remote.list(local).map((e) => e.name)).toEqual(['e']);
    expect(leaves(remote)).toEqual({ 'e/data.parquet': false });
  });

  it('fetches the partitions a plan reads, and no other', async () => {
    const { remote, local } = await committed([DAY_ONE, DAY_TWO]);
    const logger = createMemoryLogger();
    const { fetched, bytes } = await bringReads(
      new PartitionIndex(remote),
      [{ name: 'd', folder: join(local, 'd') }],
      {
        stepId: 'a step',
        reads: [{ dataset: 'd', partitions: ['2026-10-02'] }],
        logger,
      },
    );
    expect(fetched).toEqual([join(local, DAY_TWO)]);
    // The bytes it reads, by the commit's sizes.
    expect(bytes).toBe(Buffer.byteLength(`the bytes of ${DAY_TWO}`));
    expect(logger.events.map((e) => e.fields['fetched'])).toEqual([1]);
    await expect(stat(join(local, DAY_ONE))).rejects.toThrow(/ENOENT/);
    expect(await readFile(join(local, DAY_TWO), 'utf8')).toBe(`the bytes of ${DAY_TWO}`);
  });

  it('refuses an object written since the commit by something else, rather than take it for the commit’s', async () => {
    const { remote, local, store, staged } = await committed([DAY_ONE]);
    const file = join(local, DAY_ONE);
    await writeFile(join(staged, DAY_ONE), 'the bytes of another writer');
    await store.upload(join(staged, DAY_ONE), DAY_ONE);
    await expect(remote.bring([file])).rejects.toThrow(
      /the folder's last commit names this object, and the store holds another one under its name/,
    );
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });
});
