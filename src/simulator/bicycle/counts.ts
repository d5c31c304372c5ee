/**
 * How the simulator's bicycle counters count, and how they fail: pure functions
 * of the seed, in Dutch local time (Europe/Amsterdam, 23- and 25-hour days).
 *
 * A healthy counter follows a weekday profile (morning and evening peaks) or a
 * weekend one (one broad afternoon peak) at its own level, scaled by the day's
 * weather in its region, with a little noise from hour to hour, and splits its
 * passages between its two directions by a share of its own.
 *
 * Faults (the option `faultRate`: the share of location-days on which one
 * starts) are the ordinary ways counters fail, each at known location-days
 * (`dayFaults`, the ground truth of the tests):
 * - dead: every hour delivered, every count zero;
 * - zero_run: 7 to 10 consecutive daytime hours of zeros;
 * - stuck: the same record repeated for 5 to 8 hours from the morning peak;
 * - direction_missing: one direction counts nothing (the total is the other's);
 * - direction_imbalance: the split between the directions far from its own;
 * - spike: one daytime hour 4 to 8 times the day's peak;
 * - night_activity: the clock 12 hours off (a.m. for p.m.): the day's traffic at night;
 * - level_shift: a third of the level, 5 to 10 days long (a half-broken cable);
 * - incomplete: 6 to 14 consecutive hours not delivered.
 * Besides these, with any rate, a counter loses a whole local day now and
 * then, and single hours: those days are `incomplete` in the ground truth too.
 */
import { hash, unit } from '../../util/hash.js';
import { DAY_MS, HOUR_MS } from '../../util/time.js';

export const FAULT_KINDS = [
  'dead',
  'zero_run',
  'stuck',
  'direction_missing',
  'direction_imbalance',
  'spike',
  'night_activity',
  'level_shift',
  'incomplete',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** A fault of one location that starts on a local day. */
export interface Fault {
  kind: FaultKind;
  /** Local day (days since 1970-01-01 in local time) it starts. */
  day: number;
  /** Days it lasts (level_shift several, the others one). */
  days: number;
  /** First local hour of the day it touches, and how many hours (the hour-level kinds). */
  hour: number;
  hours: number;
}

/** The longest a fault lasts, in days. */
const LONGEST = 10;

/** The last Sunday of a UTC month (0-based), at 01:00 UTC: where EU summer time starts or ends. */
function lastSundayOneUtc(year: number, month: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0));
  return Date.UTC(year, month, last.getUTCDate() - last.getUTCDay(), 1);
}

const offsets = new Map<number, [number, number]>();

/** Hours Europe/Amsterdam is ahead of UTC at an instant: 2 in summer time, else 1. */
export function amsterdamOffset(ms: number): number {
  const year = new Date(ms).getUTCFullYear();
  let bounds = offsets.get(year);
  if (!bounds) {
    bounds = [lastSundayOneUtc(year, 2), lastSundayOneUtc(year, 9)];
    offsets.set(year, bounds);
  }
  return ms >= bounds[0] && ms < bounds[1] ? 2 : 1;
}

/** The local day (days since 1970-01-01 in local time) and local hour of an instant. */
export function localTime(ms: number): { day: number; hour: number } {
  const local = ms + amsterdamOffset(ms) * HOUR_MS;
  return { day: Math.floor(local / DAY_MS), hour: new Date(local).getUTCHours() };
}

/** `YYYY-MM-DD` of a local day. */
export function localDateText(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** The local day of a `YYYY-MM-DD` date. */
export function localDayOf(date: string): number {
  return Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY_MS);
}

/** The instants (UTC ms) of the hours of a local day: 23, 24 or 25 of them. */
export function hoursOfLocalDay(day: number): number[] {
  const hours: number[] = [];
  // The day starts between 22:00 and 23:00 UTC of the day before.
  for (let ms = day * DAY_MS - 3 * HOUR_MS; ms < (day + 1) * DAY_MS; ms += HOUR_MS) {
    if (localTime(ms).day === day) hours.push(ms);
  }
  return hours;
}

/** The relative traffic of a local hour of the day: weekday peaks, or the weekend's one. */
function profile(hour: number, weekend: boolean): number {
  const h = ((hour % 24) + 24) % 24;
  const peak = weekend
    ? Math.exp(-((h - 14) ** 2) / 14)
    : Math.exp(-((h - 8) ** 2) / 3) +
      0.85 * Math.exp(-((h - 17) ** 2) / 5) +
      0.3 * Math.exp(-((h - 13) ** 2) / 12);
  return 0.02 + peak;
}

export class Counters {
  readonly #seed: number;
  readonly #rate: number;
  readonly #lostHourRate: number;

  constructor(seed: number, faultRate: number, lostHourRate = 0.004) {
    this.#seed = seed;
    this.#rate = faultRate;
    this.#lostHourRate = lostHourRate;
  }

