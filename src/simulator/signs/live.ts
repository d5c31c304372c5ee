/**
 * Today's traffic-sign API (v4 and v5): the current state of every sign as a
 * GeoJSON FeatureCollection (v4 also as CSV), refreshed daily, from the same
 * world as the v1 feed. A sign keeps its UUID across versions and days; its
 * properties come from its latest event, cleaned up as the newer API serves
 * them (numbers as numbers, dates as yyyy-MM-dd) and absent rather than null.
 * A sign whose latest event is a deletion is served as REMOVED for two weeks,
 * then left out; a sign created again is served under a new UUID. So each day
 * adds signs and removes some, besides changing others.
 */
import { choose, hash, unit } from '../../util/hash.js';
import { DAY_MS, formatIsoDate } from '../../util/time.js';
import type { World } from '../world.js';
import { OPENING_HOURS, conditions, present } from './live-conditions.js';

export type LiveApi = 'v4' | 'v5';
export const LIVE_STATUSES = ['PLANNED', 'PLACED', 'REMOVED'] as const;
export type LiveStatus = (typeof LIVE_STATUSES)[number];

export interface LiveFilters {
  countyCode?: string | undefined;
  rvvCodes?: readonly string[];
  roadSectionIds?: readonly number[];
  status?: LiveStatus | undefined;
}

export interface LiveFeature {
  type: 'Feature';
  id: string;
  geometry: { type: 'Point'; coordinates: [number, number] };
  properties: Record<string, unknown>;
}

/** The moment of the current state served at `now`: the day's refresh, at 00:00 UTC. */
export function liveMoment(now: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS;
}

/**
 * The sign's UUID (version 4 layout), the same in v4 and v5 and from day to
 * day; a sign created again after a deletion is another sign, with a UUID of
 * its own (`generation`, how many times it was created again).
 */
