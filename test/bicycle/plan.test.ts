import { describe, expect, it } from 'vitest';
import { planMeasurements, runKey } from '../../src/sources/bicycle/plan.js';
import { emptyLimits } from '../../src/sources/bicycle/sizing.js';

const H = 3_600_000;
const FROM = Date.UTC(2024, 2, 1);
const TO = FROM + 240 * H; // ten days
const IDS = Array.from({ length: 250 }, (_, i) => `L${String(i).padStart(3, '0')}`);
const GUESSES = { locations: 100, hours: 31 * 24 };
const LEARNED = {
  locations: { max_ok: 40, min_fail: 41 },
  period_hours: { max_ok: 48, min_fail: 49 },
};

describe('the measurement plan (what validate prints and a run counts), without a network', () => {
  it('uses the first guesses while nothing is learned', () => {
    const plan = planMeasurements({
      ids: IDS,
      from: FROM,
      to: TO,
      limits: emptyLimits(),
      staged: [],
      guesses: GUESSES,
      serverSide: false,
    });
    // 240 hours fit one 744-hour window; 250 locations make 3 batches of at most 100.
    expect(plan).toEqual({
      hours: 240,
      sizes: { locations: 100, hours: 744 },
      learned: false,
      windows: 1,
      perWindow: 3,
      requests: 3,
    });
  });

  it('uses the learned limits and leaves out what an unfinished run has staged', () => {
    const input = {
      ids: IDS,
      from: FROM,
      to: TO,
      limits: LEARNED,
      guesses: GUESSES,
      serverSide: false,
    };
    // 48-hour windows: 5; 40 locations per batch: 7 batches a window.
    expect(planMeasurements({ ...input, staged: [] })).toMatchObject({
      sizes: { locations: 40, hours: 48 },
      learned: true,
      windows: 5,
      perWindow: 7,
      requests: 35,
    });
    // The first 40 locations are staged over the whole period: 210 are left, 6 batches x 5 windows.
    const staged = [{ from: FROM, to: TO, ids: IDS.slice(0, 40) }];
    expect(planMeasurements({ ...input, staged }).requests).toBe(30);
  });

  it('asks once per window for a selection sent as given, and cannot count without the locations', () => {
    const base = { from: FROM, to: TO, limits: LEARNED, staged: [], guesses: GUESSES };
    expect(planMeasurements({ ...base, ids: IDS, serverSide: true })).toMatchObject({
      perWindow: 1,
      requests: 5,
    });
    expect(planMeasurements({ ...base, ids: undefined, serverSide: false })).toMatchObject({
      windows: 5,
      perWindow: undefined,
      requests: undefined,
    });
  });

  it('keys a run by its period, locations and how they are asked for', () => {
    const spec = { mode: 'prefixes' as const, prefixes: ['L0'] };
    const key = runKey(spec, false, IDS, FROM, TO);
    expect(runKey(spec, false, [...IDS], FROM, TO)).toBe(key);
    expect(runKey(spec, true, IDS, FROM, TO)).not.toBe(key);
    expect(runKey(spec, false, IDS.slice(1), FROM, TO)).not.toBe(key);
    expect(runKey(spec, false, IDS, FROM, TO + H)).not.toBe(key);
  });
});
