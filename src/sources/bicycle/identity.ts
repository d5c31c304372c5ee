/**
 * What identifies a bicycle service's data: the ids of its measurement
 * locations. A service asked again must list most of the locations it listed
 * before (a month adds or ends a few; another service or simulator shares
 * few). A large catalog is compared on a fixed part of its ids (those whose
 * md5 starts with 0-3), the same part every time.
 */
import { createHash } from 'node:crypto';
import { UpstreamError } from '../../errors.js';
import { stillHeld } from '../../util/sets.js';
import type { BicycleClient } from './client.js';

/** The least share of the location ids that the same service still lists. */
const SAME_LOCATIONS = 0.5;
/** Catalogs up to this size are compared whole. */
const WHOLE = 400;

export type CatalogIdentity = {
  url: string;
  /** The catalog's location ids (a fixed part of them for a large catalog), sorted. */
  locations: string[];
};

export function catalogIdentity(url: string, ids: Iterable<string>): CatalogIdentity {
  const all = [...new Set(ids)].sort();
  const locations =
    all.length <= WHOLE
      ? all
      : all.filter((id) => '0123'.includes(createHash('md5').update(id).digest('hex')[0]!));
  return { url, locations };
}

/** The location ids of a catalog answer (4.4): each feature's properties.id. */
function catalogIds(value: unknown): string[] {
  const features = (value as { features?: { properties?: { id?: unknown } }[] }).features ?? [];
  return features.map((f) => f.properties?.id).filter((id): id is string => typeof id === 'string');
}

/** Why the catalog the client reads now is not that of `stored`; undefined when it is. */
export async function catalogDiffers(
  client: BicycleClient,
  url: string,
  stored: CatalogIdentity,
  signal: AbortSignal,
): Promise<string | undefined> {
  const answer = await client.locations(signal);
  const now = catalogIdentity(url, catalogIds(answer.value));
  // An empty catalog says nothing of whose data it is: upstream trouble.
  if (now.locations.length === 0 && stored.locations.length > 0)
    throw new UpstreamError('The location catalog is empty', {
      method: 'GET',
      url,
      status: 200,
      body: answer.body.toString('utf8'),
    });
  const share = stillHeld(stored.locations, now.locations);
  if (share >= SAME_LOCATIONS) return undefined;
  return `the catalog of ${url} holds ${Math.round(share * 100)}% of the location ids of the one read before (${stored.url})`;
}
