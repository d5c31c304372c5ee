import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Dataset } from '../../src/duckdb/datasets.js';
import { fetchForBuild, fetchForMonths } from '../../src/store/fetch-ahead.js';
import { LocalStore } from '../../src/store/local-store.js';
import { RemoteFiles } from '../../src/store/remote-files.js';
import { testDir } from '../helpers/tmp.js';

/** The dates of October 2026 and the first of November, each a partition of `daily`; two months of `monthly`. */
const DAYS = [
  ...Array.from({ length: 31 }, (_, i) => `2026-10-${String(i + 1).padStart(2, '0')}`),
  '2026-11-01',
];
const KEYS = [
  ...DAYS.map((d) => `derived/daily/local_date=${d}/data.parquet`),
  'derived/monthly/month=2026-10-01/data.parquet',
  'derived/monthly/month=2026-11-01/data.parquet',
  'derived/whole/data.parquet',
];

/** A folder in a store with a placeholder for each of KEYS, and its datasets. */
async function placed() {
  const store = new LocalStore(join(await testDir(), 'store'));
  const staged = join(await testDir(), 'staged');
  const local = join(await testDir(), 'local');
  const remote = new RemoteFiles(store, local);
  for (const key of KEYS) {
    await mkdir(dirname(join(staged, key)), { recursive: true });
    await writeFile(join(staged, key), key);
    const { version } = await store.upload(join(staged, key), key);
    await mkdir(dirname(join(local, key)), { recursive: true });
    remote.place(join(local, key), { key, bytes: key.length, mtime_ms: 1e12, version });
  }
  const dataset = (name: string, partitioned = true): Dataset => ({
    name,
    folder: join(local, 'derived', name),
    relative: `derived/${name}`,
    hiveTypes: {},
    partitioned,
    sample: undefined,
  });
  const datasets = [dataset('daily'), dataset('monthly'), dataset('whole', false)];
  /** What was fetched so far, as keys. */
  const fetched = () => KEYS.filter((key) => !remote.waiting.includes(key));
  return { remote, datasets, fetched };
}

describe('what a step is about to read of a folder in an object store, fetched before it runs', () => {
  it('a partial build by day: the days it builds and the days either side, the month that holds them, of what its SQL names', async () => {
    const { remote, datasets, fetched } = await placed();
    try {
      await fetchForBuild(
        '-- monthly and whole are named here only\nSELECT * FROM daily JOIN monthly USING (x)',
        datasets,
        { outputs: ['out'], column: 'local_date', keys: ['2026-10-05', '2026-10-31'] },
      );
      expect(fetched()).toEqual([
        'derived/daily/local_date=2026-10-04/data.parquet',
        'derived/daily/local_date=2026-10-05/data.parquet',
        'derived/daily/local_date=2026-10-06/data.parquet',
        'derived/daily/local_date=2026-10-30/data.parquet',
        'derived/daily/local_date=2026-10-31/data.parquet',
        'derived/daily/local_date=2026-11-01/data.parquet',
        'derived/monthly/month=2026-10-01/data.parquet',
        'derived/monthly/month=2026-11-01/data.parquet',
      ]);
    } finally {
      remote.close();
    }
  });

  it('a partial build by month: every day of its months; the dataset the build narrows itself is left to it', async () => {
    const { remote, datasets, fetched } = await placed();
    try {
      await fetchForBuild('SELECT * FROM daily, monthly', datasets, {
        outputs: ['out'],
        column: 'month',
        keys: ['2026-10-01'],
        except: ['monthly'],
      });
      expect(fetched()).toEqual(KEYS.slice(0, 31));
    } finally {
      remote.close();
    }
  });

  it('a whole build: every file of what it names, its outputs aside; an export by month: those months', async () => {
    const { remote, datasets, fetched } = await placed();
    try {
      await fetchForBuild('SELECT * FROM whole, monthly', datasets, {
        outputs: ['monthly'],
        column: undefined,
        keys: undefined,
      });
      expect(fetched()).toEqual(['derived/whole/data.parquet']);
      await fetchForMonths(datasets[0]!, ['2026-11']);
      expect(fetched()).toEqual([
        'derived/daily/local_date=2026-11-01/data.parquet',
        'derived/whole/data.parquet',
      ]);
      // Partitions that are not dates: what a partial build reads is not known, nothing is fetched.
      await fetchForBuild('SELECT * FROM daily', datasets, {
        outputs: ['out'],
        column: 'region',
        keys: ['north'],
      });
      expect(fetched()).toHaveLength(2);
    } finally {
      remote.close();
    }
  });
});
