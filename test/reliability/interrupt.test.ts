/**
 * Us misbehaving outside the steps: a run stopped by SIGTERM while it writes
 * its report, or while it waits for its folder and fetches ahead, exits 1
 * marked interrupted, leaves the folder as it was, and a rerun gives exactly
 * the ground truth: the simulator's events, signs and counts, and exports
 * identical to those of a run that was never interrupted. SIGTERM in a step of
 * each kind is in landed-data.test.ts; a kill at any moment leaves the
 * folder's last commit (local-commit.test.ts, store-runs.test.ts).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNS_AND_BICYCLE_SOURCE } from '../helpers/bicycle.js';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { acquireLock } from '../../src/store/folder-lock.js';
import { useSimulator } from '../helpers/simulator.js';
import { outputHashes, pipelineProject } from '../helpers/tmp.js';
import { expectSignsAndBicycleTruth } from '../helpers/truth.js';
import { signalAtEvent } from '../helpers/trouble.js';

const START = '2026-03-01T00:00:00Z';
const END = '2026-03-08T00:00:00Z';
const PREFIXES = ['GAL', 'UTR'];

const simulator = await useSimulator({
  seed: 41,
  signs: { signs: 300 },
  bicycle: { locations: 30, maxLocations: 6, maxPeriodDays: 4 },
  faults: { latencyMs: 4 },
});
const env = { ...simulator.env };

const PIPELINE = `name: interrupted
${SIGNS_AND_BICYCLE_SOURCE}steps:
  - { id: signs_events, kind: signs.events, options: { limit: 20, concurrency: 2, unit_rows: 120, backoff_ms: 1 } }
  - { id: signs_snapshot, kind: signs.snapshot }
  - id: signs_current_state
    kind: sql
    needs: [signs_events, signs_snapshot]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
  - id: export_signs_csv
    kind: export
    needs: [signs_current_state]
    options: { query: "SELECT * EXCLUDE (raw_event, typing_issues) FROM signs_current_state ORDER BY id", path: exports/signs.csv }
  - id: export_signs_geojson
    kind: export
    needs: [signs_current_state]
    options:
      query: "SELECT * EXCLUDE (raw_event, typing_issues) FROM signs_current_state ORDER BY id"
      path: exports/signs.geojson
      geometry: { longitude: location_wgs84_longitude, latitude: location_wgs84_latitude, id: id }
  - { id: bicycle_locations, kind: bicycle.locations, options: { backoff_ms: 1 } }
  - id: bicycle_measurements
    kind: bicycle.measurements
    needs: [bicycle_locations]
    options: { start: "${START}", end: "${END}", prefixes: ${JSON.stringify(PREFIXES)}, concurrency: 2, backoff_ms: 1 }
  - id: bicycle_hourly
    kind: sql
    needs: [bicycle_measurements]
    options: { file: bicycle_hourly.sql, params: { start: "${START}", end: "${END}" }, outputs: [bicycle_hourly] }
  - id: export_bicycle_hourly
    kind: export
    needs: [bicycle_hourly]
    options: { query: "SELECT * FROM bicycle_hourly ORDER BY location_id, measurement_hour, category, subcategory", path: exports/bicycle_hourly.csv }
`;

const setUp = (dir?: string) =>
  pipelineProject(PIPELINE, ['signs_current_state.sql', 'bicycle_hourly.sql'], dir);

/** Every file below the output folder outside .state, with its sha256. */
const files = (output: string) => outputHashes(output);

const EXPORTS = ['exports/signs.csv', 'exports/signs.geojson', 'exports/bicycle_hourly.csv'];

let reference: Map<string, string>;
const cleanUps: (() => Promise<void>)[] = [];
afterAll(() => Promise.all(cleanUps.map((f) => f())));

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-reference-'));
  cleanUps.push(() => rm(dir, { recursive: true, force: true }));
  const { file, output } = await setUp(dir);
  const run = await runCli(['run', file, '--output', output], { env });
  if (run.code !== 0) throw new Error(`the reference run failed: ${run.stderr}`);
  reference = await files(output);
});

async function expectGroundTruth(output: string): Promise<void> {
  await expectSignsAndBicycleTruth(simulator, output, {
    prefixes: PREFIXES,
    start: START,
    end: END,
  });
  const now = await files(output);
  for (const name of EXPORTS) expect(now.get(name), name).toBe(reference.get(name));
}

describe('a run interrupted after its last step', () => {
  it('by SIGTERM while it writes the report, on a folder with a landed run: exit 1, interrupted, the data as it was, and a rerun gives the ground truth', async () => {
    const { file, output } = await pipelineProject(
      PIPELINE.replace('\nsteps:\n', '\nreport: true\nsteps:\n'),
      ['signs_current_state.sql', 'bicycle_hourly.sql'],
    );
    const landed = await runCli(['run', file, '--output', output], { env });
    expect(landed.code, landed.stderr).toBe(0);
    // The landed datasets and the exports (the manifest and the report describe each run;
    // the derived tables, rebuilt by each run, are held to the ground truth below).
    const kept = async () =>
      [...(await outputHashes(output, ['manifest.json', 'index.html']))].filter(
        ([path]) => !path.startsWith('derived/'),
      );
    const before = await kept();
    const { result, sent } = await signalAtEvent(
      file,
      output,
      (e) => e.event === 'report.start',
      'SIGTERM',
      env,
      0,
    );
    expect(sent).toBe(true);
    const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as { status: string };
    expect([result.code, summary.status]).toEqual([1, 'interrupted']);
    expect(await kept()).toEqual(before);
    const rerun = await runCli(['run', file, '--output', output], { env });
    expect(rerun.code, rerun.stderr).toBe(0);
    await expectGroundTruth(output);
  }, 60_000);
});

describe('a run waiting for its folder', () => {
  it('by SIGTERM while it fetches ahead, on a folder another run holds: exit 1, interrupted, nothing of it left, the folder as it was; once free, a rerun gives the ground truth', async () => {
    const { file, output } = await setUp();
    const landed = await runCli(['run', file, '--output', output], { env });
    expect(landed.code, landed.stderr).toBe(0);
    const before = await files(output);
    // This process holds the folder: a live run, as far as the waiting run can tell.
    const release = await acquireLock(output, 'holder');
    const scratch = await mkdtemp(join(tmpdir(), 'road-etl-worker-'));
    cleanUps.push(() => rm(scratch, { recursive: true, force: true }));
    try {
      const child = startCli(
        // The work fetched ahead logs at debug level.
        [
          'run',
          file,
          '--output',
          output,
          '--wait-for-lock',
          '60',
          '--log-format',
          'json',
          '--log-level',
          'debug',
        ],
        { env: { ...env, TMPDIR: scratch } },
      );
      let sent = false;
      child.stderr?.on('data', (chunk: Buffer) => {
        // The first request of the week fetched ahead: stop it there.
        if (!sent && /"event":"step\.start".*"ahead":true/.test(chunk.toString())) {
          sent = true;
          child.kill('SIGTERM');
        }
      });
      const result = await collect(child);
      expect(sent).toBe(true);
      const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as { status: string };
      expect([result.code, summary.status]).toEqual([1, 'interrupted']);
      expect(await readdir(scratch)).toEqual([]);
      expect(await files(output)).toEqual(before);
    } finally {
      await release();
    }
    const rerun = await runCli(['run', file, '--output', output], { env });
    expect(rerun.code, rerun.stderr).toBe(0);
    await expectGroundTruth(output);
  }, 60_000);
});
