/**
 * The simulated upstream's data, and the ground truth that tests and benchmarks
 * compare a pipeline's output with. The truth is computed from the same pure
 * functions as the served answers, but along another path (per sign, per
 * location) than the one the endpoints take (feed order, request batches).
 */
import { startOfUtcMonth } from '../util/time.js';
import { BicycleWorld, type BicycleLocation, type MeasurementRow } from './bicycle/world.js';
import type { FaultKind } from './bicycle/counts.js';
import type { SimulatorOptions } from './options.js';
import { TOWNS } from './places.js';
import { SignFeed, type FeedEvent } from './signs/feed.js';
import { SignPayloads, type SignPayload } from './signs/payload.js';

export class World {
  readonly options: SimulatorOptions;
  readonly feed: SignFeed;
  readonly payloads: SignPayloads;
  readonly bicycle: BicycleWorld;
  #now: number;

  constructor(options: SimulatorOptions) {
    this.options = options;
    this.feed = new SignFeed(options.seed, options.signs);
    this.payloads = new SignPayloads(options.seed);
    this.#now = options.now === undefined ? this.feed.end : Date.parse(options.now);
    this.bicycle = new BicycleWorld(options.seed, options.bicycle, this.#now);
  }

  /** The simulator's clock: nothing published or measured after it exists yet. */
  get now(): number {
    return this.#now;
  }

  /** Moves the clock (forward, to let a feed grow between two runs; or back). */
  setNow(iso: string): void {
    const ms = Date.parse(iso);
    if (Number.isNaN(ms)) throw new RangeError(`now must be an ISO timestamp, got ${iso}`);
    this.#now = ms;
  }

  /** The moment of the monthly current-state snapshot: the start of the UTC month of now. */
  get snapshotMoment(): number {
    return startOfUtcMonth(this.#now);
  }

  /** Index into TOWNS of a town code; -2 when the code is unknown (matches nothing). */
  townIndex(code: string | undefined): number {
    if (code === undefined) return -1;
    const index = TOWNS.findIndex((t) => t.code === code);
    return index < 0 ? -2 : index;
  }

  /** The payload of a feed event, exactly as served. */
  payload(event: FeedEvent): SignPayload {
    const { sign, round, part } = event;
    return this.payloads.build(
      event,
      this.feed.town(sign),
      this.feed.isBadRecord(sign, round, part),
      this.feed.hasHostileText(sign),
    );
  }

  /** Ground truth: every distinct event published up to now, in feed order. */
  *distinctEvents(townCode?: string): Generator<SignPayload> {
    const town = this.townIndex(townCode);
    if (town === -2) return;
    for (const event of this.feed.events(this.feed.start, this.#now, town)) {
      if (!event.duplicate) yield this.payload(event);
    }
  }

  /**
   * Ground truth: the current state as of `at` (default now): each sign's latest
   * event, signs whose latest event is a deletion left out; ordered by sign.
   */
  *currentState(at = this.#now, townCode?: string): Generator<SignPayload> {
    const town = this.townIndex(townCode);
    if (town === -2) return;
    for (let sign = 0; sign < this.feed.signs; sign++) {
      if (town >= 0 && this.feed.town(sign) !== town) continue;
      if (!this.feed.served(sign, at)) continue;
      const latest = this.feed.latestEvent(sign, at);
      if (latest && latest.type !== 'deleted') yield this.payload(latest);
    }
  }

  /** Ground truth: the measurement rows for the ids over hours in [start, end). */
  measurements(ids: readonly string[], startMs: number, endMs: number): MeasurementRow[] {
    const locations = ids
      .map((id) => this.bicycle.byId(id))
      .filter((l): l is BicycleLocation => l !== undefined);
    return [...this.bicycle.rows(locations, startMs, endMs, this.#now)];
  }

  /**
   * Ground truth of counter health: for each of the ids and local dates
   * (`YYYY-MM-DD`, Europe/Amsterdam) the location could count on, its faults
   * (`[]`: healthy), keyed `<id> <date>`.
   */
  counterFaults(ids: readonly string[], dates: readonly string[]): Map<string, FaultKind[]> {
    const found = new Map<string, FaultKind[]>();
    for (const id of ids) {
      const location = this.bicycle.byId(id);
      if (!location) continue;
      for (const date of dates) {
        const faults = this.bicycle.dayFaults(location, date, this.#now);
        if (faults) found.set(`${id} ${date}`, faults);
      }
    }
    return found;
  }
}
