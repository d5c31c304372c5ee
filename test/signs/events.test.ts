import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { runCli } from '../helpers/cli.js';
import { runDefinition, readManifest } from '../helpers/pipeline.js';
import {
  landedEventHashes,
  md5,
  quarantinedHashes,
  signsPipeline,
  truthEventHashes,
} from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { monthCut } from '../../src/sources/signs/range-reader.js';
import { outputHashes, testDir } from '../helpers/tmp.js';

const sorted = (values: string[]) => [...values].sort();

/** Runs signs.events with these options against a simulator, in a fresh folder. */
async function runAgainst(sim: Simulator, options: Record<string, unknown>, dir?: string) {
  return runDefinition(
    dir ?? (await testDir()),
    signsPipeline(options),
    {},
    { env: { ROAD_ETL_SIGNS_URL: sim.env.ROAD_ETL_SIGNS_URL } },
  );
}

const simulator = await useSimulator({ seed: 11, signs: { signs: 500 } });
const truth = truthEventHashes(simulator);

describe('signs.events against the simulator', () => {
  it.each([
    [100, 1],
    [37, 4],
    [7, 3],
  ])(
    'lands every distinct event exactly once, in feed order (limit %i, %i readers)',
    async (limit, concurrency) => {
      const { failure, output, summary } = await runAgainst(simulator, {
        limit,
        concurrency,
        unit_rows: 300,
      });
      expect(failure).toBeUndefined();
      const landed = await landedEventHashes(output);
      expect(landed).toEqual(truth);
      expect(summary.steps[0]!.rows_out).toBe(truth.length);
    },
  );

  it('ends each unit of a reader where a new month begins: no month is split, nothing to merge', async () => {
    // Units that end wherever a page ends split a month between two files about once a
    // unit; a unit due now ends at the first event of a new month instead, unless that
    // month goes on past a quarter of the unit's size (not on this feed: the size is
    // chosen above four times its busiest month).
    const perMonth = new Map<string, number>();
    for (const event of simulator.world.distinctEvents()) {
      const ms = Date.parse(String(event['publication_timestamp']));
      const month = new Date(ms).toISOString().slice(0, 7);
      perMonth.set(month, (perMonth.get(month) ?? 0) + 1);
    }
    const unitRows = 4 * Math.max(...perMonth.values()) + 1;
    const { failure, output, logger } = await runAgainst(simulator, {
      limit: 7,
      concurrency: 1,
      unit_rows: unitRows,
    });
    expect(failure).toBeUndefined();
    expect(await landedEventHashes(output)).toEqual(truth);
    const units = logger.events.filter((e) => e.event === 'signs.unit');
    expect(units.length).toBeGreaterThan(2);
    expect(logger.events.filter((e) => e.event === 'signs.compaction')).toEqual([]);
    const months = await readdir(join(output, 'signs', 'events'));
    expect(months.sort()).toEqual(
      [...perMonth.keys()].sort().map((m) => `publication_month=${m}-01`),
    );
    for (const month of months)
      expect(await readdir(join(output, 'signs', 'events', month))).toHaveLength(1);
    // No unit has gone past its quarter.
    for (const e of units)
      expect(Number(e.fields['rows'])).toBeLessThan(unitRows + Math.ceil(unitRows / 4) + 7);
  });

  it('stops every reader soon after one fails for good, keeping what landed', async () => {
    const slow = await useSimulator({
      seed: 17,
      signs: { signs: 3000 },
      faults: { latencyMs: 5 },
    });
    const env = { ROAD_ETL_SIGNS_URL: slow.env.ROAD_ETL_SIGNS_URL };
    const options = { limit: 20, concurrency: 4, unit_rows: 200, retries: 1, backoff_ms: 1 };
    const clean = await runAgainst(slow, options);
    expect(clean.failure).toBeUndefined();
    const all = slow.requests.length;
    // The folder already holds data: the current-state download.
    const dir = await testDir();
    const snapshot = await runDefinition(
      dir,
      `name: snapshot\nsource:\n  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }\nsteps:\n  - { id: signs_snapshot, kind: signs.snapshot }\n`,
      {},
      { env },
    );
    expect(snapshot.failure).toBeUndefined();
    const landedBefore = await outputHashes(snapshot.output, ['manifest.json']);
    // The reader of the first range meets a lasting 500 on its first request.
    const first = new Date(slow.world.feed.start).toISOString().slice(0, 7);
    slow.inject({ kind: 'error', status: 500, contains: `offset=${first}`, count: 100_000 });
    const before = slow.requests.length;
    const failed = await runAgainst(slow, options, dir);
    slow.faults.clearQueue();
    expect(failed.failure?.message).toMatch(/500/);
    // Without the stop the other readers read on to the end of their ranges (over a quarter of `all`).
    expect(slow.requests.length - before).toBeLessThan(all / 10);
    // What had landed is untouched; what the readers landed is whole events of the feed, each once.
    const after = await outputHashes(failed.output, ['manifest.json']);
    expect([...landedBefore].filter(([file, hash]) => after.get(file) !== hash)).toEqual([]);
    const landed = await landedEventHashes(failed.output).catch(() => [] as string[]);
    expect(new Set(landed).size).toBe(landed.length);
    expect(truthEventHashes(slow)).toEqual(expect.arrayContaining(landed));
    // A rerun with the service well again completes the feed.
    const rerun = await runAgainst(slow, options, dir);
    expect(rerun.failure).toBeUndefined();
    expect(await landedEventHashes(rerun.output)).toEqual(truthEventHashes(slow));
  });

  it('hands each range to one reader only, with many readers splitting ranges as they go idle', async () => {
    const slow = await useSimulator({
      seed: 13,
      signs: { signs: 3000, feedStart: '2026-08-15T00:00:00.000Z' },
      faults: { latencyMs: 20 },
    });
    const { failure, output } = await runAgainst(slow, { concurrency: 16, unit_rows: 500 });
    expect(failure).toBeUndefined();
    expect(await landedEventHashes(output)).toEqual(truthEventHashes(slow));
  });

  it('reads from exactly the ranges that validate --format json listed', async () => {
    const slow = await useSimulator({
      seed: 19,
      signs: { signs: 3000 },
      faults: { latencyMs: 2 },
    });
    const env = { ROAD_ETL_SIGNS_URL: slow.env.ROAD_ETL_SIGNS_URL };
    // (No audit of the landed past: its windows are random, the plan names only its share.)
    const options = {
      limit: 20,
      concurrency: 4,
      unit_rows: 200,
      retries: 1,
      backoff_ms: 1,
      audit_share: 0,
    };
    const dir = await testDir();
    // A first run that fails part way leaves its ranges in the checkpoint, each at its cursor.
    const first = new Date(slow.world.feed.start).toISOString().slice(0, 7);
    slow.inject({ kind: 'error', status: 500, contains: `offset=${first}`, count: 100_000 });
    const failed = await runAgainst(slow, options, dir);
    slow.faults.clearQueue();
    expect(failed.failure?.message).toMatch(/500/);

    const file = join(dir, 'pipelines', 'p.yaml');
    const validate = await runCli(
      ['validate', file, '--output', failed.output, '--format', 'json'],
      { env },
    );
    expect(validate.code, validate.stderr).toBe(0);
    const plan = JSON.parse(validate.stdout) as {
      steps: {
        plan: { ranges: { end: string | null; cursor: { offset: string } }[] | null };
      }[];
    };
    const ranges = plan.steps[0]!.plan.ranges!;
    expect(ranges.length).toBeGreaterThan(1);
    const before = slow.requests.length;
    const rerun = await runCli(['run', file, '--output', failed.output], { env });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await landedEventHashes(failed.output)).toEqual(truthEventHashes(slow));
    // The feed's pages asked (not the one-event question that identifies the feed).
    const asked = slow.requests
      .slice(before)
      .filter((r) => r.route === 'events')
      .map((r) => new URLSearchParams(r.query))
      .filter((q) => q.get('limit') !== '1')
      .map((q) => Date.parse(q.get('offset')!));
    const bounds = ranges.map((r) => ({
      from: Date.parse(r.cursor.offset),
      to: r.end === null ? Infinity : Date.parse(r.end),
    }));
    // Each range unfinished is read from its cursor, and nothing outside the ranges is asked.
    for (const range of bounds.filter((b) => b.from < b.to)) expect(asked).toContain(range.from);
    expect(asked.filter((at) => !bounds.some((b) => at >= b.from && at < b.to))).toEqual([]);
  });

  it('reads one town with town_code', async () => {
    const { output } = await runAgainst(simulator, { town_code: 'GM0599', concurrency: 2 });
    const expected = truthEventHashes(simulator, 'GM0599');
    expect(expected.length).toBeGreaterThan(0);
    expect(await landedEventHashes(output)).toEqual(expected);
  });

  it('continues from its checkpoint: a second run adds only what was published since', async () => {
    const growing = await useSimulator({
      seed: 11,
      signs: { signs: 500 },
      now: '2026-10-01T00:00:00.000Z',
    });
    const dir = await testDir();
    const first = await runAgainst(growing, { concurrency: 3 }, dir);
    const early = truthEventHashes(growing);
    expect(await landedEventHashes(first.output)).toEqual(early);
    growing.world.setNow('2026-11-15T00:00:00.000Z');
    const second = await runAgainst(growing, { concurrency: 3 }, dir);
    expect(await landedEventHashes(second.output)).toEqual(truth);
    expect(second.summary.steps[0]!.rows_out).toBe(truth.length - early.length);
    const third = await runAgainst(growing, { concurrency: 3 }, dir);
    expect(third.summary.steps[0]!.rows_out).toBe(0);
  });

  it('quarantines records that cannot be typed, with the reason, and loses none', async () => {
    const messy = await useSimulator({ seed: 12, signs: { signs: 400, badRecordRate: 0.03 } });
    const { output, summary } = await runAgainst(messy, { concurrency: 2 });
    const all = truthEventHashes(messy);
    const bad = [...messy.world.distinctEvents()].filter(
      (e) => typeof e['id'] === 'string' && !/^\d+$/.test(e['id']),
    );
    expect(bad.length).toBeGreaterThan(5);
    const quarantined = await quarantinedHashes(output);
    expect(quarantined).toHaveLength(bad.length);
    expect(sorted([...(await landedEventHashes(output)), ...quarantined])).toEqual(sorted(all));
    expect(summary.steps[0]!.rows_out).toBe(all.length - bad.length);
  });

  it('comes through 500s, resets, truncated bodies and malformed answers with retries, to the same dataset', async () => {
    const faulty = await useSimulator({
      seed: 11,
      signs: { signs: 500 },
      faults: {
        errorRate: 0.1,
        resetRate: 0.05,
        truncateRate: 0.05,
        rateLimitRate: 0.05,
        retryAfterSeconds: 0,
        htmlRate: 0.03,
        contentTypeRate: 0.05,
        notArrayRate: 0.05,
        nonObjectsRate: 0.05,
        corruptGzipRate: 0.05,
      },
    });
    const { failure, output } = await runAgainst(faulty, { concurrency: 3, retries: 12 });
    expect(failure).toBeUndefined();
    expect(await landedEventHashes(output)).toEqual(truth);
    // The faults fall at random (seeded) over a number of requests that varies with the
    // readers' timing; each kind on its own is proven by the reliability matrix.
    const kinds = new Set(faulty.requests.map((r) => r.fault).filter(Boolean));
    expect(kinds.size).toBeGreaterThanOrEqual(6);
    const malformed = ['content-type', 'not-array', 'non-objects', 'corrupt-gzip'] as const;
    expect(malformed.filter((kind) => kinds.has(kind)).length).toBeGreaterThanOrEqual(2);
  });

  it('fails with the endpoint, status and body when retries do not help', async () => {
    const broken = await useSimulator({
      seed: 11,
      signs: { signs: 100 },
      faults: { errorRate: 1 },
    });
    const { failure } = await runAgainst(broken, { retries: 2 });
    expect(failure?.message).toMatch(
      /Request failed after 3 attempts \(Upstream answered 500\): GET http:\/\/127\.0\.0\.1:\d+\/signs\/api\/rest\/static-road-data\/traffic-signs\/v1\/events\?offset=.* with status 500: .*Simulated failure/,
    );
  });
});

