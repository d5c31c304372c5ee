/**
 * The traffic-sign event feed as a pure function of the options.
 *
 * History is laid out in rounds over [feedStart, feedEnd), and goes on after
 * feedEnd in rounds of the same length, so that a clock moved past feedEnd
 * (POST /simulator/advance) finds new events. Round 0 creates most signs; every
 * later round visits every sign once, in an order given by a keyed
 * permutation, and a sign may then be updated, deleted, or created again after a
 * deletion. Positions in a round are grouped into ticks that share one
 * publication instant, so many instants carry several events. A sign's fate in a
 * round depends only on (seed, sign, round), so any part of the feed, or any
 * sign's whole history, is computed without holding the rest.
 */
import { Permutation, hash, unit } from '../../util/hash.js';
import type { SignsOptions } from '../options.js';
import { TOWNS } from '../places.js';

export type EventType = 'created' | 'updated' | 'deleted';

/** One event of the feed, before it is turned into a payload. */
export interface FeedEvent {
  /** Index of the sign, 0..signs-1. */
  sign: number;
  /** Round in which the event happens (burst events carry the burst's round). */
  round: number;
  /** 0 = the round's event, 1 = a second change at the same instant, 2 = a burst event. */
  part: 0 | 1 | 2;
  type: EventType;
  /** Publication instant, epoch ms. */
  time: number;
  /** True for the identical second publication of the previous event. */
  duplicate: boolean;
}

const TICK_POSITIONS = 4;
const SALT = { born: 11, change: 12, kind: 13, recreate: 14, double: 15, duplicate: 16, town: 17 };
const SALT_JITTER = 18;
const SALT_BURST = 19;
const SALT_JOINING = 20;

export class SignFeed {
  readonly signs: number;
  readonly rounds: number;
  readonly start: number;
  readonly end: number;
  readonly #seed: number;
  readonly #options: SignsOptions;
  readonly #permutations = new Map<number, Permutation>();
  readonly #roundMs: number;
  readonly #tickMs: number;
  readonly #ticksPerRound: number;
  readonly #burst: { round: number; tick: number; time: number; signs: number[] } | undefined;
  readonly #burstIndex: Map<number, number>;

