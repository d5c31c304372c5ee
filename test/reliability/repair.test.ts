/**
 * A folder that holds nights of data meets a damaged file (on disk) or a lost
 * object (in a bucket): the next run names it and prints a repair; that
 * repair, run as printed, removes that file alone, and the folder then equals
 * one run over the whole period: no other night is lost.
 */
import { committed, fetchCommit } from '../helpers/committed.js';
import { readFile, readdir, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { readCommit } from '../../src/store/commit.js';
import { ROOT, printedRepair, runCli } from '../helpers/cli.js';
import { startS3, type StoreServer } from '../helpers/object-stores.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 41,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 30 },
});

let s3: StoreServer;
beforeAll(async () => {
  s3 = await startS3(['repair']);
});
afterAll(() => s3.close());

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const day = (n: number) => `2026-10-${String(n).padStart(2, '0')}T00:00:00Z`;
const nights = (from: number, to: number) => [
  '--param', `start=${day(from)}`, '--param', `end=${day(to)}`, '--param', 'prefixes=UTR',
]; // prettier-ignore
const DATASETS = ['bicycle/measurements', 'derived/bicycle_hourly', 'derived/bicycle_daily'];

/** One run over days [1, last): the ground truth. */
async function oneRun(last: number): Promise<string> {
  const output = join(await testDir(), 'once');
  const once = await runCli(['run', BICYCLE, '--output', output, ...nights(1, last)], {
    env: { ...simulator.env },
  });
  expect(once.code, once.stderr).toBe(0);
  return output;
}

describe('a damaged file and a lost object', () => {
  it('on disk: the printed repair, run as printed, restores the folder to one run over all its nights', async () => {
    const output = join(await testDir(), 'output');
    const env = { ...simulator.env };
    for (let n = 1; n <= 3; n++) {
      const night = await runCli(['run', BICYCLE, '--output', output, ...nights(n, n + 1)], {
        env,
      });
      expect(night.code, night.stderr).toBe(0);
    }
    const damaged = 'bicycle/measurements/date=2026-10-02/data.parquet';
    const object = committed(output, damaged);
    await truncate(object, 100);

    const failed = await runCli(['run', BICYCLE, '--output', output, ...nights(4, 5)], { env });
    expect(failed.code).toBe(1);
    // Cut short, it is no longer the file the folder's commit names.
    expect(failed.stderr).toContain(`${object}: the folder's last commit names this object`);
    expect(failed.stderr).not.toContain('--reset');
    const repair = printedRepair(failed.stderr);
    expect(repair).toContain(`--repair`);
    const repaired = await runCli(repair, { env });
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stderr).toMatch(
      /removed bicycle\/measurements\/date=2026-10-02\/data\.parquet/,
    );
    // The night that failed, again.
    const fourth = await runCli(['run', BICYCLE, '--output', output, ...nights(4, 5)], { env });
    expect(fourth.code, fourth.stderr).toBe(0);

    const once = await oneRun(5);
    for (const dataset of DATASETS)
      expect(await datasetDifference(once, output, dataset), dataset).toBe(0);
    const months = await readdir(join(once, 'exports', 'bicycle_daily'));
    for (const name of months)
      expect(await readFile(join(output, 'exports', 'bicycle_daily', name), 'utf8'), name).toBe(
        await readFile(join(once, 'exports', 'bicycle_daily', name), 'utf8'),
      );
  }, 240_000);

  it('in a bucket: a lost object is named with a repair that, run as printed, restores the folder', async () => {
    const url = 's3://repair/road-etl';
    const worker = await testDir();
    const env = { ...simulator.env, ...s3.env, HOME: worker, TMPDIR: worker };
    for (let n = 1; n <= 2; n++) {
      const night = await runCli(['run', BICYCLE, '--output', url, ...nights(n, n + 1)], { env });
      expect(night.code, night.stderr).toBe(0);
    }
    const store = await openStore(url, s3.env);
    const path = 'bicycle/measurements/date=2026-10-01/data.parquet';
    const lost = (await readCommit(store))!.files[path]!.key;
    await store.remove([lost]);

    const failed = await runCli(['run', BICYCLE, '--output', url, ...nights(3, 4)], { env });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`${url}/${lost}`);
    const repair = printedRepair(failed.stderr);
    expect(repair).toContain(url);
    expect(repair).toContain(path);
    const repaired = await runCli(repair, { env });
    expect(repaired.code, repaired.stderr).toBe(0);
    const third = await runCli(['run', BICYCLE, '--output', url, ...nights(3, 4)], { env });
    expect(third.code, third.stderr).toBe(0);

    const fetched = join(await testDir(), 'fetched');
    await fetchCommit(store, fetched);
    const once = await oneRun(4);
    for (const dataset of DATASETS)
      expect(await datasetDifference(once, fetched, dataset), dataset).toBe(0);
  }, 240_000);
});
