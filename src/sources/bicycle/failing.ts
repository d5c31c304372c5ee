/**
 * Locations whose requests keep failing. A batch that fails after its retries
 * is split in two and asked for again, down to the location that fails, which
 * is left out of the run while every other lands; the run then ends as
 * upstream trouble naming it (exit 1), and the next run asks for its hours
 * again. Trouble of the whole service is not split down: while no request of
 * the run has come back, the first half of a failing batch is asked for at
 * once, and its failure ends the run; more locations failing than a few end
 * it too.
 */
import { UpstreamError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { formatSecondTimestamp } from '../../util/time.js';
import type { Batch } from './batches.js';

/** The first line of an error's message, short. */
function said(error: Error): string {
  return error.message.split('\n')[0]!.slice(0, 300);
}

export class FailingLocations {
  readonly #failed = new Map<string, UpstreamError>();
  readonly #locations: number;
  readonly #log: Logger;

  constructor(locations: number, log: Logger) {
    this.#locations = locations;
    this.#log = log;
  }

  /** The next batch `take` gives, less the locations left out, which are asked for no more. */
  next(take: () => Batch | undefined): Batch | undefined {
    for (let batch = take(); batch; batch = take()) {
      const ids = batch.ids.filter((id) => !this.#failed.has(id));
      if (ids.length > 0) return { ...batch, ids };
    }
    return undefined;
  }

  /** Locations left out before the trouble is taken for the service's, not theirs. */
  get #most(): number {
    return Math.max(3, Math.floor(this.#locations * 0.05));
  }

  /**
   * A batch that kept failing: split in two and asked for again, or its one
   * location left out. While no request of the run has come back, the halves
   * are asked for at once, one after the other: both failing, `error` is the
   * service's trouble and is thrown.
   */
  async onFailure(
    batch: Batch,
    error: UpstreamError,
    run: {
      succeeded: () => number;
      fetch: (batch: Batch) => Promise<void>;
      requeue: (batches: Batch[]) => void;
      leaveOut: (id: string) => void;
    },
  ): Promise<void> {
    const { ids } = batch;
    const period = `${formatSecondTimestamp(batch.from)} .. ${formatSecondTimestamp(batch.to)}`;
    if (ids.length === 1) {
      this.#leaveOut(ids[0]!, period, error);
      run.leaveOut(ids[0]!);
      return;
    }
    this.#log.log(
      'warn',
      'bicycle.split',
      `${period}: a batch of ${ids.length} locations kept failing (${said(error)}); asked for again in two`,
    );
    const half = Math.ceil(ids.length / 2);
    const halves = [
      { ...batch, ids: ids.slice(0, half) },
      { ...batch, ids: ids.slice(half) },
    ];
    if (run.succeeded() > 0) {
      run.requeue(halves);
      return;
    }
    for (const part of halves) {
      if (run.succeeded() > 0) run.requeue([part]);
      else await run.fetch(part);
    }
    if (run.succeeded() === 0) throw error;
  }

  #leaveOut(id: string, period: string, error: UpstreamError): void {
    this.#failed.set(id, error);
    this.#log.log(
      'error',
      'bicycle.location_failed',
      `${id}: its requests for ${period} keep failing (${said(error)}); left out of this run, every other location lands`,
      { location_id: id },
    );
    if (this.#failed.size > this.#most) throw error;
  }

  /** Once every other location has landed: upstream trouble naming the locations left out (exit 1). */
  throwIfAny(): void {
    const [first] = this.#failed.values();
    if (!first) return;
    const names = [...this.#failed.keys()].sort().join(', ');
    throw new UpstreamError(
      `bicycle.measurements: ${this.#failed.size} of ${this.#locations} location(s) left out, their requests failing after every retry: ${names}; every other location landed, and the next run asks for their hours again. The last failure`,
      { method: first.method, url: first.url, status: first.status, body: first.bodyExcerpt },
      { cause: first },
    );
  }
}
