/**
 * Today's traffic-sign API landed night after night into a folder in S3
 * (s3rver), each night on an empty worker, with a proxy in front of the
 * simulator that counts what the service is asked.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNS_PATHS } from '../../src/endpoints.js';
import { openStore } from '../../src/store/open.js';
import { fetchFolder } from '../../src/store/sync.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { startS3, type StoreServer } from '../helpers/object-stores.js';
import { useProxy } from '../helpers/proxy.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';

const DAY = 86_400_000;
const simulator = await useSimulator({ seed: 43, signs: { signs: 700 } });
const proxy = await useProxy(simulator.env.ROAD_ETL_SIGNS_URL);
const env = proxy.env({
  ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL,
  ROAD_ETL_SIGNS_V5_URL: simulator.env.ROAD_ETL_SIGNS_V5_URL,
});
const LIVE = join(ROOT, 'pipelines', 'traffic-signs-live.yaml');

let s3: StoreServer;
beforeAll(async () => {
  s3 = await startS3(['live']);
});
afterAll(() => s3.close());

/** The downloads of the whole current state the service answered with its data (200). */
const downloads = () =>
  proxy.answered.filter(
    ({ url, status }) =>
      url.pathname.endsWith(SIGNS_PATHS.live.v5) &&
      !url.searchParams.has('countyCode') &&
      status === 200,
  ).length;

describe('four nights of the current state into a bucket', () => {
  it('download the current state once a night, and land a snapshot a night', async () => {
    const url = 's3://live/road-etl';
    const start = simulator.world.now;
    try {
      for (let night = 0; night < 4; night++) {
        simulator.world.setNow(new Date(start + night * DAY).toISOString());
        const before = downloads();
        const worker = await testDir();
        const ran = await runCli(['run', LIVE, '--output', url], {
          env: { ...env, ...s3.env, HOME: worker, TMPDIR: worker },
        });
        expect(ran.code, ran.stderr).toBe(0);
        expect(downloads() - before, `night ${night}`).toBe(1);
      }
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }
    const fetched = join(await testDir(), 'fetched');
    await fetchFolder(openStore(url, s3.env), fetched);
    const [row] = await duck(
      `SELECT count(DISTINCT snapshot) AS n FROM read_parquet('${fetched}/signs/live_snapshots/**/*.parquet')`,
    );
    expect(Number(row!['n'])).toBe(4);
  }, 300_000);
});
