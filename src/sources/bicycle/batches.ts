/**
 * The measurement work as period windows x location batches (the sizes come
 * from sizing.ts), what is left of it, and which dates the staged batches
 * cover.
 */
import { HOUR_MS } from '../../util/time.js';

/** A unit of measurement work: locations over [from, to) (ms, whole hours). */
export interface Batch {
  from: number;
  to: number;
  ids: string[];
}

/** A half-open interval in ms. */
export type Interval = [number, number];

/** What is left of [from, to) once the done intervals are taken out. */
export function subtract(whole: Interval, done: readonly Interval[]): Interval[] {
  let left: Interval[] = [whole];
  for (const [a, b] of done) {
    left = left.flatMap(([x, y]): Interval[] => {
      if (b <= x || a >= y) return [[x, y]];
      const parts: Interval[] = [];
      if (a > x) parts.push([x, a]);
      if (b < y) parts.push([b, y]);
      return parts;
    });
  }
  return left;
}

/**
 * The work left: per location, the period less the batches already done;
 * locations with the same work left are batched together. Batches are cut
 * lazily, so that limits learned meanwhile apply to the rest.
 */
export class WorkPlan {
  readonly #groups: { intervals: Interval[]; ids: string[] }[] = [];
  /** Refused batches, cut again when taken. */
  readonly #retry: Batch[] = [];
  #group = 0;
  #interval = 0;
  #cursor: number | undefined;
  /** End of the window being cut (fixed at its first batch, whatever sizes come later). */
  #windowTo: number | undefined;
  #id = 0;

  constructor(ids: readonly string[], period: Interval, done: readonly Batch[]) {
    const byKey = new Map<string, { intervals: Interval[]; ids: string[] }>();
    for (const id of ids) {
      const intervals = subtract(
        period,
        done.filter((b) => b.ids.includes(id)).map((b): Interval => [b.from, b.to]),
      );
      if (intervals.length === 0) continue;
      const key = JSON.stringify(intervals);
      const group = byKey.get(key) ?? { intervals, ids: [] };
      group.ids.push(id);
      byKey.set(key, group);
    }
    this.#groups = [...byKey.values()];
  }

  /** The work of these batches, taken in this order (cut again only if the sizes come down). */
  static of(batches: readonly Batch[]): WorkPlan {
    const work = new WorkPlan([], [0, 0], []);
    work.requeue(batches);
    return work;
  }

  /** Location-hours left to request (an upper bound of the rows). */
  get hoursLeft(): number {
    return this.#groups.reduce(
      (sum, g) => sum + g.ids.length * g.intervals.reduce((s, [a, b]) => s + (b - a) / HOUR_MS, 0),
      0,
    );
  }

  /** Requests the rest needs at these sizes (for plans and progress). */
  requestsLeft(batchSize: number, windowHours: number): number {
    const requests = (ids: number, from: number, to: number): number =>
      Math.ceil((to - from) / (windowHours * HOUR_MS)) * Math.ceil(ids / batchSize);
    let count = this.#retry.reduce((sum, r) => sum + requests(r.ids.length, r.from, r.to), 0);
    for (let g = this.#group; g < this.#groups.length; g++) {
      const group = this.#groups[g]!;
      const first = g === this.#group ? this.#interval : 0;
      for (let i = first; i < group.intervals.length; i++) {
        const [start, to] = group.intervals[i]!;
        let from = start;
        if (g === this.#group && i === this.#interval && this.#cursor !== undefined) {
          from = this.#cursor;
          if (this.#id > 0 && this.#windowTo !== undefined) {
            // the window being cut: the locations not yet taken
            count += Math.ceil((group.ids.length - this.#id) / batchSize);
            from = this.#windowTo;
          }
        }
        if (to > from) count += requests(group.ids.length, from, to);
      }
    }
    return count;
  }

  /**
   * Puts refused batches back, taken before anything else and cut again at the
   * sizes current when they are taken (so that what was learned from the
   * refusal applies, and the search for the limits goes on).
   */
  requeue(batches: readonly Batch[]): void {
    this.#retry.push(...batches);
  }

  /** The next batch at these sizes, or undefined when the plan is exhausted. */
  next(batchSize: number, windowHours: number): Batch | undefined {
    const region = this.#retry.shift();
    if (region) {
      const to = Math.min(region.to, region.from + windowHours * HOUR_MS);
      const piece = { from: region.from, to, ids: region.ids.slice(0, batchSize) };
      const rest: Batch[] = [];
      if (to < region.to) rest.push({ from: to, to: region.to, ids: piece.ids });
      if (piece.ids.length < region.ids.length)
        rest.push({ from: region.from, to: region.to, ids: region.ids.slice(batchSize) });
      this.#retry.unshift(...rest);
      return piece;
    }
    while (this.#group < this.#groups.length) {
      const group = this.#groups[this.#group]!;
      const interval = group.intervals[this.#interval];
      if (!interval) {
        this.#group++;
        this.#interval = 0;
        continue;
      }
      const from = this.#cursor ?? interval[0];
      const windowTo = this.#windowTo ?? Math.min(interval[1], from + windowHours * HOUR_MS);
      this.#windowTo = windowTo;
      const ids = group.ids.slice(this.#id, this.#id + batchSize);
      this.#id += ids.length;
      // The sizes came down since the window was cut: the rest of it, for these ids, comes later.
      const to = Math.min(windowTo, from + windowHours * HOUR_MS);
      if (to < windowTo) this.#retry.push({ from: to, to: windowTo, ids });
      if (this.#id >= group.ids.length) {
        this.#id = 0;
        this.#windowTo = undefined;
        if (windowTo >= interval[1]) {
          this.#interval++;
          this.#cursor = undefined;
        } else {
          this.#cursor = windowTo;
        }
      } else {
        this.#cursor = from;
      }
      return { from, to, ids };
    }
    return undefined;
  }
}

/**
 * What the staged batches cover of a run's selection: per location, the hours
 * staged, as merged intervals. A date partition may be rewritten only when
 * every location of the run is covered over the run's hours of that date;
 * anything less would drop rows the rewrite is meant to replace.
 */
export class Coverage {
  readonly #byId = new Map<string, Interval[]>();

  constructor(ids: readonly string[]) {
    for (const id of ids) this.#byId.set(id, []);
  }

  /** Leaves a location out: the selection is covered without it. */
  drop(id: string): void {
    this.#byId.delete(id);
  }

  /** Records a staged batch (ids outside the selection are ignored). */
  add(batch: Batch): void {
    for (const id of batch.ids) {
      const intervals = this.#byId.get(id);
      if (intervals) this.#byId.set(id, merge([...intervals, [batch.from, batch.to]]));
    }
  }

  /** Whether every location of the selection is covered over [from, to). */
  covers(from: number, to: number): boolean {
    if (to <= from) return true;
    for (const intervals of this.#byId.values()) {
      if (!intervals.some(([a, b]) => a <= from && b >= to)) return false;
    }
    return true;
  }
}

/** Sorted, merged intervals (touching ones joined). */
function merge(intervals: Interval[]): Interval[] {
  const sorted = intervals.sort((x, y) => x[0] - y[0]);
  const out: Interval[] = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}
