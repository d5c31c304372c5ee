/**
 * Reading the event feed exactly once. The offset is inclusive and instants
 * repeat, so each chunk starts with the events at the offset instant that were
 * already taken: those repeats (and only those) are dropped, recognised by
 * their content. The cursor that makes this work is small: the offset instant
 * and the content hashes taken at it. Each event gets its position within its
 * instant (feed_index), so order at equal instants stays known.
 */
import { createHash } from 'node:crypto';

export interface Cursor {
  /** The next request's offset (`yyyy-MM-ddTHH:mm:ss.SSSZ`). */
  offset: string;
  /** Content hashes of the events at `offset` already taken. */
  seen: string[];
}

export interface TakenEvent {
  /** publication_timestamp as received. */
  instant: string;
  /** Position of the event within its instant, in feed order. */
  index: number;
  hash: string;
  /** The event re-serialised (content identity and what is landed). */
  text: string;
  /** county.code, to learn the town codes that exist. */
  town: string | undefined;
}

export interface PageOutcome {
  taken: TakenEvent[];
  next: Cursor;
  /** An event at or after the range's end was seen: the range is complete. */
  reachedEnd: boolean;
  /** The page was not full: there is nothing more to read now (the feed may grow later). */
  exhausted: boolean;
  /** Set when the page is full of one instant that offset paging cannot get past. */
  stuckAt: string | undefined;
}

export function contentHash(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

const OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An instant in the offset format; undefined when the text is no timestamp. */
export function toOffset(instant: unknown): string | undefined {
  if (typeof instant !== 'string') return undefined;
  if (OFFSET.test(instant)) return instant;
  const ms = Date.parse(instant);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export function offsetMs(offset: string): number {
  return Date.parse(offset);
}

/** The first offset after an instant (instants have millisecond precision). */
export function afterInstant(offset: string): string {
  return new Date(offsetMs(offset) + 1).toISOString();
}

function townOf(event: Record<string, unknown>): string | undefined {
  const location = event['location'];
  const county =
    location && typeof location === 'object'
      ? (location as Record<string, unknown>)['county']
      : undefined;
  const code =
    county && typeof county === 'object' ? (county as Record<string, unknown>)['code'] : undefined;
  return typeof code === 'string' && code !== '' ? code : undefined;
}

/**
 * Takes what is new in one page requested at cursor.offset with `limit`.
 * `end` (ms, exclusive) stops a range reader at the next range's start.
 */
export function processPage(
  page: readonly unknown[],
  cursor: Cursor,
  limit: number,
  end?: number,
): PageOutcome {
  const taken: TakenEvent[] = [];
  let instant = cursor.offset;
  let seen = new Set(cursor.seen);
  let index = 0;
  let reachedEnd = false;
  let allAtOffset = true;
  let last: string | undefined;
  for (const item of page) {
    const record = (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
    // A record without a usable timestamp keeps the place of the one before it
    // (it is landed and quarantined by the typing, never used as an offset).
    const stamped = toOffset(record['publication_timestamp']);
    if (stamped !== cursor.offset) allAtOffset = false;
    const at = stamped ?? last ?? instant;
    if (end !== undefined && offsetMs(at) >= end) {
      reachedEnd = true;
      break;
    }
    if (at !== instant) {
      instant = at;
      seen = new Set();
      index = 0;
    }
    last = at;
    const text = JSON.stringify(item);
    const hash = contentHash(text);
    const position = index++;
    if (seen.has(hash)) continue;
    seen.add(hash);
    taken.push({ instant: at, index: position, hash, text, town: townOf(record) });
  }
  const full = page.length >= limit;
  // A full page of nothing but the offset instant: offset paging cannot get past it.
  const oneInstant = full && allAtOffset;
  return {
    taken,
    next: { offset: instant, seen: [...seen] },
    reachedEnd,
    exhausted: !full,
    stuckAt: oneInstant && !reachedEnd ? cursor.offset : undefined,
  };
}
