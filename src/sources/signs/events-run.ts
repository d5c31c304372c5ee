/**
 * One run of a `signs.events` step: readers take ranges of the feed (a reader
 * that runs out takes half of the largest range left), each unit of events is
 * landed by DuckDB while its reader reads on, and a range's committed cursor
 * moves past a unit only once the unit's files are in place.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { quotedIdentifier, type Database } from '../../duckdb/database.js';
import { RunError } from '../../errors.js';
import type { RunContext } from '../context.js';
import { burstTowns, readBurst } from './burst.js';
import type { EventsCheckpoint } from './checkpoint.js';
import type { SignsClient } from './client.js';
import { afterInstant, type Cursor } from './feed.js';
import { landUnit, StagedLines, unitStem } from './landing.js';
import { readRange } from './range-reader.js';
import { liveRange, position, span, splitLargest, type LiveRange } from './ranges.js';
import type { SignsEventsOptions } from './events-options.js';
import { CheckpointWriter } from '../context.js';

export class EventsRun {
  readonly #options: SignsEventsOptions;
  readonly #context: RunContext;
  readonly #client: SignsClient;
  readonly #checkpoint: EventsCheckpoint;
  readonly #ranges: LiveRange[];
  readonly #towns: Set<string>;
  readonly #checkpoints: CheckpointWriter<EventsCheckpoint>;
  /** Stops every reader when one fails (or the run is interrupted); each lands the unit in hand. */
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  /** The first reader's failure: what the run reports. */
  #failure: { error: unknown } | undefined;
  /** Last units of finished ranges, landing while their readers move on. */
  readonly #tails: Promise<void>[] = [];
  /**
   * Units land at most as many at a time as there are cores and as the memory
   * budget feeds DuckDB threads, whatever the number of readers: more would only
   * contend for the CPU, and each holds its memory.
   */
  readonly #landings: ReturnType<typeof pLimit>;
  #staged = 0;
  #readers = 0;
  readonly stats = {
    events: 0,
    landed: 0,
    quarantined: 0,
    pages: 0,
    bursts: [] as { instant: string; events: number }[],
  };

  constructor(
    options: SignsEventsOptions,
    context: RunContext,
    client: SignsClient,
    checkpoint: EventsCheckpoint,
    landings: number,
  ) {
    this.#landings = pLimit(Math.max(1, Math.min(availableParallelism(), landings)));
    this.#options = options;
    this.#context = context;
    this.#client = client;
    this.#checkpoint = checkpoint;
    this.#ranges = checkpoint.ranges.map(liveRange);
    this.#towns = new Set(checkpoint.towns);
    this.#checkpoints = new CheckpointWriter(context.state);
    this.#signal = AbortSignal.any([context.signal, this.#stop.signal]);
  }

  #stagedLines(): StagedLines {
    return new StagedLines(join(this.#context.staging, `unit-${++this.#staged}.ndjson`));
  }

  get checkpoint(): EventsCheckpoint {
    return this.#checkpoint;
  }

  /** Saves the checkpoint from the committed cursors; saves never overlap. */
  save(): Promise<void> {
    this.#checkpoint.ranges = this.#ranges.map((r) => r.state);
    this.#checkpoint.towns = [...this.#towns].sort();
    return this.#checkpoints.save(this.#checkpoint);
  }

  async run(): Promise<void> {
    const total = this.#ranges.reduce((sum, r) => sum + span(r, Date.now()), 0);
    this.#context.progress.setTotal(Math.max(1, Math.round(total / 1000)));
    const workers = Array.from({ length: this.#options.concurrency }, () =>
      this.#worker().catch((error: unknown) => {
        // The others stop at once (their requests are cancelled), keeping what they landed.
        this.#failure ??= { error };
        this.#stop.abort(error);
        throw error;
      }),
    );
    const results = await Promise.allSettled([...workers]);
    results.push(...(await Promise.allSettled(this.#tails)));
    await this.#checkpoints.settled();
    if (this.#failure) throw this.#failure.error as Error;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason as Error;
  }

  async #worker(): Promise<void> {
    for (;;) {
      if (this.#signal.aborted) return;
      let range = this.#ranges.find((r) => !r.claimed && !r.finished);
      if (range) range.claimed = true;
      else {
        // An idle reader takes the upper half of the range with the most work left.
        range = splitLargest(this.#ranges, Date.now(), this.#options.limit);
        if (range) await this.save();
      }
      if (!range) return;
      try {
        await this.#read(range);
      } finally {
        range.claimed = false;
      }
    }
  }

  async #read(range: LiveRange): Promise<void> {
    let lines = this.#stagedLines();
    // Each reader lands through a connection of its own; they share one database.
    let connection: Database | undefined;
    const parts = join(this.#context.staging, `parts-${++this.#readers}`);
    // One unit lands in the background while the reader fetches the next one.
    let landing: Promise<void> = Promise.resolve();
    const land = async (unit: StagedLines, start: Cursor, end: Cursor): Promise<void> => {
      if (unit.rows > 0) {
        connection ??= await (await this.#context.database()).fork();
        await this.#land(connection, unit, start, parts);
      }
      // Only now, with the unit's files in place, does the checkpoint move past them.
      range.state.cursor = end;
      await this.save();
    };
    const flush = async (wait: boolean, end?: Cursor): Promise<void> => {
      await landing; // at most one unit in flight; its failure surfaces here
      const unit = lines;
      lines = this.#stagedLines();
      landing = land(unit, range.state.cursor, end ?? range.live);
      landing.catch(() => undefined); // awaited later; never left unhandled
      if (wait) await landing;
    };
    let complete: boolean;
    try {
      complete = await readRange(range, {
        client: this.#client,
        limit: this.#options.limit,
        townCode: this.#options.town_code,
        unitRows: this.#options.unit_rows,
        signal: this.#signal,
        stage: (taken) => lines.add(taken),
        staged: () => lines.rows,
        flush,
        burst: (instant, townless) =>
          this.#throughBurst(range, instant, townless, (taken) => lines.add(taken)),
        onPage: (outcome) => {
          this.stats.pages++;
          this.stats.events += outcome.taken.positions.length;
          for (const town of outcome.towns) this.#towns.add(town);
        },
        onProgress: (rows, done) => this.#context.progress.add({ rows, requests: 1, done }),
      });
    } catch (error) {
      await landing.catch(() => undefined);
      await lines.discard();
      connection?.close();
      throw error;
    }
    // The range's last unit lands in the background; the reader takes other work.
    // A range leaves the checkpoint only once its last unit is in place.
    const tail = landing
      .then(async () => {
        if (complete) {
          this.#ranges.splice(this.#ranges.indexOf(range), 1);
          await this.save();
        }
      })
      .finally(() => connection?.close());
    tail.catch(() => undefined); // awaited by run()
    this.#tails.push(tail);
  }

  /** Lands one unit (its files named after its first position) and records it. */
  async #land(db: Database, unit: StagedLines, start: Cursor, parts: string): Promise<void> {
    const t0 = performance.now();
    const context = this.#context;
    const stem = unitStem(context.stepId, position(start));
    const landed = await this.#landings(async () => {
      const result = await landUnit(db, context.output, context.staging, stem, unit, parts);
      // What the landing freed goes back to the system before the next unit (once it adds up).
      await db.releaseMemory();
      return result;
    });
    for (const file of landed.files) await context.recordFile(file);
    this.stats.landed += landed.rows;
    this.stats.quarantined += landed.quarantined;
    this.#checkpoint.events += landed.rows;
    this.#checkpoint.quarantined += landed.quarantined;
    const ms = Math.round(performance.now() - t0);
    context.log.log(
      'debug',
      'signs.unit',
      `landed ${landed.rows} events in ${landed.files.length} files (${ms} ms)`,
      { rows: landed.rows, files: landed.files.length, ms },
    );
  }

  /**
   * An instant with more events than a chunk holds, read per town (burst.ts).
   * Events that even that cannot reach stop the run, or are recorded as a gap.
   */
  async #throughBurst(
    range: LiveRange,
    instant: string,
    townless: boolean,
    take: (taken: Parameters<StagedLines['add']>[0]) => Promise<void>,
  ): Promise<void> {
    const { limit, town_code: only, unreachable } = this.#options;
    const towns = burstTowns(only, only ? [] : [...this.#towns, ...(await this.#datasetTowns())]);
    const gap = (town: string | null, reason: string): void => {
      if (unreachable === 'fail') {
        throw new RunError(
          `signs.events: ${reason}. Events may be missing there: rerun with the option unreachable: record to pass the instant and record the gap in the manifest`,
        );
      }
      this.#checkpoint.gaps.push({ instant, town_code: town, reason });
      this.#context.log.log('warn', 'signs.gap', `Passing ${instant} with a gap: ${reason}`, {
        instant,
        town_code: town,
      });
    };
    if (townless && !only)
      gap(
        null,
        `events without a town code share the instant ${instant} with more than ${limit} others; those past the first chunk cannot be read per town`,
      );
    const { found, events } = await readBurst({
      client: this.#client,
      instant,
      towns,
      limit,
      seen: range.live.seen,
      concurrency: this.#options.concurrency,
      signal: this.#signal,
      take,
      gap,
      onPage: () => this.stats.pages++,
    });
    this.stats.events += found;
    this.stats.bursts.push({ instant, events });
    this.#context.log.log(
      'info',
      'signs.burst',
      `${instant} holds ${events} events: read per town code (${towns.length} codes)`,
      { instant, events, towns: towns.length },
    );
    range.live = { offset: afterInstant(instant), seen: [] };
  }

  /** Town codes of the events and snapshot datasets (views that are empty until extracted). */
  async #datasetTowns(): Promise<string[]> {
    const db = await this.#context.database();
    const rows: string[] = [];
    for (const view of ['signs_events', 'signs_snapshot']) {
      for (const row of await db.all(
        `SELECT DISTINCT location_county_code AS code FROM ${quotedIdentifier(view)} WHERE location_county_code IS NOT NULL`,
      )) {
        rows.push(String(row['code']));
      }
    }
    return rows;
  }
}
