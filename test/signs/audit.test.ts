/**
 * v1: a feed that grows in its past. A share of the signs joins the feed at an
 * instant, with its whole history (events published long before the folder's
 * cursor). Nights that only follow the cursor never see them; nights that
 * audit a few random windows find them and land every one, once.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditPages } from '../../src/sources/signs/audit.js';
import { readManifest, runDefinition } from '../helpers/pipeline.js';
import { landedEventHashes, signsPipeline, truthEventHashes } from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const sorted = (values: string[]) => [...values].sort();

const simulator = await useSimulator({
  seed: 23,
  signs: { signs: 600, joining: { share: 0.3, at: '2026-10-10T00:00:00.000Z' } },
  now: '2026-10-01T00:00:00.000Z',
});
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };

async function night(dir: string, now: string, options: Record<string, unknown>) {
  simulator.world.setNow(now);
  const run = await runDefinition(dir, signsPipeline({ concurrency: 2, ...options }), {}, { env });
  expect(run.failure).toBeUndefined();
  return run;
}

describe('signs.events: the past audited', () => {
  it('lands the events a feed gained in its past over a few nights, each once, equal to the feed', async () => {
    const dir = await testDir();
    await night(dir, '2026-10-01T00:00:00.000Z', {});
    expect(await landedEventHashes(join(dir, 'output'))).toEqual(truthEventHashes(simulator));

    // The joining signs' history appears, published years before the cursor.
    simulator.world.setNow('2026-10-12T00:00:00.000Z');
    const grown = truthEventHashes(simulator);
    const held = await landedEventHashes(join(dir, 'output'));
    const joined = grown.length - held.length;
    expect(joined).toBeGreaterThan(grown.length / 5);

    // Following the cursor alone never lands them.
    const blind = await testDir();
    await cp(join(dir, 'output'), join(blind, 'output'), {
      recursive: true,
      preserveTimestamps: true,
    });
    await night(blind, '2026-10-12T00:00:00.000Z', { audit_share: 0 });
    const missed = grown.length - new Set(await landedEventHashes(join(blind, 'output'))).size;
    expect(missed).toBeGreaterThan(joined / 4);

    let late = 0;
    let warned = false;
    for (const now of ['2026-10-12T00:00:00.000Z', '2026-10-13T00:00:00.000Z']) {
      const run = await night(dir, now, { audit_share: 0.5 });
      late += run.summary.counts?.['late_events'] ?? 0;
      warned ||= run.logger.events.some((e) => e.level === 'warn' && e.event === 'signs.audit');
    }
    expect(warned).toBe(true);
    // Every event of the feed, each once.
    const landed = await landedEventHashes(join(dir, 'output'));
    expect(sorted(landed)).toEqual(sorted(truthEventHashes(simulator)));
    expect(late).toBe(missed);
    const { run } = await readManifest(join(dir, 'output'));
    const notes = run.steps[0]!.notes as { audit?: { requests: number } };
    expect(notes.audit?.requests).toBeGreaterThan(0);
  }, 120_000);

  it('spends the share of the requests it is given, rounded at random', () => {
    const draws = [0.1, 0.5, 0.9];
    let i = 0;
    const random = () => draws[i++ % draws.length]!;
    // 3% of 20 requests: 0.6 of a page, so a page in 60% of nights.
    expect([1, 2, 3].map(() => auditPages(0.03, 20, random))).toEqual([1, 1, 0]);
    expect(auditPages(0.5, 10, random)).toBe(5);
    expect(auditPages(0, 1000, random)).toBe(0);
  });
});
