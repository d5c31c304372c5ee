/**
 * Two runs that commit over one parent without the lock (a lease that ran
 * out, a lock taken by hand): the store's own condition on the commit (Azure's
 * `If-Match`, the local folder's check under its rename) lets one commit land
 * and refuses the other (exit 1); nothing of the one that landed is lost: its
 * commit names every file as it wrote it, and the refused run's new objects
 * are gone, its extract never written over the other's.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitConflictError } from '../../src/errors.js';
import { LocalStore } from '../../src/store/local-store.js';
import { openStore } from '../../src/store/open.js';
import { putFolder } from '../../src/store/put-folder.js';
import type { ObjectStore } from '../../src/store/store.js';
import { fetchFolder } from '../../src/store/sync.js';
import { readCommit } from '../../src/store/commit.js';
import { WorkingCopy } from '../../src/store/working-copy.js';
import { recordWritten } from '../../src/duckdb/folder-files.js';
import { startAzure, type StoreServer } from '../helpers/object-stores.js';
import { testDir } from '../helpers/tmp.js';

let azure: StoreServer;
beforeAll(async () => {
  azure = await startAzure(['nightly']);
});
afterAll(() => azure.close());

/** A run's folder over the store's last commit, fetched into an empty local folder. */
async function night(store: ObjectStore) {
  const working = new WorkingCopy(store, join(await testDir(), 'night'));
  return { working, fetched: await fetchFolder(store, working.root, working) };
}

/** Writes each file anew (as road-etl writes) and records it in the run's folder (a state file: written only). */
async function write(working: WorkingCopy, files: Record<string, string>): Promise<void> {
  for (const [key, text] of Object.entries(files)) {
    const file = join(working.root, key);
    await mkdir(dirname(file), { recursive: true });
    await rm(file, { force: true });
    await writeFile(file, text);
    if (!key.startsWith('.state/')) await recordWritten(working, file);
  }
}

/** What each file the store's last commit names holds, read from its object. */
async function contents(store: ObjectStore): Promise<Record<string, string>> {
  const commit = (await readCommit(store))!;
  const out: Record<string, string> = {};
  for (const [path, file] of Object.entries(commit.files))
    out[path] = (await store.read(file.key))!.toString();
  return out;
}

describe.each([
  ['Azure Blob (Azurite)', async () => openStore(`az://nightly/${Math.random().toString(36).slice(2)}`, { ...azure.env })],
  ['a local folder', async () => new LocalStore(join(await testDir(), 'folder'))],
])('two runs committing over one parent in %s', (_name, open) => {
  it('lands one commit and refuses the other; nothing of the one that landed is lost', async () => {
    const store = await open();
    const first = await night(store);
    await write(first.working, {
      'd/day=2026-10-01/data.parquet': 'day one',
      'exports/d.csv': 'day\n2026-10-01\n',
      '.state/step.json': '{"night":1}',
    });
    await putFolder(store, first.working.root, first.working, first.fetched);
    // Two runs fetch the same commit, and each lands a night of its own.
    const [a, b] = [await night(store), await night(store)];
    await write(a.working, {
      'd/day=2026-10-02/data.parquet': 'day two, by a',
      'exports/d.csv': 'day\n2026-10-01\n2026-10-02 a\n',
      '.state/step.json': '{"night":2,"by":"a"}',
    });
    await write(b.working, {
      'd/day=2026-10-02/data.parquet': 'day two, by b',
      'exports/d.csv': 'day\n2026-10-01\n2026-10-02 b\n',
      '.state/step.json': '{"night":2,"by":"b"}',
    });
    await putFolder(store, a.working.root, a.working, a.fetched);
    const landed = await contents(store);
    expect(landed).toEqual({
      'd/day=2026-10-01/data.parquet': 'day one',
      'd/day=2026-10-02/data.parquet': 'day two, by a',
      'exports/d.csv': 'day\n2026-10-01\n2026-10-02 a\n',
    });
    const keys = (await store.list()).map((o) => o.key).sort();
    await expect(putFolder(store, b.working.root, b.working, b.fetched)).rejects.toThrow(CommitConflictError);
    await expect(putFolder(store, b.working.root, b.working, b.fetched)).rejects.toThrow(/another run committed to the folder meanwhile/);
    // The commit that landed, its files and its state, as a wrote them; b left no object.
    expect(await contents(store)).toEqual(landed);
    expect((await readCommit(store))!.state['.state/step.json']).toBe('{"night":2,"by":"a"}');
    expect((await store.list()).map((o) => o.key).filter((k) => k !== '.state/put.json').sort()).toEqual(
      keys.filter((k) => k !== '.state/put.json'),
    );
    expect(await readFile(join(b.working.root, 'exports/d.csv'), 'utf8')).toMatch(/ b\n$/);
  });
}); // prettier-ignore