describe('signs.events at an instant shared by more events than a chunk holds', () => {
  it('reads the instant per town code and loses nothing', async () => {
    const burst = await useSimulator({
      seed: 5,
      signs: { signs: 3000, rounds: 2, burst: { size: 250 } },
    });
    const { failure, output } = await runAgainst(burst, { concurrency: 2, unit_rows: 2000 });
    expect(failure).toBeUndefined();
    expect(sorted(await landedEventHashes(output))).toEqual(sorted(truthEventHashes(burst)));
    const { run: manifest } = await readManifest(output);
    const bursts = manifest.steps[0]!.notes?.['bursts'] as { instant: string; events: number }[];
    expect(bursts.map((b) => b.instant)).toEqual([
      new Date(burst.world.feed.burst!.time).toISOString(),
    ]);
  });

  it('reads the towns the feed has not shown yet too (a run that starts at the instant)', async () => {
    const burst = await useSimulator({
      seed: 34,
      signs: { signs: 3000, rounds: 2, burst: { size: 300 } },
    });
    const time = burst.world.feed.burst!.time;
    const instant = new Date(time).toISOString();
    const atInstant = [...burst.world.distinctEvents()].filter(
      (e) => e['publication_timestamp'] === instant,
    );
    const town = (e: Record<string, unknown>): string =>
      (e['location'] as { county: { code: string } }).county.code;
    // Precondition: a town of the instant has none of its events in the first chunk, so
    // neither that chunk nor an earlier one (the run starts at the instant) shows it.
    const first = new Set(atInstant.slice(0, 100).map(town));
    expect(atInstant.map(town).filter((t) => !first.has(t)).length).toBeGreaterThan(0);
    const { failure, output, logger } = await runAgainst(burst, { concurrency: 1, start: instant });
    expect(failure).toBeUndefined();
    const fromInstant = [...burst.world.distinctEvents()]
      .filter((e) => Date.parse(e['publication_timestamp'] as string) >= time)
      .map((e) => md5(JSON.stringify(e)));
    expect(sorted(await landedEventHashes(output))).toEqual(sorted(fromInstant));
    expect(logger.events.some((e) => e.event === 'signs.burst')).toBe(true);
  });

  it('stops with an error naming the instant when even one town holds more than a chunk', async () => {
    const burst = await useSimulator({
      seed: 5,
      signs: { signs: 8000, rounds: 1, burst: { size: 150, townCode: 'GM0363' } },
    });
    expect(burst.world.feed.burst!.size).toBe(150);
    const instant = new Date(burst.world.feed.burst!.time).toISOString();
    const { failure } = await runAgainst(burst, { concurrency: 1 });
    expect(failure?.message).toContain(
      `more than 100 events of town GM0363 share the instant ${instant}`,
    );
    expect(failure?.message).toContain('unreachable: record');
  });

  it('with unreachable: record, passes the instant and records the gap in the manifest', async () => {
    const burst = await useSimulator({
      seed: 5,
      signs: { signs: 8000, rounds: 1, burst: { size: 150, townCode: 'GM0363' } },
    });
    expect(burst.world.feed.burst!.size).toBe(150);
    const instant = new Date(burst.world.feed.burst!.time).toISOString();
    const { failure, output } = await runAgainst(burst, { concurrency: 1, unreachable: 'record' });
    expect(failure).toBeUndefined();
    const { run: manifest } = await readManifest(output);
    expect(manifest.steps[0]!.notes?.['gaps']).toEqual([
      {
        instant,
        town_code: 'GM0363',
        reason: expect.stringContaining('more than 100 events') as string,
      },
    ]);
    const landed = new Set(await landedEventHashes(output));
    const missing = truthEventHashes(burst).filter((h) => !landed.has(h));
    const atInstant = [...burst.world.distinctEvents()].filter(
      (e) => e['publication_timestamp'] === instant,
    );
    // Everything is there but the events of the town beyond the first chunk at that instant.
    const reachable = atInstant
      .filter((e) => (e['location'] as { county: { code: string } }).county.code === 'GM0363')
      .slice(0, 100).length;
    expect(missing).toHaveLength(
      atInstant.filter(
        (e) => (e['location'] as { county: { code: string } }).county.code === 'GM0363',
      ).length - reachable,
    );
  });
});

