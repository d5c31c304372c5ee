import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, quotedIdentifier, quotedString } from '../../src/duckdb/database.js';
import {
  DAILY_FLOOR,
  beyondChance,
  dailyRate,
  judgeSnapshot,
  type JudgeOptions,
} from '../../src/sources/signs/live-judge.js';
import { LIVE_COLUMNS } from '../../src/sources/signs/live.js';
import { liveRequestKey, signsLiveOptions } from '../../src/sources/signs/live-options.js';
import { signsLiveStep } from '../../src/steps/signs-live-step.js';

let db: Database;
let dir: string;
const LAST = Date.parse('2026-11-20T06:00:00Z');
const DAY = 86_400_000;

interface Shape {
  /** Signs sign-<from> .. sign-<to - 1>, and `extra` new ones. */
  from: number;
  to: number;
  extra?: number;
  /** Signs (by number) without a county code. */
  stripped?: number;
  /** The first `twice` signs served again, with another road name when `differing`. */
  twice?: number;
  differing?: boolean;
}

/** A typed snapshot file: every column of a snapshot, NULL but the id, county, road name and fingerprint. */
async function snapshotOf(name: string, shape: Shape): Promise<string> {
  const file = join(dir, `${name}.parquet`);
  const given: Record<string, string> = {
    sign_id: 'id',
    county_code: `CASE WHEN i >= 0 AND i < ${shape.stripped ?? 0} THEN NULL ELSE 'GM0363' END`,
    road_name: `CASE WHEN again AND ${shape.differing ?? false} THEN 'Elders' WHEN i % 5 = 0 THEN NULL ELSE 'Dam' END`,
    downloaded_at: `TIMESTAMPTZ '2026-11-20 06:00:00+00'`,
  };
  const columns = [...LIVE_COLUMNS, ['fingerprint', 'UBIGINT'] as const]
    .map(([c, type]) => {
      if (c === 'fingerprint') return `hash(id, ${given['road_name']}) AS fingerprint`;
      if (c === 'geometry') return `NULL::GEOMETRY AS geometry`;
      return `${given[c] ?? `NULL::${type}`} AS ${quotedIdentifier(c)}`;
    })
    .join(', ');
  await db.run(
    `COPY (WITH ids AS (
       SELECT i, 'sign-' || i AS id, false AS again FROM range(${shape.from}, ${shape.to}) t(i)
       UNION ALL SELECT -1 - i, 'new-' || i, false FROM range(${shape.extra ?? 0}) t(i)
       UNION ALL SELECT i, 'sign-' || i, true FROM range(${shape.from}, ${shape.from + (shape.twice ?? 0)}) t(i))
     SELECT ${columns} FROM ids)
     TO ${quotedString(file)} (FORMAT parquet)`,
  );
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'road-etl-live-judge-'));
  db = await Database.open({ threads: 1 });
  // The last snapshot: 10,000 signs, each with a county code, four in five with a road name.
  const last = await snapshotOf('last', { from: 0, to: 10_000 });
  await db.run(`CREATE VIEW signs_live AS SELECT * FROM read_parquet(${quotedString(last)})`);
});

afterAll(async () => {
  db.close();
  await rm(dir, { recursive: true, force: true });
});

async function judge(shape: Shape, more: Partial<JudgeOptions> = {}) {
  const file = await snapshotOf(`s${Math.random().toString(36).slice(2)}`, shape);
  const rows = shape.to - shape.from + (shape.extra ?? 0) + (shape.twice ?? 0);
  return judgeSnapshot(db, {
    file,
    rows,
    features: rows,
    maxGone: undefined,
    maxStripped: undefined,
    recent: [],
    at: LAST + DAY,
    ...more,
  });
}

describe('beyondChance: whether k of n signs is more than a day at rate p gives once in a million', () => {
  // n KL(k/n || p) against ln(10^6) = 13.8, computed by hand.
  it.each([
    [1, 2, 0.01, false], // 3.2: one of a two-sign selection replaced is a day like any
    [2, 2, 0.01, false], // 9.2
    [10, 22, 0.01, true], // 31.0: ten of 22 is not
    [24, 700, 0.01, false], // 12.8
    [25, 700, 0.01, true], // 14.1
    [36, 897, 0.01, true], // 23.4: an answer cut by 4%
    [150, 10_000, 0.01, false], // 10.9
    [200, 10_000, 0.01, true], // 39.1
    [200, 10_000, 1 - 0.99 ** 3, false], // three days since the last snapshot
    [7, 700, 0.01, false], // no more than expected
  ])('%i of %i at %f: %s', (k, n, p, beyond) => {
    expect(beyondChance(k, n, p)).toBe(beyond);
  });
});

describe("dailyRate: the folder's own rate, with a floor", () => {
  it.each([
    [[], DAILY_FLOOR],
    [[0.001, 0.002, 0.003], DAILY_FLOOR],
    [[0.04, 0.05, 0.06], 0.1],
    [[0.04, 0.05], 0.09],
    [[0.001, 0.9, 0.002], DAILY_FLOOR],
  ])('%j: %f', (recent, rate) => {
    expect(dailyRate(recent)).toBeCloseTo(rate, 10);
  });
});

