import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killRepeatedly, runCli, wholeRunMs } from '../helpers/cli.js';
import {
  expectStateGroundTruth,
  landedEventHashes,
  stateExportPipeline,
  truthEventHashes,
} from '../helpers/signs.js';
import { LONG_FEED, useSimulator } from '../helpers/simulator.js';
import { pipelineProject } from '../helpers/tmp.js';
import { signalDuringStep } from '../helpers/trouble.js';

// The five-year feed: a first run long enough to be killed at many moments.
const simulator = await useSimulator(LONG_FEED, {
  seed: 31,
  signs: { signs: 700 },
  faults: { latencyMs: 3 },
});
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };

const PIPELINE = stateExportPipeline(
  { limit: 25, concurrency: 3, unit_rows: 150 },
  'id, type, rvv_code',
);

const setUp = () => pipelineProject(PIPELINE, ['signs_current_state.sql']);

describe('a run killed at any moment', () => {
  it('gives exactly the ground truth after a rerun, however often it was killed (SIGKILL)', async () => {
    const { file, output } = await setUp();
    // Each round is killed within a third of the time a whole run takes on this machine now
    // (timed in a folder of its own): it takes more than two rounds to get through the work.
    const whole = await wholeRunMs(['run', file, '--output', `${output}-timed`], { env });
    const spanMs = whole / 3;
    const kills = await killRepeatedly(['run', file, '--output', output], { env, spanMs });
    expect(kills.length).toBeGreaterThan(2);
    const final = await runCli(['run', file, '--output', output], { env });
    expect(final.code, final.stderr).toBe(0);
    await expectStateGroundTruth(simulator, output);
  });

  it('stops cleanly on SIGTERM: finishes the unit in hand, exits 1, and a rerun completes', async () => {
    const { file, output } = await setUp();
    // While the feed is being read: a fixed delay found the run done on a fast machine.
    const { result, sent } = await signalDuringStep(
      file,
      output,
      (step) => step.kind === 'signs.events',
      'SIGTERM',
      env,
      30,
    );
    expect(sent).toBe(true);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/SIGTERM received|Interrupted by SIGTERM/);
    const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as { status: string };
    expect(summary.status).toBe('interrupted');
    expect(existsSync(join(output, '.state', 'lock'))).toBe(false);
    const final = await runCli(['run', file, '--output', output], { env });
    expect(final.code, final.stderr).toBe(0);
    expect(await landedEventHashes(output)).toEqual(truthEventHashes(simulator));
  });
});
