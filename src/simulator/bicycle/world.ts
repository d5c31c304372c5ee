/**
 * Bicycle counting locations and their hourly measurements, as pure functions of
 * the seed. Ids look like the real ones (GAL02_01450) and share prefixes; some
 * locations are periodic and have ended; measurements have outages and gaps,
 * and counters fail as real ones do (counts.ts).
 */
import { choose, hash, unit } from '../../util/hash.js';
import { formatSecondTimestamp, DAY_MS, HOUR_MS } from '../../util/time.js';
import { Counters, hoursOfLocalDay, localDayOf, type FaultKind } from './counts.js';
import type { BicycleOptions } from '../options.js';
import { misEncode } from '../places.js';

interface Region {
  prefix: string;
  authority: string;
  latitude: number;
  longitude: number;
}

const REGIONS: readonly Region[] = [
  { prefix: 'GAL02', authority: 'Gemeente Amsterdam', latitude: 52.37, longitude: 4.9 },
  { prefix: 'GAL05', authority: 'Gemeente Amstelveen', latitude: 52.3, longitude: 4.86 },
  { prefix: 'UTR01', authority: 'Gemeente Utrecht', latitude: 52.09, longitude: 5.12 },
  { prefix: 'UTR03', authority: 'Provincie Utrecht', latitude: 52.05, longitude: 5.3 },
  { prefix: 'RTD01', authority: 'Gemeente Rotterdam', latitude: 51.92, longitude: 4.48 },
  { prefix: 'ZHO04', authority: 'Provincie Zuid-Holland', latitude: 52.03, longitude: 4.5 },
  { prefix: 'NBR11', authority: 'Provincie Noord-Brabant', latitude: 51.6, longitude: 5.2 },
  { prefix: 'GLD02', authority: 'Provincie Gelderland', latitude: 52.0, longitude: 5.9 },
  { prefix: 'GRN01', authority: 'Gemeente Groningen', latitude: 53.22, longitude: 6.57 },
  { prefix: 'FRL07', authority: 'Provincie Fryslân', latitude: 53.1, longitude: 5.8 },
];

const CONTRACTORS = ['Eco-Counter', 'Nedap Mobility', 'Sensys Gatso', 'Vialis', 'Dynniq'] as const;
const LICENSES = ['CC0', 'cc0', 'CC-BY-4.0', 'cc-by-4.0', 'Restricted', 'restricted'] as const;
const PLACES = [
  'Fietspad Amsteldijk',
  'Rijnkade',
  'Fietsstraat Vondelpark',
  'Brug over de Vecht',
  'Maasboulevard',
  'Fietssnelweg F35',
  'Coöperatiepad',
  'Hoofdweg',
  'Singel',
  'Dijk bij Ålsmeer',
] as const;

/** The four measurement categories and their subcategories (names are the simulator's own). */
export const MEASUREMENT_CATEGORIES = {
  richting: ['heen', 'terug'],
  voertuigcategorie: ['fiets', 'e-fiets', 'bakfiets', 'snorfiets'],
  snelheidsklasse: ['0-15 km/h', '15-25 km/h', '25-35 km/h', '>35 km/h'],
  lengteklasse: ['kort', 'middel', 'lang'],
} as const;

/** The fourth category where it is an indicator (BicycleOptions.indicatorCategory): measured 1, estimated 0. */
export const INDICATOR_CATEGORY = { meting: { gemeten: 1, geschat: 0 } } as const;

export interface BicycleLocation {
  index: number;
  id: string;
  featureId: string;
  authorityId: string;
  authority: string;
  contractor: string;
  name: string;
  aliases: string[];
  licenseCategory: string;
  bearing: number;
  locationType: 'PERMANENT' | 'PERIODIC';
  equipmentType: 'lus' | 'multiplePneumatic';
  validFrom: number;
  validUntil: number | undefined;
  longitude: number;
  latitude: number;
}

export interface MeasurementRow {
  locationId: string;
  measurementHour: string;
  measuredValuesFull: Record<string, Record<string, number | null>>;
}