describe('judgeSnapshot', () => {
  it('counts the signs of the last snapshot a new one leaves out, against what the days since remove', async () => {
    // 200 of 10,000 gone a day after: refused; 150 is a day like any; growth never counts.
    const refused = await judge({ from: 200, to: 10_000, extra: 5_000 });
    expect(refused.problem).toContain(
      'leaves out 200 of the 10000 signs of the last snapshot (2026-11-20T06:00:00.000Z, 1 day(s) before), 2%',
    );
    const day = await judge({ from: 150, to: 10_000 });
    expect(day.problem).toBeUndefined();
    expect(day.gonePerDay).toBeCloseTo(0.015, 10);
    expect((await judge({ from: 0, to: 10_000, extra: 90_000 })).problem).toBeUndefined();
    // Three days after the last snapshot, 200 gone is what three days remove; 0.5% a day each.
    const later = await judge({ from: 200, to: 10_000 }, { at: LAST + 3 * DAY });
    expect(later.problem).toBeUndefined();
    expect(later.gonePerDay).toBeCloseTo(1 - 0.98 ** (1 / 3), 10);
    // A folder whose nights remove 3% a day lets 6% through; max_gone sets a share instead.
    expect(
      (await judge({ from: 600, to: 10_000 }, { recent: [0.03, 0.03] })).problem,
    ).toBeUndefined();
    expect((await judge({ from: 600, to: 10_000 }, { maxGone: 0.05 })).problem).toContain(
      'far more than max_gone 5%',
    );
    expect((await judge({ from: 600, to: 10_000 }, { maxGone: 0.07 })).problem).toBeUndefined();
  });

  it('does not take a handful of signs for a share', async () => {
    const small = await Database.open({ threads: 1 });
    try {
      const last = join(dir, 'last.parquet');
      const some = (n: number) =>
        small.run(
          `CREATE OR REPLACE VIEW signs_live AS SELECT * FROM read_parquet(${quotedString(last)}) WHERE sign_id IN (SELECT 'sign-' || i FROM range(${n}) t(i))`,
        );
      const file = async (shape: Shape) => {
        const f = await snapshotOf(`small${shape.to}`, shape);
        const rows = shape.to - shape.from + (shape.extra ?? 0);
        const options = { maxGone: undefined, maxStripped: undefined, recent: [], at: LAST + DAY };
        return judgeSnapshot(small, { file: f, rows, features: rows, ...options });
      };
      await some(2);
      // One of two replaced by another: half gone, but one sign.
      expect((await file({ from: 1, to: 2, extra: 1 })).problem).toBeUndefined();
      await some(22);
      // A selection of 22 answered with 12.
      expect((await file({ from: 10, to: 22 })).problem).toContain('leaves out 10 of the 22 signs');
    } finally {
      small.close();
    }
  });

  it('refuses an answer whose signs lack a property most signs had, beyond what a day changes', async () => {
    const stripped = await judge({ from: 0, to: 10_000, stripped: 500 });
    expect(stripped.problem).toContain(
      "its signs lack properties the signs of the last snapshot (2026-11-20T06:00:00.000Z, 1 day(s) before) had: county_code (100% of the last snapshot's signs, 95% of the answer's)",
    );
    expect(stripped.problem).not.toContain('road_name');
    expect((await judge({ from: 0, to: 10_000, stripped: 50 })).problem).toBeUndefined();
    expect(
      (await judge({ from: 0, to: 10_000, stripped: 500 }, { maxStripped: 0.06 })).problem,
    ).toBeUndefined();
  });

  it('keeps a sign served twice with the same content once, and refuses one served with two contents', async () => {
    const same = await judge({ from: 0, to: 10_000, twice: 40 });
    expect(same.problem).toBeUndefined();
    expect(same.twice).toEqual(
      Array.from({ length: 40 }, (_, i) => `sign-${i}`).sort((a, b) => (a < b ? -1 : 1)),
    );
    const differing = await judge({ from: 0, to: 10_000, twice: 40, differing: true });
    expect(differing.problem).toMatch(
      /holds 40 sign\(s\) more than once with different content \(sign-0, sign-1, sign-10, …\)/,
    );
  });

  it('refuses an empty answer, and lets anything through with max_gone 1', async () => {
    const empty = await judge({ from: 0, to: 0 });
    expect(empty.problem).toContain('holds no sign');
    expect((await judge({ from: 0, to: 0 }, { maxGone: 1 })).problem).toBeUndefined();
    expect((await judge({ from: 9_000, to: 10_000 }, { maxGone: 1 })).problem).toBeUndefined();
  });
});

describe('the conditional request of signs.live', () => {
  const options = signsLiveOptions.parse({});
  const planned = async (hoursAgo: number | undefined, request = liveRequestKey(options)) =>
    await signsLiveStep.plan(options, {
      stepId: 'signs_live',
      output: dir,
      sqlDir: dir,
      checkpoint: {
        request: JSON.stringify(request),
        last_modified: 'Fri, 20 Nov 2026 04:00:00 GMT',
        ...(hoursAgo === undefined
          ? {}
          : { downloaded_at: new Date(Date.now() - hoursAgo * 3_600_000).toISOString() }),
        gone_per_day: [0.002, 0.004],
      },
    });

  it('asks If-Modified-Since after a recent download of the same request, and downloads whole once a day', async () => {
    expect(await planned(1)).toMatchObject({
      if_modified_since: 'Fri, 20 Nov 2026 04:00:00 GMT',
      gone_per_day: [0.002, 0.004],
    });
    expect((await planned(19)).if_modified_since).toBe('Fri, 20 Nov 2026 04:00:00 GMT');
    // Whatever Last-Modified says, a download more than 20 hours old is made again whole.
    expect((await planned(21)).if_modified_since).toBeNull();
    expect((await planned(undefined)).if_modified_since).toBeNull();
    expect((await planned(1, ['v4'])).if_modified_since).toBeNull();
  });
});
