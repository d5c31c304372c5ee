/**
 * An instant with more events than a chunk holds: offset paging cannot get
 * past it, so it is read per town code: every code seen so far, every code of
 * the datasets, and every municipality code the CBS can have issued
 * (TOWN_CODE_SWEEP), so that towns never seen before are read too. Events that
 * even that cannot reach (more than a chunk of one town, or events without a
 * town code) are gaps: the caller stops the run or records them.
 */
import pLimit from 'p-limit';
import type { SignsClient } from './client.js';
import { contentHash, toOffset, type TakenPage } from './feed.js';

/**
 * Every municipality code the CBS can have issued so far (GM0000 .. GM1999): an
 * instant read per town reads all of them, so that towns never seen are read too.
 */
const TOWN_CODE_SWEEP: readonly string[] = Array.from(
  { length: 2000 },
  (_, i) => `GM${String(i).padStart(4, '0')}`,
);

/** The towns a burst is read for: the one of the step, else those known and the sweep, in order. */
export function burstTowns(only: string | undefined, known: Iterable<string>): string[] {
  return only ? [only] : [...new Set([...known, ...TOWN_CODE_SWEEP])].sort();
}

export interface BurstRead {
  client: SignsClient;
  instant: string;
  towns: readonly string[];
  limit: number;
  /** Content hashes of the events at the instant already taken (the first chunk's). */
  seen: readonly string[];
  /** Requests in flight at once. */
  concurrency: number;
  signal: AbortSignal;
  /** Takes the new events of one town's page (their feed_index follows the town order). */
  take(page: TakenPage): Promise<void>;
  /** A town whose events at the instant fill a whole chunk: those past it cannot be read. */
  gap(town: string, reason: string): void;
  /** Told of each page read. */
  onPage(): void;
}

/** Reads the instant per town; resolves to the new events taken and all the instant holds. */
export async function readBurst(read: BurstRead): Promise<{ found: number; events: number }> {
  const { client, instant, limit, signal } = read;
  const seen = new Set(read.seen);
  let index = limit;
  let found = 0;
  // Pages are fetched a few at a time and taken in town order (the feed index follows it).
  const fetch = pLimit(read.concurrency);
  const pages = read.towns.map((town) =>
    fetch(() => client.events({ offset: instant, limit, townCode: town, signal })),
  );
  for (const page of pages) page.catch(() => undefined); // awaited in order below
  for (const town of read.towns) {
    // Taken off the queue: a page is not held once it has been read.
    const { events: page, body } = await pages.shift()!;
    read.onPage();
    const taken: TakenPage = { body, positions: [], indexes: [], instants: [] };
    let atInstant = 0;
    for (const [position, event] of page.entries()) {
      if (toOffset(event['publication_timestamp']) !== instant) continue;
      atInstant++;
      const hash = contentHash(JSON.stringify(event));
      if (seen.has(hash)) continue;
      seen.add(hash);
      taken.positions.push(position);
      taken.indexes.push(index++);
      taken.instants.push(instant);
    }
    await read.take(taken);
    found += taken.positions.length;
    if (page.length >= limit && atInstant === page.length)
      read.gap(
        town,
        `more than ${limit} events of town ${town} share the instant ${instant}; the feed cannot be paged past them`,
      );
  }
  return { found, events: seen.size };
}
