/**
 * What identifies a traffic-sign service's data, and the cheap questions that
 * tell whether a service still serves it (see UpstreamIdentityHooks):
 *
 * - v1 (event feed, current-state download): the feed's first event, which a
 *   service never changes; one request of one event.
 * - v4/v5 (current state): the signs of the smallest municipality of the last
 *   snapshot. Its state now, a small download, must share most of them (a day
 *   changes a few signs; another service or another simulator shares almost none).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../../duckdb/database.js';
import type { HttpClient } from '../../http/client.js';
import { jaccard } from '../../util/sets.js';
import { EPOCH } from './ranges.js';
import { SignsClient, downloadLive, type LiveQuery } from './client.js';

/** The least share of a municipality's signs that the same service still serves a day later. */
const SAME_SIGNS = 0.5;

export type FeedIdentity = {
  url: string;
  /** The feed's first event (null: the feed was empty). */
  first_event: { id: string; publication_timestamp: string } | null;
};

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
  /** The smallest municipality of the last snapshot, and its signs then. */
  county: string | null;
  signs: string[];
};

/** The identity of the last snapshot in the folder, for the request it was taken with. */
export async function landedLiveIdentity(
  db: Database,
  url: string,
  request: string,
): Promise<LiveIdentity> {
  const [smallest] = await db.all(
    `SELECT county_code, list(sign_id::VARCHAR ORDER BY sign_id) AS signs
     FROM signs_live WHERE county_code IS NOT NULL
     GROUP BY county_code ORDER BY count(*), county_code LIMIT 1`,
  );
  return {
    url,
    request,
    county: smallest ? String(smallest['county_code']) : null,
    signs: smallest ? (smallest['signs'] as string[]) : [],
  };
}

/**
 * Why the service now configured does not serve the snapshots of `stored`:
 * other filters asked, or the municipality's signs no longer the same.
 */
export async function liveDiffers(
  http: HttpClient,
  stored: LiveIdentity,
  query: Omit<LiveQuery, 'format' | 'countyCode'> & { request: string },
): Promise<string | undefined> {
  if (stored.request !== query.request)
    return `the snapshots in the folder were taken with ${stored.request}, the step now asks for ${query.request}: their day-to-day changes would compare different selections`;
  if (stored.county === null) return undefined;
  const folder = await mkdtemp(join(tmpdir(), 'road-etl-probe-'));
  try {
    const file = join(folder, 'county.geojson');
    await downloadLive(http, { ...query, format: 'geojson', countyCode: stored.county }, file);
    const features = (JSON.parse(await readFile(file, 'utf8')) as { features?: unknown }).features;
    // An answer that is no FeatureCollection says nothing of whose data it is.
    if (!Array.isArray(features)) throw new Error(`${query.base} answered no FeatureCollection`);
    const now = (features as { id?: unknown }[]).map((f) => String(f.id));
    const share = jaccard(stored.signs, now);
    if (share >= SAME_SIGNS) return undefined;
    return `of the ${stored.signs.length} signs of ${stored.county} in the last snapshot (read from ${stored.url}), ${query.base} serves ${Math.round(share * 100)}% now (${now.length} signs)`;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
