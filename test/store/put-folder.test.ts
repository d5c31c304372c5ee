import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/store/local-store.js';
import { putFolder } from '../../src/store/put-folder.js';
import { WorkingCopy } from '../../src/store/working-copy.js';
import { recordWritten } from '../../src/duckdb/folder-files.js';
import { PUT_KEY, fetchFolder } from '../../src/store/sync.js';
import { COMMIT_KEY, readCommit } from '../../src/store/commit.js';
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

/**
 * Writes each file anew into the working folder, as a step writes (a new
 * file, never into one fetched: a local store's is a link to its object),
 * and records it there; a state file (under .state/) is written only.
 */
async function write(working: WorkingCopy, files: Record<string, string>): Promise<void> {
  for (const [key, text] of Object.entries(files)) {
    const file = join(working.root, key);
    await mkdir(dirname(file), { recursive: true });
    await rm(file, { force: true });
    await writeFile(file, text);
    if (!key.startsWith('.state/')) await recordWritten(working, file);
  }
}

/** A night's working folder over the store's last commit, fetched into an empty local folder. */
async function night(store: LocalStore, name = 'night') {
  const working = new WorkingCopy(store, join(await testDir(), name));
  const fetched = await fetchFolder(store, working.root, working);
  return { working, fetched, local: working.root };
}

/** A store holding a committed folder of two partitions, a manifest and a checkpoint. */
async function committed() {
  const store = new CountingStore(join(await testDir(), 'bucket'));
  const first = new WorkingCopy(store, join(await testDir(), 'first'));
  await write(first, {
    'd/day=2026-10-01/data.parquet': 'day one',
    'd/day=2026-10-02/data.parquet': 'day two',
    'manifest.json': '{}',
    '.state/step.json': '{"checkpoint":{}}',
  });
  await putFolder(store, first.root, first, { commit: undefined, parent: undefined, listed: [] });
  return store;
}

/** The objects of the store, each data object's version (the put that wrote it) as `v*`. */
const keysOf = async (store: LocalStore) =>
  (await store.list())
    .map((o) => o.key.replace(/\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/, '.v*.parquet'))
    .filter((k) => !k.startsWith('.state/tmp/'));

/** The object that holds the file `path` in the store's last commit. */
const objectOf = async (store: LocalStore, path: string) =>
  (await readCommit(store))!.files[path]!.key;