  constructor(seed: number, options: SignsOptions) {
    this.#seed = seed;
    this.#options = options;
    this.signs = options.signs;
    this.rounds = options.rounds + 1;
    this.start = Date.parse(options.feedStart);
    this.end = Date.parse(options.feedEnd);
    this.#roundMs = Math.floor((this.end - this.start) / this.rounds);
    this.#ticksPerRound = Math.ceil(this.signs / TICK_POSITIONS);
    const tickMs = Math.floor(this.#roundMs / this.#ticksPerRound);
    // Whole seconds where there is room, so that instants repeat as in the real feed.
    this.#tickMs = tickMs >= 2000 ? Math.floor(tickMs / 1000) * 1000 : Math.max(1, tickMs);
    this.#burst = this.#planBurst();
    this.#burstIndex = new Map((this.#burst?.signs ?? []).map((sign, i) => [sign, i]));
  }

  /** Town index of a sign (fixed for its whole life). */
  town(sign: number): number {
    return Math.floor(unit(this.#seed, sign, SALT.town) * TOWNS.length);
  }

  /** The round in which a sign is first created. */
  bornRound(sign: number): number {
    if (this.rounds === 1 || unit(this.#seed, sign, SALT.born) < 0.75) return 0;
    return 1 + Math.floor(unit(this.#seed, sign, SALT.born, 1) * (this.rounds - 1));
  }

  /**
   * The type of the sign's event in a round, or undefined when it has none.
   * Walks the sign's earlier rounds: O(rounds), no state kept.
   */
  eventType(sign: number, round: number): EventType | undefined {
    const born = this.bornRound(sign);
    if (round < born) return undefined;
    if (round === born) return 'created';
    let alive = true;
    let type: EventType | undefined;
    for (let r = born + 1; r <= round; r++) {
      type = undefined;
      if (alive) {
        if (unit(this.#seed, sign, r, SALT.change) < this.#options.updateRate) {
          type =
            unit(this.#seed, sign, r, SALT.kind) < this.#options.deleteRate ? 'deleted' : 'updated';
          alive = type !== 'deleted';
        }
      } else if (unit(this.#seed, sign, r, SALT.recreate) < this.#options.recreateRate) {
        type = 'created';
        alive = true;
      }
    }
    return type;
  }

  hasDouble(sign: number, round: number, type: EventType): boolean {
    return (
      type !== 'deleted' && unit(this.#seed, sign, round, SALT.double) < this.#options.doubleRate
    );
  }

  hasDuplicate(sign: number, round: number): boolean {
    return unit(this.#seed, sign, round, SALT.duplicate) < this.#options.duplicateRate;
  }

  /**
   * Whether the sign's events are in the feed as seen at `asOf`: a joining
   * sign's whole history appears only once the clock reaches joining.at.
   */
  served(sign: number, asOf: number): boolean {
    const { share, at } = this.#options.joining;
    if (share === 0 || (at !== undefined && asOf >= Date.parse(at))) return true;
    return unit(this.#seed, sign, SALT_JOINING) >= share;
  }

  hasHostileText(sign: number): boolean {
    return unit(this.#seed, sign, 0x40571) < this.#options.hostileTextRate;
  }

  isBadRecord(sign: number, round: number, part: number): boolean {
    return unit(this.#seed, sign, round * 4 + part, 0xbad) < this.#options.badRecordRate;
  }

  /**
   * Start of a round. The rounds after the laid-out history start strictly after
   * feedEnd, so that the feed up to feedEnd is the same whether or not it goes on.
   */
  #roundStart(round: number): number {
    if (round < this.rounds) return this.start + round * this.#roundMs;
    return this.end + this.#tickMs + (round - this.rounds) * this.#roundMs;
  }

  /** The first round that may hold an instant at or after `at`. */
  #roundAt(at: number): number {
    if (at < this.#roundStart(this.rounds))
      return Math.max(0, Math.min(this.rounds - 1, Math.floor((at - this.start) / this.#roundMs)));
    return this.rounds + Math.floor((at - this.#roundStart(this.rounds)) / this.#roundMs);
  }

  #permutation(round: number): Permutation {
    let permutation = this.#permutations.get(round);
    if (!permutation) {
      permutation = new Permutation(this.signs, hash(this.#seed, round, 0x5eed));
      this.#permutations.set(round, permutation);
    }
    return permutation;
  }

  /** Publication instant of a tick. */
  tickTime(round: number, tick: number): number {
    const base = this.#roundStart(round) + tick * this.#tickMs;
    if (this.#tickMs < 1000 || unit(this.#seed, round, tick, SALT_JITTER) < 0.6) return base;
    return (
      base +
      Math.floor(unit(this.#seed, round, tick, SALT_JITTER + 1) * Math.min(999, this.#tickMs))
    );
  }

  /** The sign's position (0..signs-1) in a round's visiting order. */
  position(sign: number, round: number): number {
    return this.#permutation(round).inverse(sign);
  }

  /** The burst instant, when a burst is configured. */
  get burst(): { time: number; size: number } | undefined {
    return this.#burst && { time: this.#burst.time, size: this.#burst.signs.length };
  }

  #planBurst(): { round: number; tick: number; time: number; signs: number[] } | undefined {
    const { size, townCode, at } = this.#options.burst;
    if (size <= 0) return undefined;
    const target = this.start + at * (this.end - this.start);
    const round = Math.min(this.rounds - 1, Math.floor((target - this.start) / this.#roundMs));
    const tick = Math.min(
      this.#ticksPerRound - 1,
      Math.floor((target - this.start - round * this.#roundMs) / this.#tickMs),
    );
    const time = this.tickTime(round, tick);
    const townIndex = townCode === undefined ? -1 : TOWNS.findIndex((t) => t.code === townCode);
    if (townCode !== undefined && townIndex < 0) {
      throw new RangeError(`signs.burst.townCode ${townCode} is not a known town code`);
    }
    const order = new Permutation(this.signs, hash(this.#seed, SALT_BURST));
    const signs: number[] = [];
    for (let i = 0; i < this.signs && signs.length < size; i++) {
      const sign = order.forward(i);
      if (townIndex >= 0 && this.town(sign) !== townIndex) continue;
      if (this.#aliveAt(sign, time)) signs.push(sign);
    }
    return { round, tick, time, signs };
  }

  #aliveAt(sign: number, time: number): boolean {
    const last = this.latestEvent(sign, time, false);
    return last !== undefined && last.type !== 'deleted';
  }

  /**
   * The sign's latest event published at or before `at` (the sign's state then),
   * or undefined when it had none. Ties at one instant follow feed order.
   */
  latestEvent(sign: number, at: number, withBurst = true): FeedEvent | undefined {
    let latest: FeedEvent | undefined;
    for (let round = this.bornRound(sign); ; round++) {
      if (this.#roundStart(round) > at) break;
      const type = this.eventType(sign, round);
      if (type !== undefined) {
        const tick = Math.floor(this.position(sign, round) / TICK_POSITIONS);
        const time = this.tickTime(round, tick);
        if (time <= at) {
          const part = this.hasDouble(sign, round, type) ? 1 : 0;
          latest = { sign, round, part, type: part ? 'updated' : type, time, duplicate: false };
        }
      }
      const burst = this.#burst;
      if (withBurst && burst?.round === round && burst.time <= at && this.#burstIndex.has(sign)) {
        // The burst comes after every regular event of its tick.
        if (latest === undefined || latest.time <= burst.time) {
          latest = { sign, round, part: 2, type: 'updated', time: burst.time, duplicate: false };
        }
      }
    }
    return latest;
  }

  /**
   * How many times the sign was created again after a deletion, by events
   * published at or before `at` (0: never). Today's API gives a sign created
   * again a new UUID: another sign replaced the one removed.
   */
  recreations(sign: number, at: number): number {
    // eventType's walk, once over the rounds (not again for each).
    let count = 0;
    let alive = true;
    for (let r = this.bornRound(sign) + 1; this.#roundStart(r) <= at; r++) {
      if (alive) {
        if (unit(this.#seed, sign, r, SALT.change) < this.#options.updateRate)
          alive = unit(this.#seed, sign, r, SALT.kind) >= this.#options.deleteRate;
      } else if (unit(this.#seed, sign, r, SALT.recreate) < this.#options.recreateRate) {
        alive = true;
        const tick = Math.floor(this.position(sign, r) / TICK_POSITIONS);
        if (this.tickTime(r, tick) <= at) count++;
      }
    }
    return count;
  }

  /**
   * Events in feed order from the first one published at or after `from`, up to
   * and including `until`, as the feed serves them then. With townIndex, only
   * that town's signs.
   */
  *events(from: number, until: number, townIndex = -1): Generator<FeedEvent> {
    for (let round = this.#roundAt(from); ; round++) {
      const roundStart = this.#roundStart(round);
      if (roundStart > until) return;
      let tick = Math.max(0, Math.floor((from - roundStart) / this.#tickMs));
      if (tick < this.#ticksPerRound && this.tickTime(round, tick) < from) tick++;
      const permutation = this.#permutation(round);
      for (; tick < this.#ticksPerRound; tick++) {
        const time = this.tickTime(round, tick);
        if (time > until) return;
        const end = Math.min(this.signs, (tick + 1) * TICK_POSITIONS);
        for (let position = tick * TICK_POSITIONS; position < end; position++) {
          const sign = permutation.forward(position);
          if (townIndex >= 0 && this.town(sign) !== townIndex) continue;
          if (!this.served(sign, until)) continue;
          const type = this.eventType(sign, round);
          if (type === undefined) continue;
          const event: FeedEvent = { sign, round, part: 0, type, time, duplicate: false };
          yield event;
          if (this.hasDuplicate(sign, round)) yield { ...event, duplicate: true };
          if (this.hasDouble(sign, round, type)) yield { ...event, part: 1, type: 'updated' };
        }
        if (this.#burst && round === this.#burst.round && tick === this.#burst.tick) {
          for (const sign of this.#burst.signs) {
            if (townIndex >= 0 && this.town(sign) !== townIndex) continue;
            if (!this.served(sign, until)) continue;
            yield { sign, round, part: 2, type: 'updated', time, duplicate: false };
          }
        }
      }
    }
  }
}
