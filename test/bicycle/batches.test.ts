import { describe, expect, it } from 'vitest';
import { WorkPlan, Coverage, subtract, type Batch } from '../../src/sources/bicycle/batches.js';
import {
  classifyRefusal,
  emptyLimits,
  nextSize,
  recordFailure,
  Sizer,
  recordSuccess,
} from '../../src/sources/bicycle/sizing.js';

const H = 3_600_000;

/** Counts how often each location-hour of the batch is asked for. */
function countHours(seen: Map<string, number>, batch: Batch): void {
  for (const id of batch.ids)
    for (let h = batch.from; h < batch.to; h += H)
      seen.set(`${id}@${h}`, (seen.get(`${id}@${h}`) ?? 0) + 1);
}

/** Drives the learning against a hidden limit; returns the sizes tried. */
function search(
  hidden: number,
  guess: number,
  cap = Infinity,
  items = 40,
): { tried: number[]; settled: number } {
  const limit = emptyLimits().locations;
  const tried: number[] = [];
  for (let i = 0; i < items; i++) {
    const size = nextSize(limit, guess, cap);
    tried.push(size);
    if (size <= hidden) recordSuccess(limit, size);
    else recordFailure(limit, size);
  }
  return { tried, settled: nextSize(limit, guess, cap) };
}

describe('limit learning', () => {
  it.each([
    [50, 100],
    [50, 64],
    [37, 1000],
    [1, 8],
    [250, 100],
  ])('settles on the largest size that works (hidden %i, guess %i)', (hidden, guess) => {
    const { tried, settled } = search(hidden, guess);
    expect(settled).toBe(hidden);
    // never more failures than a binary search over the range doubling reached needs
    const failures = tried.filter((s) => s > hidden).length;
    expect(failures).toBeLessThanOrEqual(Math.ceil(Math.log2(2 * Math.max(guess, hidden))) + 1);
  });

  it('grows past a guess that works, never above the cap', () => {
    expect(search(1000, 100, 300).settled).toBe(300);
    expect(search(1000, 100, 300).tried.every((s) => s <= 300)).toBe(true);
    const limit = emptyLimits().period_hours;
    expect(nextSize(limit, 744)).toBe(744);
    recordSuccess(limit, 744);
    expect(nextSize(limit, 744)).toBe(1488);
    recordSuccess(limit, 24); // a short tail window says nothing new
    expect(nextSize(limit, 744)).toBe(1488);
  });

  it('has one probe out at a time; the other requests use the size known to work', () => {
    const limit = emptyLimits().locations;
    const sizer = new Sizer(limit, 100);
    expect(sizer.size(1000)).toBe(100);
    expect(sizer.sent(100)).toBe(true);
    expect(sizer.size(1000)).toBeUndefined(); // nothing known to work yet: wait
    sizer.settled(100, false, true);
    expect(sizer.size(1000)).toBe(50);
    const probe = sizer.sent(50);
    expect(sizer.size(1000)).toBeUndefined();
    sizer.settled(50, true, probe);
    expect(sizer.size(1000)).toBe(75); // the next probe
    expect(sizer.sent(75)).toBe(true);
    expect(sizer.size(1000)).toBe(50); // while it is out
    expect(sizer.sent(50)).toBe(false);
    expect(sizer.size(20)).toBe(20); // never above the cap
  });

  it('halves at the first refusal, then searches the gap', () => {
    const limit = emptyLimits().locations;
    expect(nextSize(limit, 100)).toBe(100);
    recordFailure(limit, 100);
    expect(nextSize(limit, 100)).toBe(50);
    recordSuccess(limit, 50);
    expect(nextSize(limit, 100)).toBe(75);
    recordFailure(limit, 75);
    expect(nextSize(limit, 100)).toBe(62);
  });

  it('forgets a success that a later, smaller refusal contradicts', () => {
    const limit = { max_ok: 50, min_fail: 51 };
    recordFailure(limit, 40);
    expect(limit).toEqual({ max_ok: null, min_fail: 40 });
    expect(nextSize(limit, 100)).toBe(20);
  });

  it('classifies refusals by their message', () => {
    expect(classifyRefusal('Too many locations requested (120)')).toBe('locations');
    expect(classifyRefusal('Maximum number of locations exceeded')).toBe('locations');
    expect(classifyRefusal('The requested period is too long')).toBe('period');
    expect(classifyRefusal("Invalid prefix 'GAL': no locations exist for it")).toBe('other');
    expect(classifyRefusal('endTime must be after startTime')).toBe('other');
  });
});

