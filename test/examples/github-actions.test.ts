/**
 * The GitHub Actions recipe (examples/github-actions): a workflow whose runner
 * starts with an empty disk, the output folder in S3. Its road-etl step runs
 * here as the runner would run it (bash, from the checkout), against the
 * simulator and a real S3 server (s3rver), twice, as two nights.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openStore } from '../../src/store/open.js';
import { COMMIT_KEY, readCommit } from '../../src/store/commit.js';
import { ROOT } from '../helpers/cli.js';
import { startS3, type StoreServer } from '../helpers/object-stores.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const run = promisify(execFile);
const WORKFLOW = join(ROOT, 'examples', 'github-actions', 'road-etl-nightly.yml');
const simulator = await useSimulator({
  seed: 9,
  signs: { signs: 200 },
  bicycle: { locations: 12 },
});

let s3: StoreServer;
beforeAll(async () => {
  s3 = await startS3(['nightly']);
});
afterAll(async () => {
  await s3.close();
});

interface Workflow {
  on: { schedule: { cron: string }[] };
  jobs: Record<
    string,
    {
      env: Record<string, string>;
      steps: { name?: string; run?: string; with?: Record<string, unknown> }[];
    }
  >;
}

describe('the GitHub Actions recipe (examples/github-actions)', () => {
  it('takes credentials from secrets only, runs on Node 20 after npm ci, and puts the folder in S3 night after night', async () => {
    const workflow = parse(await readFile(WORKFLOW, 'utf8')) as Workflow;
    const job = workflow.jobs['nightly']!;
    expect(workflow.on.schedule[0]!.cron).toMatch(/^\d+ \d+ \* \* \*$/);
    // Every credential is a secret of the repository; nothing is written in the file.
    for (const name of ['AWS_SECRET_ACCESS_KEY', 'ROAD_ETL_PASSWORD', 'AWS_ACCESS_KEY_ID'])
      expect(job.env[name]).toBe(`\${{ secrets.${name} }}`);
    expect(
      job.steps.find((s) => s.with?.['node-version'] !== undefined)?.with?.['node-version'],
    ).toBe(20);
    const runs = job.steps.map((s) => s.run);
    expect(runs).toContain('npm ci');
    const script = job.steps.find((s) => s.name === 'road-etl')!.run!;

    // Two nights, each on an empty runner (a fresh HOME and TMPDIR): the first run by hand
    // with a start (the folder has no counts yet), the next scheduled, going on from there.
    const output = 's3://nightly/road-etl';
    const day = Math.floor(simulator.world.now / 86_400_000) * 86_400_000;
    const inputs = [
      {
        START: new Date(day - 2 * 86_400_000).toISOString().replace('.000Z', 'Z'),
        END: new Date(day - 86_400_000).toISOString().replace('.000Z', 'Z'),
      },
      {},
    ];
    for (let night = 0; night < 2; night++) {
      const home = await testDir();
      const { stdout } = await run('bash', ['-c', script], {
        cwd: ROOT,
        env: {
          PATH: process.env['PATH'],
          HOME: home,
          TMPDIR: home,
          ...simulator.env,
          ...s3.env,
          ROAD_ETL_OUTPUT: output,
          ...inputs[night],
        },
        maxBuffer: 1 << 26,
      });
      const summaries = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(summaries.map((s) => [s['pipeline'], s['status'], s['output']])).toEqual([
        ['traffic_signs_live', 'succeeded', output],
        ['bicycle', 'succeeded', output],
      ]);
    }
    const store = await openStore(output, s3.env);
    const keys = (await store.list()).map((o) => o.key);
    expect(keys).toContain(COMMIT_KEY);
    expect(keys).toContain('exports/signs_live.csv');
    // The commit names the catalog, held by an object of the version it names.
    const commit = (await readCommit(store))!;
    const catalog = commit.files['bicycle/locations/data.parquet'];
    // The second night went on where the first one's counts ended: the day after them landed.
    const after = new Date(day - 86_400_000).toISOString().slice(0, 10);
    expect(Object.keys(commit.files)).toContain(`bicycle/measurements/date=${after}/data.parquet`);
    expect(keys).toContain(catalog!.key);
  }, 600_000);
});