export class BicycleWorld {
  readonly locations: readonly BicycleLocation[];
  readonly #byId: Map<string, BicycleLocation>;
  readonly #seed: number;
  readonly #options: BicycleOptions;
  /** How the counters count, and fail. */
  readonly counters: Counters;

  constructor(seed: number, options: BicycleOptions, now: number) {
    this.#seed = seed;
    this.#options = options;
    this.counters = new Counters(seed, options.faultRate, options.lostHourRate);
    this.locations = Array.from({ length: options.locations }, (_, i) => this.#location(i, now));
    this.#byId = new Map(this.locations.map((l) => [l.id, l]));
  }

  byId(id: string): BicycleLocation | undefined {
    return this.#byId.get(id);
  }

  #location(index: number, now: number): BicycleLocation {
    const seed = this.#seed;
    const region = REGIONS[index % REGIONS.length]!;
    const number = 1000 + index * 7 + (hash(seed, index, 1) % 7);
    const id = `${region.prefix}_${String(number).padStart(5, '0')}`;
    const periodic = unit(seed, index, 2) < 0.25;
    const dataStart = Date.parse(this.#options.dataStart);
    const span = now - dataStart;
    const dayOf = (fraction: number): number =>
      dataStart + Math.floor((span * fraction) / DAY_MS) * DAY_MS;
    const validFrom = dayOf(unit(seed, index, 3) * 0.7);
    let validUntil: number | undefined;
    if (periodic) {
      validUntil = Math.min(validFrom + (60 + (hash(seed, index, 4) % 240)) * DAY_MS, now);
    } else if (unit(seed, index, 5) < 0.1) {
      validUntil = dayOf(0.75 + unit(seed, index, 6) * 0.2);
    }
    const place = choose(PLACES, seed, index, 7);
    return {
      index,
      id,
      featureId: String(hash(seed, index, 8) % 1_000_000),
      authorityId: `${region.prefix.slice(0, 3)}-${(hash(seed, index, 9) % 9000) + 1000}`,
      authority: region.authority,
      contractor: choose(CONTRACTORS, seed, index, 10),
      name: unit(seed, index, 11) < 0.08 ? misEncode(`${place} ${index}`) : `${place} ${index}`,
      aliases: unit(seed, index, 12) < 0.3 ? [`${region.prefix}-${number}`] : [],
      licenseCategory: choose(LICENSES, seed, index, 13),
      bearing: Math.round(unit(seed, index, 14) * 3600) / 10,
      locationType: periodic ? 'PERIODIC' : 'PERMANENT',
      equipmentType: periodic || unit(seed, index, 15) < 0.3 ? 'multiplePneumatic' : 'lus',
      validFrom,
      validUntil,
      latitude: region.latitude + (unit(seed, index, 16) - 0.5) * 0.2,
      longitude: region.longitude + (unit(seed, index, 17) - 0.5) * 0.3,
    };
  }

  /** The catalog as the service's FeatureCollection. */
  featureCollection(): Record<string, unknown> {
    return {
      type: 'FeatureCollection',
      features: this.locations.map((l) => ({
        type: 'Feature',
        id: l.featureId,
        geometry: { type: 'Point', coordinates: [l.longitude, l.latitude] },
        properties: {
          id: l.id,
          authorityId: l.authorityId,
          authority: l.authority,
          contractor: l.contractor,
          name: l.name,
          aliases: l.aliases,
          licenseCategory: l.licenseCategory,
          bearing: l.bearing,
          locationType: l.locationType,
          equipmentType: l.equipmentType,
          validFrom: formatSecondTimestamp(l.validFrom),
          validUntil: l.validUntil === undefined ? null : formatSecondTimestamp(l.validUntil),
        },
      })),
    };
  }

  /** Whether the location has a measurement for the hour starting at hourMs, served by `now`. */
  hasMeasurement(location: BicycleLocation, hourMs: number, now: number): boolean {
    if (!this.#counts(location, hourMs, now) || this.servedAt(location, hourMs) > now) return false;
    return this.counters.delivered(location.index, hourMs);
  }

  /**
   * When the hour starting at hourMs is served: at its end, unless the counter
   * uploads in batches (every 1 to 4 days, at 03:00 UTC of its upload days)
   * or the hour comes late on its own (1 to 48 hours).
   */
  servedAt(location: BicycleLocation, hourMs: number): number {
    const seed = this.#seed;
    const i = location.index;
    const end = hourMs + HOUR_MS;
    if (unit(seed, i, 70) < this.#options.batchUploadRate) {
      const every = (1 + (hash(seed, i, 71) % 4)) * DAY_MS;
      const phase = (hash(seed, i, 72) % 4) * DAY_MS + 3 * HOUR_MS;
      return Math.ceil((end - phase) / every) * every + phase;
    }
    if (unit(seed, i, hourMs / HOUR_MS, 73) < this.#options.lateHourRate)
      return end + (1 + (hash(seed, i, hourMs / HOUR_MS, 74) % 48)) * HOUR_MS;
    return end;
  }

  /** Whether the hour is inside the location's validity and before now. */
  #counts(location: BicycleLocation, hourMs: number, now: number): boolean {
    if (hourMs < location.validFrom || hourMs + HOUR_MS > now) return false;
    return location.validUntil === undefined || hourMs < location.validUntil;
  }

  /**
   * Ground truth of counter health: the faults of a location on a local date
   * (`YYYY-MM-DD`, Europe/Amsterdam), `[]` for a healthy day, undefined for a
   * day the location could not count at all (outside its validity or after now).
   */
  dayFaults(location: BicycleLocation, date: string, now: number): FaultKind[] | undefined {
    const hours = hoursOfLocalDay(localDayOf(date)).filter((ms) => this.#counts(location, ms, now));
    if (hours.length === 0) return undefined;
    return this.counters.dayFaults(location.index, localDayOf(date), hours);
  }

  /** The row for one location and hour (call only where hasMeasurement is true). */
  measurement(location: BicycleLocation, hourMs: number): MeasurementRow {
    const seed = this.#seed;
    const i = location.index;
    const { directions, recordHour } = this.counters.count(
      i,
      location.index % REGIONS.length,
      hourMs,
    );
    // A stuck counter sends an earlier hour's record again, every value of it.
    const hourIndex = recordHour / HOUR_MS;
    const total = directions[0] + directions[1];
    const split = (parts: number, salt: number): number[] => {
      const weights = Array.from(
        { length: parts },
        (_, k) => 0.2 + unit(seed, i, hourIndex, salt + k),
      );
      const sum = weights.reduce((a, b) => a + b, 0);
      const counts = weights.map((w) => Math.floor((total * w) / sum));
      counts[0]! += total - counts.reduce((a, b) => a + b, 0);
      return counts;
    };
    const classify = location.equipmentType === 'multiplePneumatic';
    const values: Record<string, Record<string, number | null>> = {};
    let salt = 40;
    for (const [category, subcategories] of Object.entries(MEASUREMENT_CATEGORIES)) {
      const counts = category === 'richting' ? directions : split(subcategories.length, salt);
      salt += 10;
      const known = classify || category === 'richting' || category === 'snelheidsklasse';
      values[category] = Object.fromEntries(
        subcategories.map((name, k) => [name, known ? counts[k]! : null]),
      );
    }
    if (this.#options.indicatorCategory) {
      delete values['lengteklasse'];
      values['meting'] = { ...INDICATOR_CATEGORY.meting };
    }
    let stamp = hourMs;
    if (unit(seed, i, hourMs / HOUR_MS, 60) < this.#options.offHourRate) stamp += 15 * 60_000;
    return {
      locationId: location.id,
      measurementHour: formatSecondTimestamp(stamp),
      measuredValuesFull: values,
    };
  }

  /** Rows for the locations over hours in [fromMs, toMs), location by location, hours ascending. */
  *rows(
    locations: readonly BicycleLocation[],
    fromMs: number,
    toMs: number,
    now: number,
  ): Generator<MeasurementRow> {
    const first = Math.ceil(fromMs / HOUR_MS) * HOUR_MS;
    for (const location of locations) {
      for (let hour = first; hour < toMs; hour += HOUR_MS) {
        if (this.hasMeasurement(location, hour, now)) yield this.measurement(location, hour);
      }
    }
  }
}