describe('work plan', () => {
  it('subtracts done intervals', () => {
    expect(
      subtract(
        [0, 10],
        [
          [2, 4],
          [6, 12],
        ],
      ),
    ).toEqual([
      [0, 2],
      [4, 6],
    ]);
    expect(subtract([0, 10], [[0, 10]])).toEqual([]);
  });

  it('cuts the period into windows x batches and covers every location-hour once', () => {
    const ids = Array.from({ length: 7 }, (_, i) => `L${i}`);
    const plan = new WorkPlan(ids, [0, 10 * H], []);
    expect(plan.requestsLeft(3, 4)).toBe(3 * 3);
    const seen = new Map<string, number>();
    for (let b = plan.next(3, 4); b; b = plan.next(3, 4)) {
      expect(b.ids.length).toBeLessThanOrEqual(3);
      expect(b.to - b.from).toBeLessThanOrEqual(4 * H);
      countHours(seen, b);
    }
    expect(seen.size).toBe(7 * 10);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  });

  it('leaves out what a previous run finished, per location', () => {
    const done: Batch[] = [{ from: 0, to: 5 * H, ids: ['A', 'B'] }];
    const plan = new WorkPlan(['A', 'B', 'C'], [0, 10 * H], done);
    expect(plan.hoursLeft).toBe(5 + 5 + 10);
    const batches: Batch[] = [];
    for (let b = plan.next(10, 100); b; b = plan.next(10, 100)) batches.push(b);
    expect(batches).toEqual([
      { from: 5 * H, to: 10 * H, ids: ['A', 'B'] },
      { from: 0, to: 10 * H, ids: ['C'] },
    ]);
  });

  it('keeps a window whole when the sizes change while its batches are cut', () => {
    const ids = Array.from({ length: 6 }, (_, i) => `L${i}`);
    const plan = new WorkPlan(ids, [0, 20 * H], []);
    const seen = new Map<string, number>();
    let round = 0;
    let hours = 4;
    for (let b = plan.next(2, hours); b; b = plan.next(2 + (round % 3), hours)) {
      // never longer than asked, also when the window was cut longer before
      expect(b.to - b.from).toBeLessThanOrEqual(hours * H);
      round++;
      hours = 3 + (round % 5);
      countHours(seen, b);
    }
    expect(seen.size).toBe(6 * 20);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  });

  it('takes refused batches first, cut again at the sizes current when taken', () => {
    const plan = new WorkPlan(['A', 'B', 'C'], [0, 4 * H], []);
    const first = plan.next(3, 4)!;
    expect(first).toEqual({ from: 0, to: 4 * H, ids: ['A', 'B', 'C'] });
    plan.requeue([first]);
    expect(plan.next(2, 3)).toEqual({ from: 0, to: 3 * H, ids: ['A', 'B'] });
    expect(plan.next(2, 3)).toEqual({ from: 3 * H, to: 4 * H, ids: ['A', 'B'] });
    expect(plan.next(2, 3)).toEqual({ from: 0, to: 3 * H, ids: ['C'] });
    expect(plan.next(2, 3)).toEqual({ from: 3 * H, to: 4 * H, ids: ['C'] });
    expect(plan.next(2, 3)).toBeUndefined();
  });

  it('counts the requests left, also halfway through a window', () => {
    const ids = Array.from({ length: 7 }, (_, i) => `L${i}`);
    const plan = new WorkPlan(ids, [0, 10 * H], []);
    let left = plan.requestsLeft(3, 4);
    expect(left).toBe(9);
    while (plan.next(3, 4)) {
      left--;
      expect(plan.requestsLeft(3, 4)).toBe(left);
    }
    expect(left).toBe(0);
  });
});

describe('Coverage', () => {
  it('covers a stretch only when every location of the selection has all of its hours staged', () => {
    const coverage = new Coverage(['A', 'B', 'C']);
    expect(coverage.covers(0, 24 * H)).toBe(false);
    coverage.add({ from: 0, to: 10 * H, ids: ['A', 'B', 'C'] });
    expect(coverage.covers(0, 10 * H)).toBe(true);
    expect(coverage.covers(0, 11 * H)).toBe(false);
    // A and B go on, C does not (its batch failed): nothing past 10 h is covered
    coverage.add({ from: 10 * H, to: 24 * H, ids: ['A', 'B'] });
    expect(coverage.covers(10 * H, 24 * H)).toBe(false);
    expect(coverage.covers(5 * H, 12 * H)).toBe(false);
    // C in two pieces that meet, out of order: joined
    coverage.add({ from: 17 * H, to: 24 * H, ids: ['C'] });
    expect(coverage.covers(10 * H, 24 * H)).toBe(false);
    coverage.add({ from: 10 * H, to: 17 * H, ids: ['C'] });
    expect(coverage.covers(0, 24 * H)).toBe(true);
  });

  it('ignores ids outside the selection and treats an empty stretch as covered', () => {
    const coverage = new Coverage(['A']);
    coverage.add({ from: 0, to: 5 * H, ids: ['Z'] });
    expect(coverage.covers(0, 5 * H)).toBe(false);
    expect(coverage.covers(3 * H, 3 * H)).toBe(true);
  });
});
