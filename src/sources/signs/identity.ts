/**
 * What identifies a traffic-sign service's data, and the cheap questions that
 * tell whether a service still serves it (see UpstreamIdentityHooks):
 *
 * - v1 (event feed, current-state download): the feed's first event, which a
 *   service never changes; one request of one event.
 * - v4/v5 (current state): the signs of the smallest municipalities of the last
 *   snapshot, a sample of a few hundred. Their state now, a few small downloads,
 *   must still hold most of them (a day removes a few signs; another service or
 *   another simulator serves almost none; anything between is trouble).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../../duckdb/database.js';
import type { HttpClient } from '../../http/client.js';
import { RetryableError } from '../../http/answers.js';
import { EPOCH } from './ranges.js';
import { SignsClient, downloadLive, liveUrl, type LiveQuery } from './client.js';

export type FeedIdentity = {
  url: string;
  /** The feed's first event (null: the feed was empty). */
  first_event: { id: string; publication_timestamp: string } | null;
  /**
   * The history the folder holds where it goes on: the signs of the events
   * landed at the latest instant that has few, read with the same town filter.
   * A service that shares the feed's start but grew otherwise serves others there.
   */
  history?: { instant: string; town_code: string | null; ids: string[] };
};

/** Events an instant of the history may hold: all of them fit one page of the feed (duplicates too). */
const HISTORY_EVENTS = 40;

/** The history the folder holds at its latest instant of few events (undefined: none landed). */
export async function landedFeedHistory(
  db: Database,
  townCode: string | undefined,
): Promise<FeedIdentity['history']> {
  const [row] = await db.all(
    `SELECT strftime(publication_timestamp AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS instant,
            list(DISTINCT id::VARCHAR ORDER BY id::VARCHAR) AS ids
     FROM signs_events GROUP BY publication_timestamp
     HAVING count(*) <= ${HISTORY_EVENTS}
     ORDER BY publication_timestamp DESC LIMIT 1`,
  );
  if (!row) return undefined;
  return {
    instant: String(row['instant']),
    town_code: townCode ?? null,
    ids: row['ids'] as string[],
  };
}

type History = NonNullable<FeedIdentity['history']>;

/** The signs whose events the feed at `url` serves at the history's instant. */
async function servedAt(
  http: HttpClient,
  url: string,
  history: History,
  signal: AbortSignal,
): Promise<Set<string>> {
  const { events } = await new SignsClient(http, url).events({
    offset: history.instant,
    limit: 100,
    townCode: history.town_code ?? undefined,
    signal,
  });
  return new Set(
    events
      .filter((e) => Date.parse(String(e['publication_timestamp'])) === Date.parse(history.instant))
      .map((e) => String(e['id'])),
  );
}

/** The history at the same instant as the feed at `url` serves it (for a service the user accepted). */
export async function servedFeedHistory(
  http: HttpClient,
  url: string,
  history: History,
  signal: AbortSignal,
): Promise<History> {
  const ids = [...(await servedAt(http, url, history, signal))].sort();
  return { ...history, ids };
}

/** Why the feed at `url` does not serve the history the folder holds; undefined when it does. */
export async function feedHistoryDiffers(
  http: HttpClient,
  url: string,
  stored: FeedIdentity,
  signal: AbortSignal,
): Promise<string | undefined> {
  const history = stored.history;
  if (!history) return undefined;
  const at = await servedAt(http, url, history, signal);
  const missing = history.ids.filter((id) => !at.has(id));
  if (missing.length === 0) return undefined;
  return `the feed at ${url} does not serve the history the folder holds: of the ${history.ids.length} sign(s) whose events were landed at ${history.instant} (read from ${stored.url}), it serves ${history.ids.length - missing.length} there`;
}

/** Asks the v1 feed for its first event. */
export async function feedIdentity(
  http: HttpClient,
  url: string,
  signal: AbortSignal,
): Promise<FeedIdentity> {
  const { events } = await new SignsClient(http, url).events({ offset: EPOCH, limit: 1, signal });
  const first = events[0];
  return {
    url,
    first_event: first
      ? { id: String(first['id']), publication_timestamp: String(first['publication_timestamp']) }
      : null,
  };
}

function describeEvent(event: FeedIdentity['first_event']): string {
  return event ? `sign ${event.id} at ${event.publication_timestamp}` : 'no event';
}

/** Why the feed at `now.url` is not the one of `stored`; undefined when it is. */
export function feedDiffers(stored: FeedIdentity, now: FeedIdentity): string | undefined {
  const [a, b] = [stored.first_event, now.first_event];
  if (a?.id === b?.id && a?.publication_timestamp === b?.publication_timestamp) return undefined;
  return `the feed at ${now.url} starts with ${describeEvent(b)}; the one read before (${stored.url}) started with ${describeEvent(a)}`;
}

export type LiveIdentity = {
  url: string;
  /** The request the snapshots were taken with (version and filters). */
  request: string;
  /**
   * A sample of the last snapshot: the signs of its smallest municipalities,
   * taken until there are SAMPLE_SIGNS (each municipality is one small request).
   */
  sample?: { county: string; signs: string[] }[];
};

/** Signs a sample should hold to decide; fewer (a small selection) decide nothing. */
const SAMPLE_SIGNS = 200;
const DECIDING_SIGNS = 20;
/** Municipalities asked at most. */
const SAMPLE_COUNTIES = 5;

