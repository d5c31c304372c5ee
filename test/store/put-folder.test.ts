import { mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/store/local-store.js';
import { putFolder } from '../../src/store/put-folder.js';
import { RemoteFiles } from '../../src/store/remote-files.js';
import { COMMIT_KEY, PUT_KEY, fetchFolder, readCommit } from '../../src/store/sync.js';
import { testDir } from '../helpers/tmp.js';

/** A store (the storage seam's local one) that counts its listings of the folder's data. */
class CountingStore extends LocalStore {
  listings = 0;
  override list(prefix?: string) {
    // (the lock probes a killed run may have left are looked for under .state/: a few keys)
    if (!prefix?.startsWith('.state/')) this.listings++;
    return super.list(prefix);
  }
}

const TIME = new Date('2026-10-01T12:00:00.123Z');

/** Writes `files` (key -> text) into `folder`, each with TIME. */
async function write(folder: string, files: Record<string, string>): Promise<void> {
  for (const [key, text] of Object.entries(files)) {
    const file = join(folder, key);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
    await utimes(file, TIME, TIME);
  }
}

/** A store holding a committed folder of two partitions, a manifest and a checkpoint. */
async function committed() {
  const store = new CountingStore(join(await testDir(), 'bucket'));
  const first = join(await testDir(), 'first');
  await write(first, {
    'd/day=2026-10-01/data.parquet': 'day one',
    'd/day=2026-10-02/data.parquet': 'day two',
    'manifest.json': '{}',
    '.state/step.json': '{"checkpoint":{}}',
  });
  await putFolder(store, first, { commit: undefined, listed: [] });
  return store;
}

const keysOf = async (store: LocalStore) =>
  (await store.list()).map((o) => o.key).filter((k) => !k.startsWith('.state/tmp/'));

describe('a folder in an object store, put and fetched again', () => {
  it('is fetched without a listing once it has a commit, and each put removes what it no longer names', async () => {
    const store = await committed();
    store.listings = 0;
    const local = join(await testDir(), 'night');
    const remote = new RemoteFiles(store, local);
    try {
      const fetched = await fetchFolder(store, local, remote);
      expect(store.listings).toBe(0);
      expect(fetched.listed.sort()).toEqual([
        'd/day=2026-10-01/data.parquet',
        'd/day=2026-10-02/data.parquet',
        'manifest.json',
      ]);
      // The night rewrites day two and drops day one.
      await write(local, { 'd/day=2026-10-02/data.parquet': 'day two, again' });
      await utimes(join(local, 'd/day=2026-10-02/data.parquet'), new Date(), new Date());
      await rm(join(local, 'd/day=2026-10-01'), { recursive: true });
      const put = await putFolder(store, local, fetched, { onDemand: remote });
      expect(store.listings).toBe(0);
      expect(put).toMatchObject({ uploaded: 1, removed: 1 });
    } finally {
      remote.close();
    }
    expect(await keysOf(store)).toEqual([
      COMMIT_KEY,
      'd/day=2026-10-02/data.parquet',
      'manifest.json',
    ]);
  });

  it('removes the placeholders left while it puts, and its commit still names their objects', async () => {
    const store = await committed();
    const local = join(await testDir(), 'night');
    const remote = new RemoteFiles(store, local);
    try {
      const fetched = await fetchFolder(store, local, remote);
      expect(remote.waiting).toEqual(['d/day=2026-10-02/data.parquet']);
      await write(local, { 'd/day=2026-10-03/data.parquet': 'day three' });
      await putFolder(store, local, fetched, { onDemand: remote });
      // Day two, never read, is gone from the local copy with its partition folder.
      await expect(stat(join(local, 'd/day=2026-10-02'))).rejects.toThrow(/ENOENT/);
      expect(await readFile(join(local, 'd/day=2026-10-03/data.parquet'), 'utf8')).toBe(
        'day three',
      );
    } finally {
      remote.close();
    }
    const again = join(await testDir(), 'next');
    await fetchFolder(store, again);
    expect(await readFile(join(again, 'd/day=2026-10-02/data.parquet'), 'utf8')).toBe('day two');
    expect(await readFile(join(again, 'd/day=2026-10-03/data.parquet'), 'utf8')).toBe('day three');
  });

  it('after a put killed half-way: what it uploaded over the commit is fetched as rewritten, what it added is removed by the next put', async () => {
    const store = await committed();
    const before = await readCommit(store);
    // A night that rewrote day two and added day three, killed once its data was up.
    const killed = join(await testDir(), 'killed');
    await fetchFolder(store, killed);
    await write(killed, {
      'd/day=2026-10-02/data.parquet': 'day two, rewritten',
      'd/day=2026-10-03/data.parquet': 'day three',
    });
    await utimes(join(killed, 'd/day=2026-10-02/data.parquet'), new Date(), new Date());
    await expect(
      putFolder(
        store,
        killed,
        { commit: before, listed: Object.keys(before!.files) },
        {
          passed: (phase) => {
            if (phase === 'uploaded') throw new Error('killed');
          },
        },
      ),
    ).rejects.toThrow('killed');
    expect(await readCommit(store)).toEqual(before);
    expect(await keysOf(store)).toContain(PUT_KEY);

    // The next run, on another empty worker: no listing, day two fetched at once as rewritten.
    store.listings = 0;
    const local = join(await testDir(), 'again');
    const remote = new RemoteFiles(store, local);
    try {
      const fetched = await fetchFolder(store, local, remote);
      expect(store.listings).toBe(0);
      const two = join(local, 'd/day=2026-10-02/data.parquet');
      expect(await readFile(two, 'utf8')).toBe('day two, rewritten');
      expect((await stat(two)).mtimeMs).toBeGreaterThan(TIME.getTime() + 1000);
      // Day one, the dataset's first file (fetched at once for its view), keeps the commit's time.
      const one = join(local, 'd/day=2026-10-01/data.parquet');
      expect(Math.round((await stat(one)).mtimeMs)).toBe(TIME.getTime());
      expect(fetched.listed).toContain('d/day=2026-10-03/data.parquet');
      await putFolder(store, local, fetched, { onDemand: remote });
    } finally {
      remote.close();
    }
    expect(await keysOf(store)).toEqual([
      COMMIT_KEY,
      'd/day=2026-10-01/data.parquet',
      'd/day=2026-10-02/data.parquet',
      'manifest.json',
    ]);
    expect(Object.keys((await readCommit(store))!.files)).toContain(
      'd/day=2026-10-02/data.parquet',
    );
  });

  it('after a put killed between its commit and its removals: the next put removes what that commit no longer named', async () => {
    const store = await committed();
    const night = join(await testDir(), 'night');
    const fetched = await fetchFolder(store, night);
    await rm(join(night, 'd/day=2026-10-01'), { recursive: true });
    await expect(
      putFolder(store, night, fetched, {
        passed: (phase) => {
          if (phase === 'committed') throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    expect(await keysOf(store)).toContain('d/day=2026-10-01/data.parquet');
    expect((await readCommit(store))!.obsolete).toEqual(['d/day=2026-10-01/data.parquet']);

    const local = join(await testDir(), 'again');
    const again = await fetchFolder(store, local);
    await putFolder(store, local, again);
    expect(await keysOf(store)).toEqual([
      COMMIT_KEY,
      'd/day=2026-10-02/data.parquet',
      'manifest.json',
    ]);
  });
});
