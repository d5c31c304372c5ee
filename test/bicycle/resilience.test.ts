import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  idsWithPrefix,
  landedMeasurements,
  measurementsPipeline,
  truthMeasurements,
} from '../helpers/bicycle.js';
import { killRepeatedly, runCli } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir, writeFiles } from '../helpers/tmp.js';

const START = '2026-02-01T00:00:00Z';

describe('bicycle.measurements under trouble', () => {
  it('renews tokens that expire during the run (1 s access, 3 s refresh) without failing', async () => {
    const simulator = await useSimulator({
      seed: 5,
      auth: { accessTokenSeconds: 1, refreshTokenSeconds: 3 },
      bicycle: { locations: 40, maxLocations: 5, maxPeriodDays: 3 },
      faults: { latencyMs: 90 },
    });
    const end = '2026-03-03T00:00:00Z';
    const dir = await testDir();
    const before = { ...simulator.auth.counts };
    const { summary, failure, output } = await runDefinition(
      dir,
      measurementsPipeline({ start: START, end, prefixes: ['GAL', 'UTR', 'RTD'], concurrency: 2 }),
      {},
      { env: { ...simulator.env } },
    );
    expect(summary.status, failure?.message).toBe('succeeded');
    // The run lasts long enough for access tokens to run out (refresh grants) and for
    // refresh tokens to run out too (a second password grant).
    expect(simulator.auth.counts.refreshGrants - before.refreshGrants).toBeGreaterThan(1);
    expect(simulator.auth.counts.passwordGrants - before.passwordGrants).toBeGreaterThan(1);
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, 'GAL', 'UTR', 'RTD'), START, end).kept,
    );
  });

  it('retries 5xx, 429, resets, cut bodies, HTML error pages and malformed answers, and lands the same rows', async () => {
    const simulator = await useSimulator({
      seed: 6,
      bicycle: { locations: 30, maxLocations: 8, maxPeriodDays: 4 },
      faults: {
        errorRate: 0.12,
        resetRate: 0.06,
        truncateRate: 0.08,
        htmlRate: 0.06,
        rateLimitRate: 0.04,
        retryAfterSeconds: 1,
        notArrayRate: 0.03,
        nonObjectsRate: 0.03,
        corruptGzipRate: 0.03,
      },
    });
    const end = '2026-02-21T00:00:00Z';
    const dir = await testDir();
    const { summary, failure, output, logger } = await runDefinition(
      dir,
      measurementsPipeline({ start: START, end, prefixes: ['GAL', 'NBR', 'FRL'], retries: 10 }),
      {},
      { env: { ...simulator.env } },
    );
    expect(summary.status, failure?.message).toBe('succeeded');
    expect(logger.events.filter((e) => e.event === 'http.retry').length).toBeGreaterThan(3);
    const faults = new Set(simulator.requests.map((r) => r.fault).filter(Boolean));
    expect(faults.size).toBeGreaterThanOrEqual(5);
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, 'GAL', 'NBR', 'FRL'), START, end).kept,
    );
  });
});

describe('bicycle.measurements killed at any moment', () => {
  it('gives exactly the ground truth after a rerun, however often it was killed (SIGKILL)', async () => {
    const simulator = await useSimulator({
      seed: 9,
      bicycle: { locations: 50, maxLocations: 6, maxPeriodDays: 3 },
      faults: { latencyMs: 40 },
    });
    const env = { ...simulator.env };
    const end = '2026-04-01T00:00:00Z';
    const prefixes = ['GAL', 'UTR', 'ZHO', 'GLD'];
    const dir = await testDir();
    await writeFiles(dir, {
      'p.yaml': measurementsPipeline({ start: START, end, prefixes, concurrency: 3 }),
    });
    const file = join(dir, 'p.yaml');
    const output = join(dir, 'output');
    // An earlier run of part of the period: its rows must be replaced, never doubled.
    await writeFiles(dir, {
      'early.yaml': measurementsPipeline({ start: START, end: '2026-02-10T00:00:00Z', prefixes }),
    });
    const early = await runCli(['run', join(dir, 'early.yaml'), '--output', output], { env });
    expect(early.code, early.stderr).toBe(0);
    const kills = await killRepeatedly(['run', file, '--output', output], { env, minMs: 400 });
    expect(kills.length).toBeGreaterThan(2);
    const final = await runCli(['run', file, '--output', output], { env });
    expect(final.code, final.stderr).toBe(0);
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, ...prefixes), START, end).kept,
    );
  });
});