describe('monthCut', () => {
  const page = (instants: string[]) => ({
    body: Buffer.alloc(0),
    positions: instants.map((_, n) => n),
    indexes: instants.map(() => 0),
    instants,
  });
  const day1 = '2026-03-31T23:59:59.999Z';
  const day2 = '2026-04-01T00:00:00.000Z';
  const day3 = '2026-04-02T08:00:00.000Z';
  const may = '2026-05-01T08:00:00.000Z';

  it('cuts a due unit at the first event of a new month', () => {
    expect(monthCut(page([day1, day1, day2, day2]), { staged: 10, first: day1 }, 10, day1)).toBe(2);
    // due only after the first two events of the page, and only a new month is a place to cut
    expect(monthCut(page([day1, day2, day3, may]), { staged: 8, first: day1 }, 10, day1)).toBe(3);
    // the page begins a new month
    expect(monthCut(page([day2, day2]), { staged: 12, first: day1 }, 10, day1)).toBe(0);
  });

  it('does not cut a unit that is not due, nor a page of one month', () => {
    expect(monthCut(page([day1, day2]), { staged: 5, first: day1 }, 10, day1)).toBeUndefined();
    expect(monthCut(page([day2, day3]), { staged: 12, first: day1 }, 10, day2)).toBeUndefined();
    expect(monthCut(page([day2]), { staged: 0, first: undefined }, 0, undefined)).toBeUndefined();
  });

  it('cuts a unit that spans a month of days, however few its events, where a month begins', () => {
    const first = '2026-03-01T10:00:00.000Z';
    const before = '2026-03-30T10:00:00.000Z';
    // 2026-04-01 is 31 days after 2026-03-01, and a new month; 2026-03-31 is 30
    expect(monthCut(page(['2026-04-01T06:00:00.000Z']), { staged: 3, first }, 10_000, before)).toBe(
      0,
    );
    expect(
      monthCut(page(['2026-03-31T06:00:00.000Z']), { staged: 3, first }, 10_000, before),
    ).toBeUndefined();
    // A month begun 28 days in: not due yet, the unit goes on into it
    const fifth = '2026-03-05T10:00:00.000Z';
    expect(
      monthCut(page(['2026-04-02T06:00:00.000Z']), { staged: 3, first: fifth }, 10_000, before),
    ).toBeUndefined();
  });

  it('does not cut where the events are out of order around the cut', () => {
    // Starting again at may's instant, a reader would not be given the day2 event after it;
    // starting at day2's, it would be given the may event before it a second time.
    expect(
      monthCut(page([day1, may, day2]), { staged: 10, first: day1 }, 10, day1),
    ).toBeUndefined();
    expect(
      monthCut(page([day1, may, day1]), { staged: 10, first: day1 }, 10, day1),
    ).toBeUndefined();
    // the reader has staged a later instant than the page's
    expect(monthCut(page([day2, day2]), { staged: 12, first: day1 }, 10, may)).toBeUndefined();
  });
});
