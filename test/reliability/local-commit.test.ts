/**
 * A local output folder is its commit: runs killed at random moments (in a
 * step, or while they put their files) leave the last commit whole, which
 * `road-etl query` and plain DuckDB through the folder's `views.sql` read,
 * with the killed run's files beside it; the next run lands exactly one
 * run's data, and removes what the killed one left.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, collect, runCli, startCli } from '../helpers/cli.js';
import { ONE_COMMIT, committedPaths } from '../helpers/committed.js';
import { readManifest } from '../helpers/pipeline.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 23,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 40, maxLocations: 10, maxPeriodDays: 7 },
});

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const DAY = 86_400_000;
const START = Date.parse('2026-10-10T00:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
/** `road-etl run` of the bicycle counts of days [from, to) after START into `output`. */
const days = (output: string, from: number, to: number) => [
  'run', BICYCLE, '--output', output,
  '--param', `start=${iso(START + from * DAY)}`, '--param', `end=${iso(START + to * DAY)}`,
  '--param', 'prefixes=UTR',
]; // prettier-ignore

/** Every file below the folder (outside .state), relative. */
async function filesOf(output: string): Promise<string[]> {
  const entries = await readdir(output, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(output, join(e.parentPath, e.name)))
    .filter((path) => !path.startsWith(`.state${sep}`))
    .sort();
}

describe('a local output folder killed at random moments', () => {
  it('is read as its last commit after each kill, by query and by plain DuckDB through views.sql; the next run lands one run’s data and leaves only its commit’s files', async () => {
    const once = join(await testDir(), 'once');
    const whole = await runCli(days(once, 0, 2), { env: { ...simulator.env } });
    expect(whole.code, whole.stderr).toBe(0);

    const output = join(await testDir(), 'output');
    const began = Date.now();
    const first = await runCli(days(output, 0, 1), { env: { ...simulator.env }, process: true });
    expect(first.code, first.stderr).toBe(0);
    const took = Date.now() - began;
    // Three kills at random moments: a round whose run ended before its kill (later runs are
    // quicker than the first) shortens the span the next moment is drawn from.
    let killed = 0;
    let span = took;
    for (let round = 0; killed < 3 && round < 12; round++) {
      const child = startCli(days(output, 1, 2), { env: { ...simulator.env } });
      const done = collect(child, 300_000);
      await new Promise((wake) => setTimeout(wake, 200 + Math.random() * span));
      child.kill('SIGKILL');
      if ((await done).signal === 'SIGKILL') killed++;
      else span /= 2;
      const queried = await runCli(['query', ONE_COMMIT, '--output', output, '--format', 'json']);
      expect(queried.code, queried.stderr).toBe(0);
      const [read] = JSON.parse(queried.stdout) as { daily: number; apart: number }[];
      expect(read!.daily).toBeGreaterThan(0);
      expect(read!.apart, `round ${round}: query`).toBe(0);
      const [[plain]] = (await plainDuckDb(output, [ONE_COMMIT], { views: true })) as [
        [{ daily: string; apart: string }],
      ];
      expect(Number(plain.apart), `round ${round}: views.sql`).toBe(0);
      expect(Number(plain.daily)).toBe(read!.daily);
    }
    expect(killed).toBe(3);
    const last = await runCli(days(output, 1, 2), { env: { ...simulator.env } });
    expect(last.code, last.stderr).toBe(0);

    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
    ])
      expect(await datasetDifference(once, output, dataset), dataset).toBe(0);
    // Only the commit's files are left: none of a killed run's, none of an earlier version.
    const names = committedPaths(output);
    expect((await filesOf(output)).length).toBe(names.length);
    expect(existsSync(join(output, '.state', 'work'))).toBe(false);
    const { manifest } = await readManifest(output);
    for (const extract of manifest.exports) {
      const bytes = await readFile(join(output, extract.path));
      expect(createHash('sha256').update(bytes).digest('hex'), extract.path).toBe(extract.sha256);
    }
  }, 600_000);
});