/** The identity of the last snapshot in the folder, for the request it was taken with. */
export async function landedLiveIdentity(
  db: Database,
  url: string,
  request: string,
): Promise<LiveIdentity> {
  // The smallest municipalities are chosen by their counts, and only their signs listed:
  // lists of every municipality's signs held a national snapshot's ids (600 MB).
  const rows = await db.all(
    `WITH counties AS (
       SELECT county_code, count(*) AS n
       FROM signs_live WHERE county_code IS NOT NULL GROUP BY county_code),
     ranked AS (
       SELECT *, sum(n) OVER (ORDER BY n, county_code ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
       FROM counties),
     chosen AS (
       SELECT county_code, n FROM ranked
       WHERE coalesce(before, 0) < ${SAMPLE_SIGNS}
       ORDER BY n, county_code LIMIT ${SAMPLE_COUNTIES})
     SELECT county_code, list(sign_id::VARCHAR ORDER BY sign_id) AS signs
     FROM signs_live JOIN chosen USING (county_code)
     GROUP BY county_code, n
     ORDER BY n, county_code`,
  );
  return {
    url,
    request,
    sample: rows.map((r) => ({ county: String(r['county_code']), signs: r['signs'] as string[] })),
  };
}

/** The sample of an identity. */
function sampleOf(stored: LiveIdentity): { county: string; signs: string[] }[] {
  return stored.sample ?? [];
}

/** The features of one municipality the service serves now, for the same request: their ids, and whether each is of that municipality. */
async function servedNow(
  http: HttpClient,
  query: Omit<LiveQuery, 'format' | 'countyCode'>,
  county: string,
  held: number,
): Promise<{ ids: Set<string>; elsewhere: number }> {
  const probe = { ...query, format: 'geojson' as const, countyCode: county };
  const folder = await mkdtemp(join(tmpdir(), 'road-etl-probe-'));
  try {
    const file = join(folder, 'county.geojson');
    await downloadLive(http, probe, file);
    const text = await readFile(file, 'utf8');
    let features: unknown;
    try {
      features = (JSON.parse(text) as { features?: unknown }).features;
    } catch (error) {
      throw new RetryableError(
        `the answer is not JSON (${(error as Error).message})`,
        200,
        text,
        undefined,
      );
    }
    // An answer that is no FeatureCollection, or an empty one, says nothing of whose data it is.
    if (!Array.isArray(features))
      throw new RetryableError('the answer is not a FeatureCollection', 200, text, undefined);
    if (features.length === 0)
      throw new RetryableError(
        `the answer holds no sign of ${county}, which had ${held} in the last snapshot`,
        200,
        text,
        undefined,
      );
    const served = features as { id?: unknown; properties?: { countyCode?: unknown } | null }[];
    return {
      ids: new Set(served.map((f) => String(f.id))),
      elsewhere: served.filter((f) => f.id == null || f.properties?.countyCode !== county).length,
    };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/**
 * Below this share of the sample's signs still served, a service that answers
 * normally serves another upstream's data: another service shares almost none.
 */
const ANOTHER_SERVICE = 0.05;
/**
 * From this share on, the service serves the folder's signs: a day removes
 * well under 1% (DAILY_FLOOR), and a few weeks of missed nights a few percent.
 */
const SAME_SIGNS = 0.8;

/**
 * Why the service now configured does not serve the snapshots of `stored`:
 * other filters asked, or the signs of the sample no longer served. Decided by
 * the share of the sample's signs the service still serves, over a sample
 * large enough to decide (a smaller one decides nothing); growth never counts
 * against it:
 * - from SAME_SIGNS on, the same service;
 * - under ANOTHER_SERVICE, where the service answers normally (each feature of
 *   the municipality asked, and at least half as many as the sample held),
 *   another upstream: the reason is returned;
 * - anything between, or a service that does not answer normally, is upstream
 *   trouble: asked again, then thrown (exit 1), never taken for another
 *   upstream. `letThrough` (max_gone 1: a large change the user says is real)
 *   takes the shares between for the same service.
 */
export async function liveDiffers(
  http: HttpClient,
  stored: LiveIdentity,
  query: Omit<LiveQuery, 'format' | 'countyCode'> & { request: string; letThrough: boolean },
): Promise<string | undefined> {
  if (stored.request !== query.request)
    return `the snapshots in the folder were taken with ${stored.request}, the step now asks for ${query.request}: their day-to-day changes would compare different selections`;
  const sample = sampleOf(stored);
  const held = sample.reduce((n, c) => n + c.signs.length, 0);
  if (held < DECIDING_SIGNS) return undefined;
  const counties = sample.map((c) => c.county).join(', ');
  const first = liveUrl({ ...query, format: 'geojson', countyCode: sample[0]!.county });
  return http.retryAnswer({ method: 'GET', url: first, signal: query.signal }, async () => {
    let kept = 0;
    let served = 0;
    let elsewhere = 0;
    for (const { county, signs } of sample) {
      const now = await servedNow(http, query, county, signs.length);
      kept += signs.filter((id) => now.ids.has(id)).length;
      served += now.ids.size;
      elsewhere += now.elsewhere;
    }
    const share = kept / held;
    const pct = `${Math.round(share * 100)}%`;
    const found = `of the ${held} signs of ${counties} in the last snapshot (read from ${stored.url}), ${query.base} serves ${kept} (${pct}) now`;
    if (share >= SAME_SIGNS || (query.letThrough && share >= ANOTHER_SERVICE)) return undefined;
    const normal = elsewhere === 0 && served >= held / 2;
    if (share < ANOTHER_SERVICE && normal) return found;
    const why = normal
      ? 'more than another service would, fewer than the same one does: upstream trouble'
      : `in ${served} feature(s)${elsewhere > 0 ? `, ${elsewhere} of them without an id or of another municipality` : ''}: not a normal answer`;
    throw new RetryableError(`${found}, ${why}`, 200, '', undefined);
  });
}
