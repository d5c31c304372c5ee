import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { landedEventHashes, stateExportPipeline, truthEventHashes } from '../helpers/signs.js';
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

describe('a run stopped by a signal', () => {
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
