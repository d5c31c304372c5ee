/**
 * The service's unpublished limits, learned from its refusals. For each limit
 * the largest size that worked and the smallest that failed are kept. The next
 * size starts at the configured guess and doubles while nothing has failed;
 * after a refusal it is the middle of the gap between what worked and what
 * failed, so the search settles on the real limit in a few requests.
 */
import { InputError, UpstreamRefusalError } from '../../errors.js';
import { HOUR_MS, formatSecondTimestamp } from '../../util/time.js';
import type { Batch } from './batches.js';

export interface Limit {
  max_ok: number | null;
  min_fail: number | null;
}

export interface LearnedLimits {
  /** Locations per request. */
  locations: Limit;
  /** Hours per request. */
  period_hours: Limit;
}

export function emptyLimits(): LearnedLimits {
  return {
    locations: { max_ok: null, min_fail: null },
    period_hours: { max_ok: null, min_fail: null },
  };
}

/** The size to try next for a limit, from `guess`, never above `cap`. */
export function nextSize(limit: Limit, guess: number, cap = Infinity): number {
  const { max_ok: ok, min_fail: fail } = limit;
  let size: number;
  if (fail === null) size = ok === null || ok < guess ? guess : ok * 2;
  else if (ok === null) size = Math.max(1, Math.min(guess, Math.floor(fail / 2)));
  else if (fail - ok <= 1) size = ok;
  else size = Math.floor((ok + fail) / 2);
  return Math.max(1, Math.min(size, cap));
}

/**
 * Sizes for concurrent requests: a size above what is known to work is a probe,
 * and only one probe per limit is out at a time; the others use the size known
 * to work, or wait when there is none yet.
 */
export class Sizer {
  readonly #limit: Limit;
  readonly #guess: number;
  #probing = false;

  constructor(limit: Limit, guess: number) {
    this.#limit = limit;
    this.#guess = guess;
  }

