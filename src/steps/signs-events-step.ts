/**
 * Step kind `signs.events`: the traffic-sign event feed into signs/events,
 * exactly once. The first run backfills the history in parallel time ranges
 * (a reader that finishes takes half of the largest range left); later runs
 * continue from the end. Every unit of events is landed atomically before the
 * checkpoint that covers it is saved.
 */
import { readdir, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { z } from 'zod';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { RunError } from '../errors.js';
import { httpClientFor, requestOptions } from './http-options.js';
import { defineStepKind, type StepContext, type StepOutcome } from './step-kind.js';
import { STATE_FOLDER } from '../layout.js';
import { SignsClient, TOWN_CODE, TOWN_CODE_HELP } from '../sources/signs/client.js';
import {
  afterInstant,
  contentHash,
  offsetMs,
  processPage,
  toOffset,
  type Cursor,
  type PageOutcome,
  type TakenPage,
} from '../sources/signs/feed.js';
import {
  compactEvents,
  recoverCompaction,
  type CompactionPaths,
} from '../sources/signs/compaction.js';
import {
  EVENTS_DATASET,
  QUARANTINE_DATASET,
  landUnit,
  parseUnitFile,
  removeUncommitted,
  StagedLines,
  unitStem,
  type FeedPosition,
} from '../sources/signs/landing.js';
import { EVENTS_VIEW_COLUMNS } from '../sources/signs/schema.js';

const EPOCH = '1970-01-01T00:00:00.000Z';
/** Ranges shorter than this are not split further. */
const MIN_SPLIT_MS = 60_000;
/** A range is split only when its estimated rest is worth this many requests of a new reader. */
const MIN_SPLIT_PAGES = 8;
/** The first run plans this many ranges per reader: a reader that finishes takes the next one. */
const RANGES_PER_READER = 3;

const timestamp = z
  .string()
  .refine(
    (t) => toOffset(t) !== undefined && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/.test(t),
    'must be a UTC timestamp like 2024-01-01T00:00:00Z',
  );

export const signsEventsOptions = z.strictObject({
  limit: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(100)
    .describe('Events per request (1..100). Default 100.'),
  town_code: z
    .string()
    .regex(TOWN_CODE, TOWN_CODE_HELP)
    .optional()
    .describe('Read only this town code (e.g. GM0363)'),
  start: timestamp
    .optional()
    .describe('Where the first run starts. Default: the beginning of the feed.'),
  concurrency: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(4)
    .describe('Parallel readers during the backfill. Default 4.'),
  unit_rows: z
    .number()
    .int()
    .min(1)
    .default(10_000)
    .describe('Events landed per unit (file set). Default 10000.'),
  unreachable: z
    .enum(['fail', 'record'])
    .default('fail')
    .describe(
      'An instant that even per-town reads cannot get through: fail (default), or record the gap and go on',
    ),
  ...requestOptions(60_000),
});

export type SignsEventsOptions = z.output<typeof signsEventsOptions>;

interface RangeState {
  start: string;
  /** Exclusive end (the next range's start); null for the open range that follows the feed. */
  end: string | null;
  /** The committed cursor: everything before it is landed. */
  cursor: Cursor;
}

export interface Gap {
  instant: string;
  town_code: string | null;
  reason: string;
}

interface EventsCheckpoint {
  version: 1;
  town_code: string | null;
  ranges: RangeState[];
  towns: string[];
  gaps: Gap[];
  events: number;
  quarantined: number;
}

const checkpointSchema = z.object({
  version: z.literal(1),
  town_code: z.string().nullable(),
  ranges: z.array(
    z.object({
      start: z.string(),
      end: z.string().nullable(),
      cursor: z.object({ offset: z.string(), seen: z.array(z.string()) }),
    }),
  ),
  towns: z.array(z.string()),
  gaps: z.array(
    z.object({ instant: z.string(), town_code: z.string().nullable(), reason: z.string() }),
  ),
  events: z.number(),
  quarantined: z.number(),
});

function readCheckpoint(
  stepId: string,
  raw: Record<string, unknown> | undefined,
): EventsCheckpoint | undefined {
  if (!raw || Object.keys(raw).length === 0) return undefined;
  const parsed = checkpointSchema.safeParse(raw);
  if (!parsed.success) {
    throw new RunError(
      `The checkpoint of step ${stepId} is not one it can read (${parsed.error.issues[0]?.message ?? 'invalid'}); start over with --reset ${stepId}`,
    );
  }
  return parsed.data as EventsCheckpoint;
}

/** Where the step merges small files: its scratch folder and its journal. */
function compactionPaths(context: StepContext): CompactionPaths {
  return {
    output: context.output,
    scratch: context.scratch,
    journal: join(context.output, STATE_FOLDER, 'compaction', `${context.stepId}.json`),
  };
}

function position(cursor: Cursor): FeedPosition {
  return { ms: offsetMs(cursor.offset), index: cursor.seen.length };
}

type FeedPage = Awaited<ReturnType<SignsClient['events']>>;

/** The page a reader has asked for before it needs it, and its offset. */
interface Ahead {
  offset: string | undefined;
  page: Promise<FeedPage> | undefined;
}

/** The unit being read: its staged lines, written as the pages arrive. */
interface Buffered {
  lines: StagedLines;
}

/** A range as the readers work on it: the committed cursor and the live one, which runs ahead. */
interface LiveRange {
  state: RangeState;
  live: Cursor;
  claimed: boolean;
  finished: boolean;
  /** Events taken in this run, and the instant of the first, to estimate the work left. */
  taken: number;
  firstMs: number | undefined;
}

/**
 * Every municipality code the CBS can have issued so far (GM0000 .. GM1999): an
 * instant read per town reads all of them, so that towns never seen are read too.
 */
const TOWN_CODE_SWEEP: readonly string[] = Array.from(
  { length: 2000 },
  (_, i) => `GM${String(i).padStart(4, '0')}`,
);

class EventsRun {
  readonly #options: SignsEventsOptions;
  readonly #context: StepContext;
  readonly #client: SignsClient;
  readonly #checkpoint: EventsCheckpoint;
  readonly #ranges: LiveRange[];
  readonly #towns: Set<string>;
  #saving: Promise<void> = Promise.resolve();
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
  /** Where units are staged (cleared when the step starts) and how many have been. */
  readonly #staging: string;
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
    context: StepContext,
    client: SignsClient,
    checkpoint: EventsCheckpoint,
    landings: number,
  ) {
    this.#landings = pLimit(Math.max(1, Math.min(availableParallelism(), landings)));
    this.#options = options;
    this.#context = context;
    this.#client = client;
    this.#checkpoint = checkpoint;
    this.#ranges = checkpoint.ranges.map((state) => ({
      state,
      live: state.cursor,
      claimed: false,
      finished: false,
      taken: 0,
      firstMs: undefined,
    }));
    this.#towns = new Set(checkpoint.towns);
    this.#staging = context.staging;
    this.#signal = AbortSignal.any([context.signal, this.#stop.signal]);
  }

  #stagedLines(): StagedLines {
    return new StagedLines(join(this.#staging, `unit-${++this.#staged}.ndjson`));
  }

  get checkpoint(): EventsCheckpoint {
    return this.#checkpoint;
  }

  /** Saves the checkpoint from the committed cursors; saves never overlap. */
  save(): Promise<void> {
    this.#checkpoint.ranges = this.#ranges.map((r) => r.state);
    this.#checkpoint.towns = [...this.#towns].sort();
    const snapshot = JSON.parse(JSON.stringify(this.#checkpoint)) as Record<string, unknown>;
    this.#saving = this.#saving.then(() => this.#context.state.save(snapshot));
    return this.#saving;
  }

  async run(): Promise<void> {
    const total = this.#ranges.reduce((sum, r) => sum + this.#span(r), 0);
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
    await this.#saving;
    if (this.#failure) throw this.#failure.error;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  #span(range: LiveRange, now = Date.now()): number {
    const end = range.state.end === null ? now : offsetMs(range.state.end);
    return Math.max(0, end - offsetMs(range.live.offset));
  }

  async #worker(): Promise<void> {
    for (;;) {
      if (this.#signal.aborted) return;
      let range = this.#ranges.find((r) => !r.claimed && !r.finished);
      if (range) range.claimed = true;
      else range = await this.#split();
      if (!range) return;
      try {
        await this.#read(range);
      } finally {
        range.claimed = false;
      }
    }
  }

  /** Events left in a range, estimated from what its reader has seen so far (Infinity before it has seen any). */
  #estimatedRest(range: LiveRange, now: number): number {
    const covered = range.firstMs === undefined ? 0 : offsetMs(range.live.offset) - range.firstMs;
    if (covered <= 0) return Infinity;
    return (range.taken / covered) * this.#span(range, now);
  }

  /** Gives an idle reader the upper half of the range with the most work left. */
  async #split(): Promise<LiveRange | undefined> {
    const now = Date.now();
    // The open range follows the feed's tail, whose end is unknown: it is not split.
    const busy = this.#ranges.filter((r) => r.claimed && !r.finished && r.state.end !== null);
    const largest = busy.sort(
      (a, b) =>
        this.#estimatedRest(b, now) - this.#estimatedRest(a, now) ||
        this.#span(b, now) - this.#span(a, now),
    )[0];
    if (!largest || this.#span(largest, now) < MIN_SPLIT_MS) return undefined;
    if (this.#estimatedRest(largest, now) < MIN_SPLIT_PAGES * 2 * this.#options.limit)
      return undefined;
    const mid = new Date(
      offsetMs(largest.live.offset) + Math.floor(this.#span(largest, now) / 2),
    ).toISOString();
    const cursor: Cursor = { offset: mid, seen: [] };
    // Claimed before it is visible: the save below yields, and another idle reader must not take it too.
    const part: LiveRange = {
      state: { start: mid, end: largest.state.end, cursor },
      live: cursor,
      claimed: true,
      finished: false,
      taken: 0,
      firstMs: undefined,
    };
    largest.state.end = mid;
    this.#ranges.splice(this.#ranges.indexOf(largest) + 1, 0, part);
    await this.save();
    return part;
  }

  async #read(range: LiveRange): Promise<void> {
    const buffer: Buffered = { lines: this.#stagedLines() };
    // Each reader lands through a connection of its own; they share one database.
    let connection: Database | undefined;
    const parts = join(this.#staging, `parts-${++this.#readers}`);
    // One unit lands in the background while the reader fetches the next one.
    let landing: Promise<void> = Promise.resolve();
    const land = async (lines: StagedLines, start: Cursor, end: Cursor): Promise<void> => {
      if (lines.rows > 0) {
        const t0 = performance.now();
        connection ??= await (await this.#context.database()).fork();
        const stem = unitStem(this.#context.stepId, position(start));
        const db = connection;
        const landed = await this.#landings(async () => {
          const result = await landUnit(
            db,
            this.#context.output,
            this.#staging,
            stem,
            lines,
            parts,
          );
          // What the landing freed goes back to the system before the next unit.
          await db.releaseMemory();
          return result;
        });
        for (const file of landed.files) await this.#context.recordFile(file);
        this.stats.landed += landed.rows;
        this.stats.quarantined += landed.quarantined;
        this.#checkpoint.events += landed.rows;
        this.#checkpoint.quarantined += landed.quarantined;
        this.#context.log.log(
          'debug',
          'signs.unit',
          `landed ${landed.rows} events in ${landed.files.length} files (${Math.round(performance.now() - t0)} ms)`,
          {
            rows: landed.rows,
            files: landed.files.length,
            ms: Math.round(performance.now() - t0),
          },
        );
      }
      // Only now, with the unit's files in place, does the checkpoint move past them.
      range.state.cursor = end;
      await this.save();
    };
    const flush = async (wait: boolean): Promise<void> => {
      await landing; // at most one unit in flight; its failure surfaces here
      const lines = buffer.lines;
      buffer.lines = this.#stagedLines();
      landing = land(lines, range.state.cursor, range.live);
      landing.catch(() => undefined); // awaited later; never left unhandled
      if (wait) await landing;
    };
    let complete: boolean;
    try {
      complete = await this.#readPages(range, buffer, flush);
    } catch (error) {
      await landing.catch(() => undefined);
      await buffer.lines.discard();
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

  /**
   * Reads and takes the next page of a range; moves its live cursor. The parsed
   * page does not outlive this call: only what is taken goes on.
   */
  async #nextPage(range: LiveRange, ahead: Ahead): Promise<PageOutcome> {
    const { limit } = this.#options;
    const fetched =
      ahead.page && ahead.offset === range.live.offset
        ? ahead.page
        : this.#fetchPage(range.live.offset);
    ahead.page = undefined;
    const { events: page, body } = await fetched;
    this.stats.pages++;
    const end = range.state.end === null ? undefined : offsetMs(range.state.end);
    const outcome = processPage(page, body, range.live, limit, end);
    // The next request goes out now, while this page is staged: one reader waits on
    // the upstream, not on itself. Not past the range's end, nor into a crowded instant.
    if (!outcome.exhausted && !outcome.reachedEnd && !outcome.stuckAt && !this.#signal.aborted) {
      ahead.offset = outcome.next.offset;
      ahead.page = this.#fetchPage(outcome.next.offset);
      ahead.page.catch(() => undefined); // awaited with the next page, or dropped
    }
    for (const town of outcome.towns) this.#towns.add(town);
    const count = outcome.taken.positions.length;
    this.stats.events += count;
    range.taken += count;
    if (range.firstMs === undefined && outcome.firstInstant)
      range.firstMs = offsetMs(outcome.firstInstant);
    // The live cursor moves before anything yields: a split meanwhile must not cut into this page.
    range.live = outcome.next;
    return outcome;
  }

  #fetchPage(offset: string): Promise<FeedPage> {
    return this.#client.events({
      offset,
      limit: this.#options.limit,
      townCode: this.#options.town_code,
      signal: this.#signal,
    });
  }

  async #readPages(
    range: LiveRange,
    buffer: Buffered,
    flush: (wait: boolean) => Promise<void>,
  ): Promise<boolean> {
    const ahead: Ahead = { offset: undefined, page: undefined };
    const { unit_rows: unitRows } = this.#options;
    const { progress } = this.#context;
    const signal = this.#signal;
    for (;;) {
      if (signal.aborted) {
        await flush(true); // the unit in hand is finished, then the run stops
        return false;
      }
      const before = offsetMs(range.live.offset);
      const outcome = await this.#nextPage(range, ahead);
      await buffer.lines.add(outcome.taken);
      if (outcome.stuckAt)
        await this.#throughBurst(range, outcome.stuckAt, buffer, outcome.townless);
      progress.add({
        rows: outcome.taken.positions.length,
        requests: 1,
        done: Math.max(0, Math.round((offsetMs(range.live.offset) - before) / 1000)),
      });
      if (outcome.reachedEnd || outcome.exhausted) {
        await flush(false);
        // Done for this run. A range is complete only when it has seen its end:
        // one whose events simply ran out goes on from its cursor next run.
        range.finished = true;
        return outcome.reachedEnd;
      }
      if (buffer.lines.rows >= unitRows) await flush(false);
    }
  }

  /**
   * An instant with more events than a chunk holds: offset paging cannot get
   * past it, so it is read per town code: every code seen so far, every code of
   * the datasets, and every municipality code the CBS can have issued
   * (TOWN_CODE_SWEEP), so that towns never seen before are read too. Events
   * that even that cannot reach (more than a chunk of one town, or events
   * without a town code) stop the run, or are recorded as a gap.
   */
  async #throughBurst(
    range: LiveRange,
    instant: string,
    buffer: Buffered,
    townless: boolean,
  ): Promise<void> {
    const { limit, town_code: only, unreachable } = this.#options;
    const towns = only
      ? [only]
      : [...new Set([...this.#towns, ...(await this.#datasetTowns()), ...TOWN_CODE_SWEEP])].sort();
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
    const seen = new Set(range.live.seen);
    let index = limit;
    let found = 0;
    // Pages are fetched a few at a time and taken in town order (the feed index follows it).
    const fetch = pLimit(this.#options.concurrency);
    const pages = towns.map((town) =>
      fetch(() =>
        this.#client.events({ offset: instant, limit, townCode: town, signal: this.#signal }),
      ),
    );
    for (const page of pages) page.catch(() => undefined); // awaited in order below
    for (const town of towns) {
      // Taken off the queue: a page is not held once it has been read.
      const { events: page, body } = await pages.shift()!;
      this.stats.pages++;
      const taken: TakenPage = { body, positions: [], indexes: [] };
      let atInstant = 0;
      for (const [position, event] of page.entries()) {
        if (toOffset(event['publication_timestamp']) !== instant) continue;
        atInstant++;
        const hash = contentHash(JSON.stringify(event));
        if (seen.has(hash)) continue;
        seen.add(hash);
        taken.positions.push(position);
        taken.indexes.push(index++);
      }
      await buffer.lines.add(taken);
      found += taken.positions.length;
      if (page.length >= limit && atInstant === page.length)
        gap(
          town,
          `more than ${limit} events of town ${town} share the instant ${instant}; the feed cannot be paged past them`,
        );
    }
    this.stats.events += found;
    this.stats.bursts.push({ instant, events: seen.size });
    this.#context.log.log(
      'info',
      'signs.burst',
      `${instant} holds ${seen.size} events: read per town code (${towns.length} codes)`,
      { instant, events: seen.size, towns: towns.length },
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

/** Plans the first run: the history from the first event to now in time ranges, the last one open. */
async function planRanges(
  client: SignsClient,
  options: SignsEventsOptions,
  signal: AbortSignal,
): Promise<RangeState[]> {
  const start = toOffset(options.start ?? EPOCH)!;
  const open: RangeState = { start, end: null, cursor: { offset: start, seen: [] } };
  if (options.concurrency === 1) return [open];
  const { events: first } = await client.events({
    offset: start,
    limit: 1,
    townCode: options.town_code,
    signal,
  });
  const firstAt = toOffset(first[0]?.['publication_timestamp']);
  if (!firstAt) return [open];
  const from = offsetMs(firstAt);
  const now = Date.now();
  const count = Math.min(
    options.concurrency * RANGES_PER_READER,
    Math.floor((now - from) / MIN_SPLIT_MS),
  );
  if (count < 2) return [open];
  const bounds = Array.from({ length: count - 1 }, (_, i) =>
    new Date(from + Math.floor(((i + 1) * (now - from)) / count)).toISOString(),
  );
  const starts = [start, ...bounds];
  return starts.map((s, i) => ({
    start: s,
    end: bounds[i] ?? null,
    cursor: { offset: s, seen: [] },
  }));
}

async function removeStepFiles(output: string, stepId: string): Promise<void> {
  const folders = [join(output, QUARANTINE_DATASET)];
  for (const entry of await readdir(join(output, EVENTS_DATASET)).catch(() => []))
    folders.push(join(output, EVENTS_DATASET, entry));
  for (const folder of folders) {
    for (const name of await readdir(folder).catch(() => [])) {
      if (parseUnitFile(stepId, name)) await rm(join(folder, name), { force: true });
    }
  }
}

/** Reads the feed from the checkpoint (or plans the first run's ranges) and lands what is new. */
async function readFeed(
  options: SignsEventsOptions,
  context: StepContext,
  db: Database,
  client: SignsClient,
  http: { requests: number },
): Promise<StepOutcome> {
  const compaction = compactionPaths(context);
  // A merge a killed run left half done is finished (or dropped) before anything else.
  await recoverCompaction(compaction);
  let checkpoint = readCheckpoint(context.stepId, context.checkpoint);
  if (checkpoint && checkpoint.town_code !== (options.town_code ?? null)) {
    throw new RunError(
      `signs.events: the checkpoint of ${context.stepId} was made with town_code ${checkpoint.town_code ?? '(none)'}, the step now has ${options.town_code ?? '(none)'}; use --reset ${context.stepId} to start over`,
    );
  }
  if (!checkpoint) {
    checkpoint = {
      version: 1,
      town_code: options.town_code ?? null,
      ranges: await planRanges(client, options, context.signal),
      towns: [],
      gaps: [],
      events: 0,
      quarantined: 0,
    };
  } else {
    const removed = await removeUncommitted(
      context.output,
      context.stepId,
      checkpoint.ranges.map((r) => ({
        committed: position(r.cursor),
        endMs: r.end === null ? undefined : offsetMs(r.end),
      })),
    );
    if (removed > 0)
      context.log.log(
        'info',
        'signs.cleanup',
        `Removed ${removed} file(s) of units an interrupted run had not recorded`,
        { files: removed },
      );
  }
  // Units an interrupted run was reading or landing: read again from the checkpoint.
  await rm(context.staging, { recursive: true, force: true });
  const run = new EventsRun(options, context, client, checkpoint, db.memory.threads);
  await run.save();
  await run.run();
  await rm(context.staging, { recursive: true, force: true });
  // Every unit is landed and recorded: the partitions' small files are merged.
  const compacted = await compactEvents(db, compaction, context.stepId, context.signal);
  for (const file of compacted.merged) await context.recordFile(file);
  if (compacted.replaced > 0)
    context.log.log(
      'info',
      'signs.compaction',
      `Merged ${compacted.replaced.toLocaleString('en')} small files into ${compacted.merged.length.toLocaleString('en')} in ${compacted.partitions.toLocaleString('en')} partitions`,
      {
        replaced: compacted.replaced,
        merged: compacted.merged.length,
        partitions: compacted.partitions,
      },
    );
  const { stats } = run;
  context.log.log(
    'info',
    'signs.events',
    `${stats.events.toLocaleString('en')} new events in ${stats.pages.toLocaleString('en')} requests; ${stats.quarantined} quarantined`,
    { ...stats, bursts: stats.bursts.length },
  );
  return {
    rowsIn: stats.events,
    rowsOut: stats.landed,
    notes: {
      requests: http.requests,
      quarantined: stats.quarantined,
      ...(stats.bursts.length > 0 ? { bursts: stats.bursts } : {}),
      ...(run.checkpoint.gaps.length > 0 ? { gaps: run.checkpoint.gaps } : {}),
      feed_position: run.checkpoint.ranges.map((r) => r.cursor.offset),
    },
  };
}

export const signsEventsStep = defineStepKind<SignsEventsOptions>({
  kind: 'signs.events',
  description: 'Read the traffic-sign event feed into signs/events (exactly once, resumable)',
  options: signsEventsOptions,
  source: 'signs',
  outputs: () => [EVENTS_DATASET, QUARANTINE_DATASET],
  views: { signs_events: EVENTS_VIEW_COLUMNS },
  describe(options, context) {
    const checkpoint = (() => {
      try {
        return readCheckpoint(context.stepId, context.checkpoint);
      } catch {
        return undefined;
      }
    })();
    const filter = options.town_code ? `, town-code ${options.town_code}` : '';
    if (!checkpoint) {
      return [
        `reads the event feed from ${options.start ?? 'its beginning'} (limit ${options.limit}${filter})`,
        options.concurrency > 1
          ? `first run: backfills the history in ${options.concurrency} parallel time ranges, then follows the feed`
          : 'first run: reads the history with one reader',
      ];
    }
    const lines = checkpoint.ranges.map(
      (r) =>
        `${r.end === null ? 'continues' : 'backfill range'} from ${r.cursor.offset}${r.end ? ` to ${r.end}` : ''}`,
    );
    return [
      `reads the event feed (limit ${options.limit}${filter}); ${checkpoint.events.toLocaleString('en')} events landed so far`,
      ...lines,
    ];
  },
  async reset(_options, context) {
    await rm(compactionPaths(context).journal, { force: true });
    await removeStepFiles(context.output, context.stepId);
  },
  async run(options, context) {
    const upstream = context.upstream.signs;
    if (!upstream) throw new RunError('signs.events: no signs upstream configured');
    const http = httpClientFor(options, context);
    const client = new SignsClient(http, upstream.url);
    // One DuckDB thread per statement: units land on connections of their own, beside the readers.
    const db = await context.database();
    try {
      return await db.withThreads(1, () => readFeed(options, context, db, client, http));
    } finally {
      await http.close();
    }
  },
});
