import { describe, expect, it } from 'vitest';
import {
  idsWithPrefix,
  landedMeasurements,
  measurementsPipeline,
  truthMeasurements,
} from '../helpers/bicycle.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

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