function signUuid(seed: number, sign: number, generation: number): string {
  const hex = [1, 2, 3, 4]
    .map((k) =>
      hash(seed, sign, 0x55 + generation * 0x100, k)
        .toString(16)
        .padStart(8, '0'),
    )
    .join('');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A number of a v1 payload (sometimes a string there). */
function num(value: unknown): number | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** A date of a v1 payload (dd/MM/yyyy or ISO; "" or null for none) as yyyy-MM-dd. */
function day(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const dutch = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(value);
  return dutch ? `${dutch[3]}-${dutch[2]}-${dutch[1]}` : value.slice(0, 10);
}

const ZONE_CODES = ['BEGIN', 'END', 'REPEAT', 'UNKNOWN'] as const;
/** What a sign's properties are made of, as of the moment asked for. */
interface SignFacts {
  seed: number;
  sign: number;
  /** A hash of the sign and k: the sign's own choices. */
  h: (k: number) => number;
  payload: Record<string, unknown>;
  location: {
    wgs84: { latitude: unknown; longitude: unknown };
    placement: string | null;
    side: string | null;
    road: { name: string; type: string; number: unknown; wvk_id: unknown };
    county: { name: string; code: string; townname: string };
  };
  details: Record<string, unknown>;
  texts: string[];
  externalId: string;
  firstSeen: string | undefined;
  lastEventTime: number;
  removed: boolean;
}

/** The properties both versions have (by their v5 names). */
function commonProperties(f: SignFacts): Record<string, unknown> & { roadSectionId: unknown } {
  const { h, seed, sign, location } = f;
  return {
    validatedOn: day(f.payload['validated_on']),
    rvvCode: f.payload['rvv_code'],
    blackCode: h(1) % 6 === 0 ? String((h(2) % 40) / 10 + 2) : undefined,
    zoneCode: h(3) % 8 === 0 ? choose(ZONE_CODES, seed, sign, 4) : undefined,
    bearing: h(5) % 360,
    fraction: Math.round(unit(seed, sign, 6) * 1000) / 1000,
    drivingDirection: h(7) % 3 === 0 ? undefined : h(7) % 3 === 1 ? 'FORTH' : 'BACK',
    roadSectionId: num(location.road.wvk_id),
    nwbVersion: formatIsoDate(Date.UTC(2024, 0, 1) + (h(8) % 12) * 30 * DAY_MS),
    countyName: location.county.name,
    countyCode: location.county.code,
    removedOn: f.removed ? formatIsoDate(f.lastEventTime) : undefined,
    placedOn: f.firstSeen,
  };
}

function v4Properties(f: SignFacts): Record<string, unknown> {
  const { h, location, details } = f;
  return {
    externalId: f.externalId,
    validated: f.payload['validated'],
    ...commonProperties(f),
    status: f.removed ? 'REMOVED' : 'PLACED',
    textSigns: f.texts.map((text, i) =>
      present({
        type: `OB${String(100 + ((h(9) + i) % 20)).padStart(3, '0')}`,
        text,
        openingHours: OPENING_HOURS[text],
      }),
    ),
    placement: location.placement ?? undefined,
    side: location.side ?? undefined,
    nenTurningDirection: h(10) % 5 === 0 ? 'R' : undefined,
    roadName: location.road.name,
    roadType: location.road.type,
    roadNumber: num(location.road.number)?.toString(),
    townName: location.county.townname,
    bgtCode: h(11) % 4 === 0 ? `G${String(h(12) % 100000).padStart(5, '0')}` : undefined,
    imageUrl: details['image'],
    firstSeenOn: f.firstSeen,
    lastSeenOn: day(details['last_seen']),
    trafficOrderUrl:
      h(13) % 7 === 0
        ? `https://zoek.officielebekendmakingen.nl/gmb-2024-${h(14) % 99999}.html`
        : undefined,
  };
}

function v5Properties(f: SignFacts): Record<string, unknown> {
  const { h, location } = f;
  const common = commonProperties(f);
  return {
    externalReferences: [{ system: 'NDW-V1', id: f.externalId }],
    ...common,
    supplementarySigns: f.texts.map((text, i) =>
      present({
        signCode: `OB${String(100 + ((h(9) + i) % 20)).padStart(3, '0')}`,
        text,
        openingHours: OPENING_HOURS[text],
        externalReferences: [],
        index: i,
      }),
    ),
    placement: location.placement === 'B' ? 'ABOVE' : location.placement ? 'ALONG' : undefined,
    privateProperty: h(15) % 50 === 0,
    missingRoadSection: common.roadSectionId === undefined,
    conditions: conditions(f),
    comments: h(17) % 30 === 0 ? ['Bord scheef; controleren'] : undefined,
    registeredOn: f.firstSeen,
    lastModifiedOn: formatIsoDate(f.lastEventTime),
    trafficOrderId: h(13) % 7 === 0 ? `gmb-2024-${h(14) % 99999}` : undefined,
    ownerType: 'MUNICIPALITY',
    ownerCode: location.county.code,
  };
}

/**
 * How long a removed sign is still served (as REMOVED, with its removedOn):
 * then it is left out of the current state, as NDW clears its removed signs.
 */
export const REMOVED_SERVED_MS = 14 * DAY_MS;

/**
 * A sign's feature as of `at`, or undefined when the sign does not exist yet
 * or was removed more than REMOVED_SERVED_MS before.
 */
function liveFeature(
  world: World,
  sign: number,
  at: number,
  api: LiveApi,
): LiveFeature | undefined {
  const latest = world.feed.latestEvent(sign, at);
  if (!latest) return undefined;
  if (latest.type === 'deleted' && at - latest.time > REMOVED_SERVED_MS) return undefined;
  const seed = world.options.seed;
  const payload = world.payloads.build(
    latest,
    world.feed.town(sign),
    false,
    world.feed.hasHostileText(sign),
  );
  const details = payload['details'] as Record<string, unknown>;
  const facts: SignFacts = {
    seed,
    sign,
    h: (k) => hash(seed, sign, 0x77, k),
    payload,
    location: payload['location'] as SignFacts['location'],
    details,
    texts: Array.isArray(payload['text_signs'])
      ? (payload['text_signs'] as unknown[]).filter((t): t is string => typeof t === 'string')
      : [],
    externalId: String(world.payloads.signId(sign)),
    firstSeen: day(details['first_seen']),
    lastEventTime: latest.time,
    removed: latest.type === 'deleted',
  };
  const { wgs84 } = facts.location;
  return {
    type: 'Feature',
    id: signUuid(seed, sign, world.feed.recreations(sign, at)),
    geometry: { type: 'Point', coordinates: [num(wgs84.longitude)!, num(wgs84.latitude)!] },
    properties: present(api === 'v4' ? v4Properties(facts) : v5Properties(facts)),
  };
}

/** Ground truth and answer alike: the current state as of the day of `now`, filtered, by sign. */
export function* liveState(
  world: World,
  now: number,
  api: LiveApi,
  filters: LiveFilters = {},
): Generator<LiveFeature> {
  const at = liveMoment(now);
  const rvv =
    filters.rvvCodes && filters.rvvCodes.length > 0 ? new Set(filters.rvvCodes) : undefined;
  const sections =
    filters.roadSectionIds && filters.roadSectionIds.length > 0
      ? new Set(filters.roadSectionIds)
      : undefined;
  const town = world.townIndex(filters.countyCode);
  if (town === -2) return;
  for (let sign = 0; sign < world.feed.signs; sign++) {
    if (town >= 0 && world.feed.town(sign) !== town) continue;
    const feature = liveFeature(world, sign, at, api);
    if (!feature) continue;
    const p = feature.properties;
    if (rvv && !rvv.has(String(p['rvvCode']))) continue;
    if (sections && !sections.has(Number(p['roadSectionId']))) continue;
    if (filters.status) {
      const status = p['removedOn'] === undefined ? 'PLACED' : 'REMOVED';
      if (status !== filters.status) continue;
    }
    yield feature;
  }
}

/** The columns of the v4 CSV download, as NDW's bulk file has them. */