  /** The fault that starts at a location on a local day, if one does. */
  faultStarting(location: number, day: number): Fault | undefined {
    const seed = this.#seed;
    if (this.#rate <= 0 || unit(seed, location, day, 70) >= this.#rate) return undefined;
    const kind = FAULT_KINDS[hash(seed, location, day, 71) % FAULT_KINDS.length]!;
    const r = (salt: number, n: number): number => hash(seed, location, day, salt) % n;
    switch (kind) {
      case 'level_shift':
        return { kind, day, days: 5 + r(72, 6), hour: 0, hours: 24 };
      case 'zero_run':
        return { kind, day, days: 1, hour: 7 + r(73, 4), hours: 7 + r(74, 4) };
      case 'stuck':
        return { kind, day, days: 1, hour: 7 + r(73, 3), hours: 5 + r(74, 4) };
      case 'spike':
        return { kind, day, days: 1, hour: 10 + r(73, 10), hours: 1 };
      case 'incomplete':
        return { kind, day, days: 1, hour: 6 + r(73, 7), hours: 6 + r(74, 9) };
      default:
        return { kind, day, days: 1, hour: 0, hours: 24 };
    }
  }

  /** The faults of a location on a local day (a level shift may have started days before). */
  faultsOn(location: number, day: number): Fault[] {
    const found: Fault[] = [];
    for (let start = day - LONGEST + 1; start <= day; start++) {
      const fault = this.faultStarting(location, start);
      if (fault && start + fault.days > day) found.push(fault);
    }
    return found;
  }

  /** Whether the counter lost the whole local day (an outage of the feed, not a fault of counting). */
  lostDay(location: number, day: number): boolean {
    return unit(this.#seed, location, day, 21) < 0.01;
  }

  /** Whether the counter lost this one hour. */
  lostHour(location: number, hourMs: number): boolean {
    return unit(this.#seed, location, hourMs / HOUR_MS, 22) < this.#lostHourRate;
  }

  /** Whether the hour is delivered (inside the location's validity, checked by the caller). */
  delivered(location: number, hourMs: number): boolean {
    const { day, hour } = localTime(hourMs);
    if (this.lostDay(location, day) || this.lostHour(location, hourMs)) return false;
    for (const fault of this.faultsOn(location, day))
      if (fault.kind === 'incomplete' && hour >= fault.hour && hour < fault.hour + fault.hours)
        return false;
    return true;
  }

  /** The counter's level: its passages in an hour at the height of a weekday's morning peak. */
  level(location: number): number {
    return 20 + (hash(this.#seed, location, 30) % 400);
  }

  /** Its usual share of the passages in its first direction. */
  directionShare(location: number): number {
    return 0.35 + 0.3 * unit(this.#seed, location, 32);
  }

  /** The day's weather in a region, as a factor on traffic: 0.65 (rain) to 1.15. */
  weather(region: number, day: number): number {
    return 0.65 + 0.5 * unit(this.#seed, region, day, 33);
  }

  /**
   * The passages of an hour in both directions, as counted (faults applied):
   * [first direction, second direction]. `recordHour` is the hour whose
   * record is sent (a stuck counter sends an earlier hour's again).
   */
  count(
    location: number,
    region: number,
    hourMs: number,
  ): { directions: [number, number]; recordHour: number } {
    const seed = this.#seed;
    const { day, hour } = localTime(hourMs);
    const faults = this.faultsOn(location, day);
    const has = (kind: FaultKind): Fault | undefined => faults.find((f) => f.kind === kind);
    const within = (f: Fault | undefined): boolean =>
      f !== undefined && hour >= f.hour && hour < f.hour + f.hours;
    const stuck = has('stuck');
    if (stuck && hour > stuck.hour && hour < stuck.hour + stuck.hours) {
      const first = hourMs - (hour - stuck.hour) * HOUR_MS;
      return { ...this.count(location, region, first), recordHour: first };
    }
    const weekday = new Date(day * DAY_MS).getUTCDay();
    const weekend = weekday === 0 || weekday === 6;
    const shifted = has('night_activity') ? hour + 12 : hour;
    const noise = 0.85 + 0.3 * unit(seed, location, hourMs / HOUR_MS, 31);
    let total =
      this.level(location) * this.weather(region, day) * profile(shifted, weekend) * noise;
    if (has('level_shift')) total /= 3;
    const spike = has('spike');
    if (spike && hour === spike.hour)
      total =
        this.level(location) *
        this.weather(region, day) *
        (4 + (hash(seed, location, day, 75) % 5));
    let passages = Math.round(total);
    if (has('dead') || within(has('zero_run'))) passages = 0;
    let share =
      this.directionShare(location) + 0.08 * (unit(seed, location, hourMs / HOUR_MS, 34) - 0.5);
    if (has('direction_imbalance')) share = share > 0.5 ? share - 0.38 : share + 0.38;
    const first = Math.round(passages * share);
    if (has('direction_missing')) return { directions: [first, 0], recordHour: hourMs };
    return { directions: [first, passages - first], recordHour: hourMs };
  }

  /**
   * The ground truth of one location-day: every kind of fault in it, or none.
   * `hours` are the instants of the day the location could count (inside its
   * validity and before the simulator's now); days with none have no truth.
   */
  dayFaults(location: number, day: number, hours: readonly number[]): FaultKind[] {
    const kinds = new Set<FaultKind>(this.faultsOn(location, day).map((f) => f.kind));
    if (hours.some((ms) => !this.delivered(location, ms))) kinds.add('incomplete');
    return [...kinds].sort();
  }
}