  /** The size for the next request, or undefined to wait for the probe out. */
  size(cap: number): number | undefined {
    const wanted = nextSize(this.#limit, this.#guess, cap);
    const safe = this.#limit.max_ok;
    if (safe !== null && wanted <= safe) return wanted;
    if (!this.#probing) return wanted;
    return safe === null ? undefined : Math.min(safe, cap);
  }

  /** Marks a request of this size as sent (a probe if above what is known to work). */
  sent(size: number): boolean {
    const probe = this.#limit.max_ok === null || size > this.#limit.max_ok;
    if (probe) this.#probing = true;
    return probe;
  }

  settled(size: number, ok: boolean | undefined, probe: boolean): void {
    if (probe) this.#probing = false;
    if (ok === true) recordSuccess(this.#limit, size);
    else if (ok === false) recordFailure(this.#limit, size);
  }
}

export function recordSuccess(limit: Limit, size: number): void {
  limit.max_ok = Math.max(limit.max_ok ?? 0, size);
  if (limit.min_fail !== null && limit.min_fail <= size) limit.min_fail = null;
}

export function recordFailure(limit: Limit, size: number): void {
  limit.min_fail = Math.min(limit.min_fail ?? Infinity, size);
  // A limit that has come down since: what worked before no longer says anything.
  if (limit.max_ok !== null && limit.max_ok >= size) limit.max_ok = null;
}

export type Refusal = 'locations' | 'period' | 'other';

/** What a 400 refuses, from the service's message. */
export function classifyRefusal(message: string): Refusal {
  const text = message.toLowerCase();
  if (/location/.test(text) && /(too many|maximum|max\b|limit|exceed|at most)/.test(text))
    return 'locations';
  if (/(period|time ?span|time ?range|interval|too long|days|duration)/.test(text)) return 'period';
  return 'other';
}

/** First guesses of the sizes, from the step's options. */
export interface SizeGuesses {
  locations: number;
  hours: number;
}

/** Sizes a plan would use: what is known to work, else the guess. */
export function plannedSizes(
  limits: LearnedLimits,
  guesses: SizeGuesses,
): { locations: number; hours: number } {
  const settled = (limit: Limit, guess: number): number => limit.max_ok ?? nextSize(limit, guess);
  return {
    locations: settled(limits.locations, guesses.locations),
    hours: settled(limits.period_hours, guesses.hours),
  };
}

/** Whether a request's sizes were probes (above what is known to work). */
export interface Probes {
  locations: boolean;
  hours: boolean;
}

/**
 * The sizes a run sends, adjusted by each answer, and whether it still sends a
 * prefix or polygon selection as given (server side).
 */
export class Sizing {
  readonly locations: Sizer;
  readonly hours: Sizer;
  serverSide: boolean;

  constructor(limits: LearnedLimits, guesses: SizeGuesses, serverSide: boolean) {
    this.locations = new Sizer(limits.locations, guesses.locations);
    this.hours = new Sizer(limits.period_hours, guesses.hours);
    this.serverSide = serverSide;
  }

  /** The sizes of the next request (undefined: wait for a probe out) and the probes they are. */
  next(
    locations: number,
    hours: number,
  ): { locations: number | undefined; hours: number | undefined } {
    return {
      locations: this.serverSide ? locations : this.locations.size(locations),
      hours: this.hours.size(hours),
    };
  }

  /** Marks a batch as sent. */
  sent(batch: Batch): Probes {
    return {
      locations: this.serverSide ? false : this.locations.sent(batch.ids.length),
      hours: this.hours.sent((batch.to - batch.from) / HOUR_MS),
    };
  }

  /** The batch was answered: both sizes worked (the locations only if sent as ids). */
  onOk(batch: Batch, probes: Probes, sentServerSide: boolean): void {
    this.locations.settled(batch.ids.length, sentServerSide ? undefined : true, probes.locations);
    this.hours.settled((batch.to - batch.from) / HOUR_MS, true, probes.hours);
  }

  /** The request failed without an answer: nothing is learned. */
  onError(batch: Batch, probes: Probes): void {
    this.locations.settled(batch.ids.length, undefined, probes.locations);
    this.hours.settled((batch.to - batch.from) / HOUR_MS, undefined, probes.hours);
  }

  /**
   * A request refused with a 400. A limit is learned from "too many locations"
   * or "period too long" (the batch is then cut again at the new sizes) and
   * what was learned comes back as text; a server-side selection falls back to
   * id batches; any other refusal throws with the service's message.
   */
  onRefusal(
    message: string,
    batch: Batch,
    probes: Probes,
    sentServerSide: boolean,
  ): { learned: string; fallback: boolean } {
    const hours = (batch.to - batch.from) / HOUR_MS;
    const size = batch.ids.length;
    const refusal = classifyRefusal(message);
    if (refusal === 'locations') {
      this.locations.settled(size, false, probes.locations);
      this.hours.settled(hours, undefined, probes.hours);
      if (sentServerSide) this.serverSide = false;
      else if (size <= 1)
        throw new UpstreamRefusalError(
          `The bicycle service refuses even one location per request: ${message}`,
        );
      return {
        learned: `${message}: ${size} locations per request is too many`,
        fallback: sentServerSide,
      };
    }
    if (refusal === 'period') {
      this.hours.settled(hours, false, probes.hours);
      this.locations.settled(size, undefined, probes.locations);
      if (hours <= 1)
        throw new UpstreamRefusalError(
          `The bicycle service refuses even one hour per request: ${message}`,
        );
      return { learned: `${message}: ${hours} hours per request is too long`, fallback: false };
    }
    this.onError(batch, probes);
    const text = `The bicycle service refused the request for ${formatSecondTimestamp(batch.from)} .. ${formatSecondTimestamp(batch.to)}: ${message}`;
    if (sentServerSide && /prefix|polygon/i.test(message)) throw new InputError(text);
    throw new UpstreamRefusalError(text);
  }
}

/**
 * The sizes every request of a run has when no size is still being searched
 * for: each is what is known to work (or less, capped by the run's locations
 * and hours), so that no request probes. Undefined while a size would probe.
 */
export function settledSizes(
  limits: LearnedLimits,
  guesses: SizeGuesses,
  caps: { locations: number; hours: number },
  serverSide: boolean,
): { locations: number; hours: number } | undefined {
  const settled = (limit: Limit, guess: number, cap: number): number | undefined => {
    const size = nextSize(limit, guess, cap);
    return limit.max_ok !== null && size <= limit.max_ok ? size : undefined;
  };
  const locations = serverSide
    ? caps.locations
    : settled(limits.locations, guesses.locations, caps.locations);
  const hours = settled(limits.period_hours, guesses.hours, caps.hours);
  return locations === undefined || hours === undefined ? undefined : { locations, hours };
}
