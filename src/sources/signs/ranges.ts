/**
 * The backfill's time ranges, planned and split without the network: the first
 * run cuts the history from the feed's first event to now into ranges (the
 * last one open, following the feed), and a reader that runs out of ranges
 * takes the upper half of the range with the most work left. Ranges a day or
 * more wide are cut at UTC midnight, so that a day's partition is one
 * reader's: two readers in one day would each make a file there.
 */
import { offsetMs, toOffset, type Cursor } from './feed.js';
import type { FeedPosition } from './landing.js';

export const EPOCH = '1970-01-01T00:00:00.000Z';
/** Ranges shorter than this are not split further. */
const MIN_SPLIT_MS = 60_000;
/** A range is split only when its estimated rest is worth this many requests of a new reader. */
const MIN_SPLIT_PAGES = 8;
/** The first run plans this many ranges per reader: a reader that finishes takes the next one. */
const RANGES_PER_READER = 3;
export const DAY_MS = 86_400_000;

/** The UTC midnight nearest to an instant (ms). */
function nearestMidnight(ms: number): number {
  return Math.round(ms / DAY_MS) * DAY_MS;
}

export interface RangeState {
  start: string;
  /** Exclusive end (the next range's start); null for the open range that follows the feed. */
  end: string | null;
  /** The committed cursor: everything before it is landed. */
  cursor: Cursor;
}

/** A range as the readers work on it: the committed cursor and the live one, which runs ahead. */
export interface LiveRange {
  state: RangeState;
  live: Cursor;
  claimed: boolean;
  finished: boolean;
  /** Events taken in this run, and the instant of the first, to estimate the work left. */
  taken: number;
  firstMs: number | undefined;
}

export function liveRange(state: RangeState): LiveRange {
  return {
    state,
    live: state.cursor,
    claimed: false,
    finished: false,
    taken: 0,
    firstMs: undefined,
  };
}

/** The feed position of a cursor: its instant and how many events of it are taken. */
export function position(cursor: Cursor): FeedPosition {
  return { ms: offsetMs(cursor.offset), index: cursor.seen.length };
}

export interface RangePlanInput {
  /** Where the first run starts (the option `start`, else the epoch). */
  start: string | undefined;
  /** The instant of the feed's first event at or after `start` (undefined: the feed is empty). */
  firstInstant: string | undefined;
  readers: number;
  now: number;
}

/** Where the first run starts: the option `start`, else the beginning of the feed. */
export function rangeStart(start: string | undefined): string {
  return toOffset(start ?? EPOCH)!;
}

/** Plans the first run: the history from the first event to now in time ranges, the last one open. */
export function planRanges(input: RangePlanInput): RangeState[] {
  const start = rangeStart(input.start);
  const open: RangeState = { start, end: null, cursor: { offset: start, seen: [] } };
  const firstAt = toOffset(input.firstInstant);
  if (input.readers === 1 || !firstAt) return [open];
  const from = offsetMs(firstAt);
  const { now } = input;
  const count = Math.min(
    input.readers * RANGES_PER_READER,
    Math.floor((now - from) / MIN_SPLIT_MS),
  );
  if (count < 2) return [open];
  // A day or more apart, bounds at the nearest midnight stay in order and inside the history.
  const daily = (now - from) / count >= DAY_MS;
  const bounds = Array.from({ length: count - 1 }, (_, i) => {
    const ms = from + Math.floor(((i + 1) * (now - from)) / count);
    return new Date(daily ? nearestMidnight(ms) : ms).toISOString();
  });
  const starts = [start, ...bounds];
  return starts.map((s, i) => ({
    start: s,
    end: bounds[i] ?? null,
    cursor: { offset: s, seen: [] },
  }));
}

/** What is left of a range in ms: from its live cursor to its end (now, for the open range). */
export function span(range: LiveRange, now: number): number {
  const end = range.state.end === null ? now : offsetMs(range.state.end);
  return Math.max(0, end - offsetMs(range.live.offset));
}

/** Events left in a range, estimated from what its reader has seen so far (Infinity before it has seen any). */
function estimatedRest(range: LiveRange, now: number): number {
  const covered = range.firstMs === undefined ? 0 : offsetMs(range.live.offset) - range.firstMs;
  if (covered <= 0) return Infinity;
  return (range.taken / covered) * span(range, now);
}

/**
 * Cuts the upper half off the busy range with the most work left and puts it
 * after that range in `ranges`, claimed (no other idle reader may take it);
 * undefined when no range is worth splitting for requests of `limit` events.
 */
export function splitLargest(
  ranges: LiveRange[],
  now: number,
  limit: number,
): LiveRange | undefined {
  // The open range follows the feed's tail, whose end is unknown: it is not split.
  const busy = ranges.filter((r) => r.claimed && !r.finished && r.state.end !== null);
  const largest = busy.sort(
    (a, b) => estimatedRest(b, now) - estimatedRest(a, now) || span(b, now) - span(a, now),
  )[0];
  if (!largest || span(largest, now) < MIN_SPLIT_MS) return undefined;
  if (estimatedRest(largest, now) < MIN_SPLIT_PAGES * 2 * limit) return undefined;
  const half = Math.floor(span(largest, now) / 2);
  const middle = offsetMs(largest.live.offset) + half;
  // Half a range of two days or more: its nearest midnight is inside it.
  const mid = new Date(half >= DAY_MS ? nearestMidnight(middle) : middle).toISOString();
  const part: LiveRange = {
    ...liveRange({ start: mid, end: largest.state.end, cursor: { offset: mid, seen: [] } }),
    claimed: true,
  };
  largest.state.end = mid;
  ranges.splice(ranges.indexOf(largest) + 1, 0, part);
  return part;
}
