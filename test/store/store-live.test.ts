/**
 * Today's traffic-sign API landed night after night into a folder in S3
 * (s3rver), each night on an empty worker, with a proxy in front of the
 * simulator that counts what the service is asked.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fetchCommit } from '../helpers/committed.js';
import { SIGNS_PATHS } from '../../src/endpoints.js';
import { openStore } from '../../src/store/open.js';
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

const s3: StoreServer = await startS3(['live']);
afterAll(() => s3.close());
/** A proxy in front of s3rver, which counts the objects it serves. */
const bucket = await useProxy(s3.env.AWS_ENDPOINT_URL_S3!);

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
    await fetchCommit(await openStore(url, s3.env), fetched);
    const [row] = await duck(
      `SELECT count(DISTINCT snapshot) AS n FROM read_parquet('${fetched}/signs/live_snapshots/**/*.parquet')`,
    );
    expect(Number(row!['n'])).toBe(4);

    // query on the URL fetches the datasets it names, not the snapshots.
    const before = bucket.answered.length;
    const queried = await runCli(
      [
        'query',
        'SELECT count(*) AS n FROM signs_live_changes',
        '--output',
        url,
        '--format',
        'json',
      ],
      { env: bucket.env(s3.env) },
    );
    expect(queried.code, queried.stderr).toBe(0);
    const [changes] = await duck(
      `SELECT count(*) AS n FROM read_parquet('${fetched}/derived/signs_live_changes/**/*.parquet')`,
    );
    expect((JSON.parse(queried.stdout) as { n: number }[])[0]!.n).toBe(Number(changes!['n']));
    const served = bucket.answered
      .slice(before)
      .filter(({ status }) => status === 200)
      .map(({ url }) => url.pathname);
    expect(served.some((path) => path.includes('/derived/signs_live_changes/'))).toBe(true);
    // (the first file of each dataset comes with the folder, for its view)
    expect(served.filter((path) => path.includes('/signs/live_snapshots/')).length).toBe(1);
  }, 300_000);
});