describe('a folder in an object store, put and fetched again', () => {
  it('is fetched without a listing once it has a commit, and each put removes what it no longer names', async () => {
    const store = await committed();
    store.listings = 0;
    const objects = [
      await objectOf(store, 'd/day=2026-10-01/data.parquet'),
      await objectOf(store, 'd/day=2026-10-02/data.parquet'),
    ];
    const { working, fetched, local } = await night(store);
    expect(store.listings).toBe(0);
    expect(fetched.listed.sort()).toEqual([...objects, 'manifest.json']);
    // The night rewrites day two and drops day one.
    await write(working, { 'd/day=2026-10-02/data.parquet': 'day two, again' });
    await working.remove(join(local, 'd/day=2026-10-01'));
    const put = await putFolder(store, local, working, fetched);
    expect(store.listings).toBe(0);
    // Day two's new version is an object of its own; the old one goes with day one's. The
    // manifest, whose content is the one the last commit names, is not written again.
    expect(put).toMatchObject({ uploaded: 1, removed: 2 });
    const now = await objectOf(store, 'd/day=2026-10-02/data.parquet');
    expect(objects).not.toContain(now);
    expect((await store.read(now))?.toString()).toBe('day two, again');
    expect(await keysOf(store)).toEqual([
      COMMIT_KEY,
      'd/day=2026-10-02/data.v*.parquet',
      'manifest.json',
    ]);
  });

  it('names again the commit’s files it never fetched (never on this machine), but not those a step removed', async () => {
    const store = await committed();
    const { working, fetched, local } = await night(store);
    expect(working.list(join(local, 'd')).map((e) => e.name)).toEqual([
      'day=2026-10-01',
      'day=2026-10-02',
    ]);
    await expect(stat(join(local, 'd'))).rejects.toThrow(/ENOENT/);
    await working.remove(join(local, 'd/day=2026-10-01'));
    await write(working, { 'd/day=2026-10-03/data.parquet': 'day three' });
    await putFolder(store, local, working, fetched);
    await expect(stat(join(local, 'd/day=2026-10-02'))).rejects.toThrow(/ENOENT/);
    const next = await night(store, 'next');
    const day = (d: string) => join(next.local, `d/day=2026-10-0${d}/data.parquet`);
    expect(next.working.list(join(next.local, 'd')).map((e) => e.name)).toEqual([
      'day=2026-10-02',
      'day=2026-10-03',
    ]);
    await next.working.bring([day('2'), day('3')]);
    expect(await readFile(day('2'), 'utf8')).toBe('day two');
    expect(await readFile(day('3'), 'utf8')).toBe('day three');
  });

  it('after a put killed half-way: the commit, its objects and its descriptions are as they were, and the next put removes what the killed one uploaded', async () => {
    const store = await committed();
    const before = await readCommit(store);
    const objects = await keysOf(store);
    const two = await store.read(before!.files['d/day=2026-10-02/data.parquet']!.key);
    // A night that rewrote day two and the manifest and added day three, killed once all was up.
    const killed = await night(store, 'killed');
    await write(killed.working, {
      'd/day=2026-10-02/data.parquet': 'day two, rewritten',
      'd/day=2026-10-03/data.parquet': 'day three',
      'manifest.json': '{"night":2}',
    });
    await expect(
      putFolder(
        store,
        killed.local,
        killed.working,
        {
          commit: before,
          parent: (await store.readVersioned(COMMIT_KEY))!.version,
          listed: Object.values(before!.files).map((f) => f.key),
        },
        {
          passed: (phase) => {
            if (phase === 'uploaded') throw new Error('killed');
          },
        },
      ),
    ).rejects.toThrow('killed');
    expect(await readCommit(store)).toEqual(before);
    // The commit's data objects are untouched; the killed put's are beside them.
    expect(await store.read(before!.files['d/day=2026-10-02/data.parquet']!.key)).toEqual(two);
    expect(await keysOf(store)).toEqual(
      [
        ...objects,
        PUT_KEY,
        'd/day=2026-10-02/data.v*.parquet',
        'd/day=2026-10-03/data.v*.parquet',
      ].sort(),
    );

    // The next run, on another empty worker: no listing; the commit's data as committed.
    store.listings = 0;
    const { working: remote, fetched, local } = await night(store, 'again');
    expect(store.listings).toBe(0);
    // Day one, fetched when asked, as committed.
    const one = join(local, 'd/day=2026-10-01/data.parquet');
    await expect(stat(one)).rejects.toThrow(/ENOENT/);
    await remote.bring([one]);
    expect(await readFile(one, 'utf8')).toBe('day one');
    await remote.bring([join(local, 'd/day=2026-10-02/data.parquet')]);
    expect(await readFile(join(local, 'd/day=2026-10-02/data.parquet'), 'utf8')).toBe('day two');
    // The manifest, written after a commit only, is the last commit's.
    const manifest = join(local, 'manifest.json');
    expect(await readFile(manifest, 'utf8')).not.toBe('{"night":2}');
    expect(await store.read('manifest.json')).toEqual(await readFile(manifest));
    expect(remote.list(join(local, 'd')).map((e) => e.name)).not.toContain('day=2026-10-03');
    await putFolder(store, local, remote, fetched);
    expect(await keysOf(store)).toEqual(objects);
  });

  it('after a put killed between its commit and its removals: the next put removes what that commit no longer named', async () => {
    const store = await committed();
    const { working, fetched, local: folder } = await night(store);
    await working.remove(join(folder, 'd/day=2026-10-01'));
    await expect(
      putFolder(store, folder, working, fetched, {
        passed: (phase) => {
          if (phase === 'committed') throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    const one = Object.values(fetched.commit!.files).find((f) => f.key.includes('10-01'))!.key;
    expect(await keysOf(store)).toContain('d/day=2026-10-01/data.v*.parquet');
    expect((await readCommit(store))!.obsolete).toEqual([one]);

    const again = await night(store, 'again');
    await putFolder(store, again.local, again.working, again.fetched);
    expect(await keysOf(store)).toEqual([
      COMMIT_KEY,
      'd/day=2026-10-02/data.v*.parquet',
      'manifest.json',
    ]);
  });

  it('after two puts killed half-way in a row: the next whole put removes what both uploaded', async () => {
    const store = await committed();
    const objects = await keysOf(store);
    const kill = {
      passed: (phase: string) => {
        if (phase === 'uploaded') throw new Error('killed');
      },
    };
    // Two nights, each rewriting day two and killed once its objects were up.
    for (const text of ['day two, night one', 'day two, night two']) {
      const { working, fetched, local } = await night(store);
      await write(working, { 'd/day=2026-10-02/data.parquet': text });
      await expect(putFolder(store, local, working, fetched, kill)).rejects.toThrow('killed');
    }
    expect(
      (await keysOf(store)).filter((k) => k === 'd/day=2026-10-02/data.v*.parquet'),
    ).toHaveLength(3);
    // A whole night leaves the commit's objects and nothing else: no object of either killed put.
    const whole = await night(store, 'whole');
    await putFolder(store, whole.local, whole.working, whole.fetched);
    expect(await keysOf(store)).toEqual(objects);
  });
});
