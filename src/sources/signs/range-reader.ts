/**
 * One reader's pass over a range of the feed: each page is taken (the repeats
 * of the inclusive offset dropped) and staged, the next request already in
 * flight meanwhile; a full unit is handed on to land; an instant too crowded
 * for offset paging is read per town. The live cursor moves before anything
 * yields, so that a split meanwhile never cuts into a page.
 */
import type { SignsClient } from './client.js';
import {
  offsetMs,
  processPage,
  takenSlice,
  type Cursor,
  type PageOutcome,
  type TakenPage,
} from './feed.js';
import { DAY_MS, type LiveRange } from './ranges.js';

type FeedPage = Awaited<ReturnType<SignsClient['events']>>;

export interface RangeReading {
  client: SignsClient;
  /** Events per request. */
  limit: number;
  townCode: string | undefined;
  /** Events per unit: a unit this full is handed on to land. */
  unitRows: number;
  signal: AbortSignal;
  /** Stages a page's taken events in the unit in hand. */
  stage(taken: TakenPage): Promise<void>;
  /** Events staged in the unit in hand. */
  staged(): number;
  /**
   * Hands the unit in hand on to land (and waits for it when `wait`); it ends
   * at `end`, by default where the range's live cursor is.
   */
  flush(wait: boolean, end?: Cursor): Promise<void>;
  /** Reads a crowded instant per town; moves the range's live cursor past it. */
  burst(instant: string, townless: boolean): Promise<void>;
  /** Told of each page taken, before anything yields. */
  onPage(outcome: PageOutcome): void;
  /** Told of the events staged and the seconds of the range passed. */
  onProgress(rows: number, seconds: number): void;
}

/**
 * Reads `range` until it reaches its end (resolves true: the range is
 * complete), runs out of events for now, or the signal stops it (false); the
 * unit in hand is handed on first.
 */
export async function readRange(range: LiveRange, reading: RangeReading): Promise<boolean> {
  // The page asked for before it is needed, and its offset.
  let ahead: { offset: string; page: Promise<FeedPage> } | undefined;
  const fetchPage = (offset: string): Promise<FeedPage> =>
    reading.client.events({
      offset,
      limit: reading.limit,
      townCode: reading.townCode,
      signal: reading.signal,
    });
  // The parsed page does not outlive this call: only what is taken goes on.
  const nextPage = async (): Promise<PageOutcome> => {
    const fetched =
      ahead && ahead.offset === range.live.offset ? ahead.page : fetchPage(range.live.offset);
    ahead = undefined;
    const { events: page, body } = await fetched;
    const end = range.state.end === null ? undefined : offsetMs(range.state.end);
    const outcome = processPage(page, body, range.live, reading.limit, end);
    // The next request goes out now, while this page is staged: one reader waits on
    // the upstream, not on itself. Not past the range's end, nor into a crowded instant.
    if (!outcome.exhausted && !outcome.reachedEnd && !outcome.stuckAt && !reading.signal.aborted) {
      ahead = { offset: outcome.next.offset, page: fetchPage(outcome.next.offset) };
      ahead.page.catch(() => undefined); // awaited with the next page, or dropped
    }
    reading.onPage(outcome);
    range.taken += outcome.taken.positions.length;
    if (range.firstMs === undefined && outcome.firstInstant)
      range.firstMs = offsetMs(outcome.firstInstant);
    // The live cursor moves before anything yields: a split meanwhile must not cut into this page.
    range.live = outcome.next;
    return outcome;
  };
  // The latest instant this reader has staged, and the first of the unit in hand.
  let latest: string | undefined;
  let first: string | undefined;
  const stage = async (taken: TakenPage): Promise<void> => {
    if (reading.staged() === 0) first = taken.instants[0];
    await reading.stage(taken);
  };
  for (;;) {
    if (reading.signal.aborted) {
      await reading.flush(true); // the unit in hand is finished, then the run stops
      return false;
    }
    const before = offsetMs(range.live.offset);
    const outcome = await nextPage();
    const { taken } = outcome;
    const unit = { staged: reading.staged(), first: reading.staged() > 0 ? first : undefined };
    const cut = monthCut(taken, unit, reading.unitRows, latest);
    if (cut === undefined) await stage(taken);
    else {
      await stage(takenSlice(taken, 0, cut));
      await reading.flush(false, { offset: taken.instants[cut]!, seen: [] });
      await stage(takenSlice(taken, cut));
    }
    for (const instant of taken.instants)
      if (latest === undefined || instant > latest) latest = instant;
    if (outcome.stuckAt) await reading.burst(outcome.stuckAt, outcome.townless);
    reading.onProgress(
      outcome.taken.positions.length,
      Math.max(0, Math.round((offsetMs(range.live.offset) - before) / 1000)),
    );
    if (outcome.reachedEnd || outcome.exhausted) {
      await reading.flush(false);
      // Done for this run. A range is complete only when it has seen its end:
      // one whose events simply ran out goes on from its cursor next run.
      range.finished = true;
      return outcome.reachedEnd;
    }
    // A month that goes on past the unit's size by a quarter is cut where the page ends.
    if (reading.staged() >= reading.unitRows + Math.ceil(reading.unitRows / 4))
      await reading.flush(false);
  }
}

/**
 * A unit spans at most this many UTC days: DuckDB holds a writer for each
 * partition file of a unit while it lands (about 1.4 MB each), and a unit of a
 * sparse feed that spans a month is cut where the next begins.
 */
export const UNIT_DAYS = 31;

/** The UTC day of an instant (days since the epoch). */
function dayOf(instant: string): number {
  return Math.floor(offsetMs(instant) / DAY_MS);
}

/** The UTC month of an instant (ISO 8601): its year and month. */
function monthOf(instant: string): string {
  return new Date(offsetMs(instant)).toISOString().slice(0, 7);
}

/**
 * Where in a page the unit in hand ends, once it is due (it holds `unitRows`
 * events, or spans UNIT_DAYS days from its `first` instant): at the first
 * event of a new UTC month, so that one reader's units do not share a month's
 * partition (each would make a file there). Undefined when the page has no
 * such place: the unit goes on (until it is a quarter past its size). The
 * cut's instant must be later than every event before it (`latest`: the
 * latest instant the reader has staged) and not later than any after it, so
 * that a reader starting again there (with nothing of that instant seen) is
 * given exactly the events after the cut.
 */
export function monthCut(
  taken: TakenPage,
  unit: { staged: number; first: string | undefined },
  unitRows: number,
  latest: string | undefined,
): number | undefined {
  const { instants } = taken;
  const first = unit.first ?? instants[0];
  const firstDay = first === undefined ? undefined : dayOf(first);
  let before = latest;
  for (let n = 0; n < instants.length; n++) {
    const instant = instants[n]!;
    const day = dayOf(instant);
    const due =
      n >= unitRows - unit.staged || (firstDay !== undefined && day - firstDay >= UNIT_DAYS);
    if (
      due &&
      before !== undefined &&
      monthOf(before) < monthOf(instant) &&
      instants.slice(n).every((later) => later >= instant)
    )
      return n;
    if (before === undefined || instant > before) before = instant;
  }
  return undefined;
}
