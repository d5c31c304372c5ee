import { describe, expect, it } from 'vitest';
import {
  EPOCH,
  liveRange,
  planRanges,
  splitLargest,
  type LiveRange,
} from '../../src/sources/signs/ranges.js';

const DAY = 86_400_000;
const at = (ms: number): string => new Date(ms).toISOString();
const T0 = Date.UTC(2024, 0, 1);

describe('the first run’s ranges, planned without a network', () => {
  it('reads with one open range from the start for one reader, or an empty feed', () => {
    const open = [{ start: EPOCH, end: null, cursor: { offset: EPOCH, seen: [] } }];
    expect(
      planRanges({ start: undefined, firstInstant: at(T0), readers: 1, now: T0 + 6 * DAY }),
    ).toEqual(open);
    expect(
      planRanges({ start: undefined, firstInstant: undefined, readers: 4, now: T0 + 6 * DAY }),
    ).toEqual(open);
  });

  it('cuts the history from the first event to now into three ranges per reader, the last one open', () => {
    const ranges = planRanges({
      start: '2023-06-01T00:00:00Z',
      firstInstant: at(T0),
      readers: 2,
      now: T0 + 6 * DAY,
    });
    // 6 ranges: the first from the option's start, then one a day from the first event's day on.
    expect(ranges.map((r) => [r.start, r.end])).toEqual([
      ['2023-06-01T00:00:00.000Z', at(T0 + DAY)],
      [at(T0 + DAY), at(T0 + 2 * DAY)],
      [at(T0 + 2 * DAY), at(T0 + 3 * DAY)],
      [at(T0 + 3 * DAY), at(T0 + 4 * DAY)],
      [at(T0 + 4 * DAY), at(T0 + 5 * DAY)],
      [at(T0 + 5 * DAY), null],
    ]);
    for (const r of ranges) expect(r.cursor).toEqual({ offset: r.start, seen: [] });
  });

  it('cuts at UTC midnight when the ranges are a day or more wide, so that no day has two readers', () => {
    const from = T0 + 5 * 3_600_000; // 05:00
    const ranges = planRanges({
      start: undefined,
      firstInstant: at(from),
      readers: 2,
      now: T0 + 10 * DAY + 7 * 3_600_000,
    });
    // six ranges of 1 day 17 hours, each bound moved to its nearest midnight
    expect(ranges.map((r) => r.end)).toEqual([
      at(T0 + 2 * DAY),
      at(T0 + 4 * DAY),
      at(T0 + 5 * DAY),
      at(T0 + 7 * DAY),
      at(T0 + 9 * DAY),
      null,
    ]);
    // narrower than a day: cut where the arithmetic falls
    const hourly = planRanges({
      start: undefined,
      firstInstant: at(from),
      readers: 2,
      now: from + 12 * 3_600_000,
    });
    expect(hourly[1]!.start).toBe(at(from + 2 * 3_600_000));
  });

  it('does not cut a history shorter than two minutes', () => {
    expect(
      planRanges({ start: undefined, firstInstant: at(T0), readers: 8, now: T0 + 90_000 }),
    ).toHaveLength(1);
  });
});

describe('splitting the range with the most work left', () => {
  const busy = (start: number, end: number | null, taken: number, readTo: number): LiveRange => {
    const range = liveRange({
      start: at(start),
      end: end === null ? null : at(end),
      cursor: { offset: at(start), seen: [] },
    });
    return {
      ...range,
      claimed: true,
      live: { offset: at(readTo), seen: [] },
      taken,
      firstMs: start,
    };
  };

  it('gives an idle reader the upper half of the busy range with the most events left', () => {
    // Both have 8 days left; the first has taken 1,000 events in its first day, the second 10.
    const dense = busy(T0, T0 + 9 * DAY, 1000, T0 + DAY);
    const sparse = busy(T0 + 9 * DAY, T0 + 18 * DAY, 10, T0 + 10 * DAY);
    const ranges = [dense, sparse];
    const part = splitLargest(ranges, T0 + 20 * DAY, 100)!;
    expect(part.state).toEqual({
      start: at(T0 + 5 * DAY),
      end: at(T0 + 9 * DAY),
      cursor: { offset: at(T0 + 5 * DAY), seen: [] },
    });
    expect(part.claimed).toBe(true);
    expect(dense.state.end).toBe(at(T0 + 5 * DAY));
    expect(ranges).toEqual([dense, part, sparse]);
  });

  it('splits a range of two days or more at the midnight nearest its middle', () => {
    const range = busy(T0, T0 + 9 * DAY, 1000, T0 + DAY + 5 * 3_600_000);
    const part = splitLargest([range], T0 + 20 * DAY, 100)!;
    // the middle of what is left is day 5 at 02:30
    expect(part.state.start).toBe(at(T0 + 5 * DAY));
    expect(range.state.end).toBe(at(T0 + 5 * DAY));
  });

  it('leaves the open range, short ranges and ranges with little work left alone', () => {
    const now = T0 + 20 * DAY;
    expect(splitLargest([busy(T0, null, 1000, T0 + DAY)], now, 100)).toBeUndefined();
    expect(splitLargest([busy(T0, T0 + 50_000, 1000, T0 + 1)], now, 100)).toBeUndefined();
    // 8 days left at 10 events a day: 80 events, less than 8 pages of 100 for each half.
    expect(splitLargest([busy(T0, T0 + 9 * DAY, 10, T0 + DAY)], now, 100)).toBeUndefined();
  });
});
