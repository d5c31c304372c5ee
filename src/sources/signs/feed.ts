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

/**
 * What is taken from one response: the body as received (landed as it is,
 * DuckDB parses it again), the positions in it of the events taken and their
 * feed_index (position within their instant).
 */
export interface TakenPage {
  body: Buffer;
  positions: number[];
  indexes: number[];
  /** The instant of each event taken (offset format). */
  instants: string[];
}

/** The events taken from `from` to `to` (exclusive) of a page. */
export function takenSlice(taken: TakenPage, from: number, to?: number): TakenPage {
  return {
    body: taken.body,
    positions: taken.positions.slice(from, to),
    indexes: taken.indexes.slice(from, to),
    instants: taken.instants.slice(from, to),
  };
}

export interface PageOutcome {
  taken: TakenPage;
  /** Instant of the first event taken. */
  firstInstant: string | undefined;
  /** county.code of the events taken, to learn the town codes that exist. */
  towns: Set<string>;
  /** A page stuck at one instant holds an event without a town code (no read per town reaches such events). */
  townless: boolean;
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

function record(item: unknown): Record<string, unknown> {
  return (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
}

/**
 * Each event's instant, up to `end` (ms, exclusive); whether the end was
 * reached, and whether every event is at the cursor's offset.
 */
function instantsOf(
  page: readonly unknown[],
  cursor: Cursor,
  end: number | undefined,
): { instants: string[]; reachedEnd: boolean; allAtOffset: boolean } {
  const instants: string[] = [];
  let allAtOffset = true;
  let last: string | undefined;
  for (const item of page) {
    // A record without a usable timestamp keeps the place of the one before it
    // (it is landed and quarantined by the typing, never used as an offset).
    const stamped = toOffset(record(item)['publication_timestamp']);
    if (stamped !== cursor.offset) allAtOffset = false;
    const at = stamped ?? last ?? cursor.offset;
    if (end !== undefined && offsetMs(at) >= end)
      return { instants, reachedEnd: true, allAtOffset };
    instants.push(at);
    last = at;
  }
  return { instants, reachedEnd: false, allAtOffset };
}

/** The events of a page taken so far, the towns they name, and their hashes once computed. */
class PageTaker {
  readonly taken: TakenPage;
  readonly towns = new Set<string>();
  readonly #page: readonly unknown[];
  readonly #instants: readonly string[];
  readonly #hashes = new Map<number, string>();

  constructor(page: readonly unknown[], body: Buffer, instants: readonly string[]) {
    this.#page = page;
    this.#instants = instants;
    this.taken = { body, positions: [], indexes: [], instants: [] };
  }

  #take(position: number, index: number): void {
    this.taken.positions.push(position);
    this.taken.indexes.push(index);
    this.taken.instants.push(this.#instants[position]!);
    const town = townOf(record(this.#page[position]));
    if (town) this.towns.add(town);
  }

  #hashOf(position: number): string {
    let hash = this.#hashes.get(position);
    if (hash === undefined) {
      hash = contentHash(JSON.stringify(this.#page[position]));
      this.#hashes.set(position, hash);
    }
    return hash;
  }

  /** Takes the events of one instant, [start, stop), not in `seen` (by content), adding them to it. */
  takeUnseen(start: number, stop: number, seen: Set<string>): void {
    for (let at = start; at < stop; at++) {
      const hash = this.#hashOf(at);
      if (seen.has(hash)) continue;
      seen.add(hash);
      this.#take(at, at - start);
    }
  }

  /** Takes the events of an instant inside the page: identical events share id and type, only those are compared. */
  takeDistinct(start: number, stop: number): void {
    // Most instants hold one event: nothing to compare.
    if (stop - start === 1) {
      this.#take(start, 0);
      return;
    }
    const byKey = new Map<string, number[]>();
    for (let at = start; at < stop; at++) {
      const event = record(this.#page[at]);
      const key = `${String(event['id'])}\u0000${String(event['type'])}`;
      const same = byKey.get(key);
      if (same) {
        if (same.some((other) => this.#hashOf(other) === this.#hashOf(at))) continue;
        same.push(at);
      } else {
        byKey.set(key, [at]);
      }
      this.#take(at, at - start);
    }
  }
}

/**
 * Takes what is new in one page requested at cursor.offset with `limit`.
 * `end` (ms, exclusive) stops a range reader at the next range's start.
 *
 * Events are compared by content only where a repeat is possible: at the
 * offset instant (the repeats of the previous chunk), at the last instant (its
 * hashes become the next cursor), and between events of one instant that share
 * id and type. An instant strictly inside the page needs no hashing otherwise.
 */
export function processPage(
  page: readonly unknown[],
  body: Buffer,
  cursor: Cursor,
  limit: number,
  end?: number,
): PageOutcome {
  const { instants, reachedEnd, allAtOffset } = instantsOf(page, cursor, end);
  const taker = new PageTaker(page, body, instants);
  let next: Cursor = cursor;
  for (let start = 0; start < instants.length;) {
    const instant = instants[start]!;
    let stop = start + 1;
    while (stop < instants.length && instants[stop] === instant) stop++;
    const continued = start === 0 && instant === cursor.offset;
    const isLast = stop === instants.length;
    if (continued || isLast) {
      const seen = new Set(continued ? cursor.seen : []);
      taker.takeUnseen(start, stop, seen);
      if (isLast) next = { offset: instant, seen: [...seen] };
    } else {
      taker.takeDistinct(start, stop);
    }
    start = stop;
  }
  const { taken, towns } = taker;
  const full = page.length >= limit;
  // A full page of nothing but the offset instant: offset paging cannot get past it.
  const oneInstant = full && allAtOffset;
  return {
    taken,
    firstInstant: taken.positions.length > 0 ? instants[taken.positions[0]!] : undefined,
    towns,
    // Only a page stuck at one instant needs it (that instant is then read per town).
    townless: oneInstant && page.some((item) => !townOf(record(item))),
    next,
    reachedEnd,
    exhausted: !full,
    stuckAt: oneInstant && !reachedEnd ? cursor.offset : undefined,
  };
}
