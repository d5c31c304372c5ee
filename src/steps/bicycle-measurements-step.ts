/**
 * Step kind `bicycle.measurements`: hourly counts of the selected locations over
 * [start, end) into bicycle/measurements/date=YYYY-MM-DD/data.parquet, one row
 * per location and hour. The work is cut into period windows x location
 * batches whose sizes follow the limits learned from the service's refusals.
 * Each batch is staged atomically and listed in the checkpoint; once every
 * batch covering a date is staged, that date partition is rewritten with the
 * run's rows in place of what it held for those locations and hours. A killed run resumes
 * where it stopped; a rerun or an overlapping run replaces, never duplicates.
 */
import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pLimit from 'p-limit';
import { z } from 'zod';
import { Database, PARQUET_FORMAT, quotedString } from '../duckdb/database.js';
import { MIN_BUDGET } from '../duckdb/memory.js';
import { InputError, RunError } from '../errors.js';
import { defineStepKind, type StepContext } from './step-kind.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import {
  Sizer,
  WorkPlan,
  classifyRefusal,
  emptyLimits,
  nextSize,
  type Batch,
  type LearnedLimits,
} from '../sources/bicycle/batches.js';
import { BicycleClient, type Selection } from '../sources/bicycle/client.js';
import {
  BICYCLE_QUARANTINE_DATASET,
  MEASUREMENTS_DATASET,
  MEASUREMENTS_VIEW_COLUMNS,
  UnreadableBodyError,
  DateCommits,
  quarantinedRows,
  stageBatch,
} from '../sources/bicycle/landing.js';
import {
  MIN_PREFIX_LENGTH,
  describeSelection,
  readPolygon,
  resolveSelection,
  type CatalogLocation,
  type SelectionSpec,
} from '../sources/bicycle/selection.js';
import { commitFile, exists, temporaryPath, makeFolder } from '../util/fs.js';
import { HOUR_MS, formatSecondTimestamp, parseSecondTimestamp } from '../util/time.js';
import { LOCATIONS_DATASET } from './bicycle-locations-step.js';
import { httpClientFor, requestOptions } from './http-options.js';

const hourTimestamp = z
  .string()
  .refine((t) => parseSecondTimestamp(t) !== undefined, {
    message: 'must be a UTC timestamp like 2024-03-01T00:00:00Z (local times are refused)',
  })
  .refine((t) => (parseSecondTimestamp(t) ?? 0) % HOUR_MS === 0, {
    message: 'must be a whole hour (minutes and seconds 00), like 2024-03-01T05:00:00Z',
  });

/** A list option: a YAML list, or one comma-separated text (as a param gives it). */
const textList = z.preprocess(
  (value) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : value,
  z.array(z.string().trim().min(1, 'must not be empty')),
);

export const bicycleMeasurementsOptions = z
  .strictObject({
    start: hourTimestamp.describe('Start of the period (UTC, whole hour, included).'),
    end: hourTimestamp.describe('End of the period (UTC, whole hour, excluded).'),
    locations: textList
      .nullish()
      .describe('Location ids (a list, or a comma-separated text). One selection is required.'),
    prefixes: textList
      .nullish()
      .describe(`Location id prefixes, each at least ${MIN_PREFIX_LENGTH} characters.`),
    polygon: z
      .string()
      .min(1)
      .nullish()
      .describe(
        'Path of a GeoJSON file: a Polygon, a Feature with one, or a FeatureCollection of one such Feature.',
      ),
    server_side: z
      .boolean()
      .default(false)
      .describe(
        'Send prefixes or the polygon to the service as given (4.2, 4.3) instead of resolving them against the catalog; falls back to id batches when the service answers too many locations. Default false.',
      ),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(32)
      .default(4)
      .describe('Requests in flight at once. Default 4.'),
    locations_per_request: z
      .number()
      .int()
      .min(1)
      .default(100)
      .describe(
        'First guess of the locations one request may name; refusals and successes adjust it, and what is learned is kept for later runs. Default 100.',
      ),
    window_days: z
      .number()
      .int()
      .min(1)
      .default(31)
      .describe(
        'First guess of the longest period one request may cover, in days; learned like locations_per_request. Default 31.',
      ),
    ...requestOptions(120_000),
  })
  .superRefine((options, ctx) => {
    const given = (['locations', 'prefixes', 'polygon'] as const).filter(
      (key) => options[key] !== undefined && options[key] !== null,
    );
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: given.length > 1 ? [given[1]!] : [],
        message:
          given.length === 0
            ? 'needs one selection: locations, prefixes or polygon'
            : `give one selection only, not ${given.join(' and ')}`,
      });
    }
    if (options.locations?.length === 0)
      ctx.addIssue({ code: 'custom', path: ['locations'], message: 'must name a location' });
    if (options.prefixes?.length === 0)
      ctx.addIssue({ code: 'custom', path: ['prefixes'], message: 'must name a prefix' });
    options.prefixes?.forEach((prefix, i) => {
      if (prefix.length < MIN_PREFIX_LENGTH) {
        ctx.addIssue({
          code: 'custom',
          path: ['prefixes', i],
          message: `a prefix has at least ${MIN_PREFIX_LENGTH} characters, got "${prefix}"`,
        });
      }
    });
    if (options.server_side && options.locations)
      ctx.addIssue({
        code: 'custom',
        path: ['server_side'],
        message: 'applies to prefixes and polygon only',
      });
    const start = parseSecondTimestamp(options.start);
    const end = parseSecondTimestamp(options.end);
    if (start !== undefined && end !== undefined && end <= start)
      ctx.addIssue({
        code: 'custom',
        path: ['end'],
        message: `must be after start (${options.start}), got ${options.end}`,
      });
    if (start !== undefined && start >= Date.now())
      ctx.addIssue({
        code: 'custom',
        path: ['start'],
        message: `is in the future (${options.start}): there are no measurements yet`,
      });
  });

export type BicycleMeasurementsOptions = z.output<typeof bicycleMeasurementsOptions>;

interface StagedRecord extends Batch {
  file: string;
  rows: number;
  quarantined: number;
}

const checkpointSchema = z.object({
  version: z.literal(1),
  limits: z.object({
    locations: z.object({ max_ok: z.number().nullable(), min_fail: z.number().nullable() }),
    period_hours: z.object({ max_ok: z.number().nullable(), min_fail: z.number().nullable() }),
  }),
  run: z
    .object({
      key: z.string(),
      start: z.string(),
      end: z.string(),
      batches: z.array(
        z.object({
          from: z.number(),
          to: z.number(),
          ids: z.array(z.string()),
          file: z.string(),
          rows: z.number(),
          quarantined: z.number(),
        }),
      ),
    })
    .nullable(),
});

type MeasurementsCheckpoint = z.output<typeof checkpointSchema>;

function readCheckpoint(
  raw: Record<string, unknown> | undefined,
  stepId: string,
): MeasurementsCheckpoint {
  if (!raw || Object.keys(raw).length === 0)
    return { version: 1, limits: emptyLimits(), run: null };
  const parsed = checkpointSchema.safeParse(raw);
  if (!parsed.success) {
    throw new RunError(
      `The checkpoint of ${stepId} is damaged (${parsed.error.issues[0]?.message ?? 'unreadable'}); start the step over with --reset ${stepId}`,
    );
  }
  return parsed.data;
}

/** The selection of the options (the polygon read from its file). */
async function selectionSpec(options: BicycleMeasurementsOptions): Promise<SelectionSpec> {
  if (options.locations) return { mode: 'locations', ids: [...new Set(options.locations)] };
  if (options.prefixes) return { mode: 'prefixes', prefixes: [...new Set(options.prefixes)] };
  const file = options.polygon!;
  const read = await readPolygon(resolve(file));
  if ('problems' in read) throw new InputError(`polygon ${file}: ${read.problems.join('; ')}`);
  return { mode: 'polygon', file, polygon: read.polygon };
}

/** Sizes a plan would use: what is known to work, else the guess. */
function plannedSizes(
  limits: LearnedLimits,
  options: BicycleMeasurementsOptions,
): { locations: number; hours: number } {
  const settled = (limit: LearnedLimits['locations'], guess: number): number =>
    limit.max_ok ?? nextSize(limit, guess);
  return {
    locations: settled(limits.locations, options.locations_per_request),
    hours: settled(limits.period_hours, options.window_days * 24),
  };
}

/** The catalog: the bicycle/locations dataset when there is one, else 4.4. */
async function readCatalog(
  output: string,
  db: () => Promise<Database>,
  fetch?: () => Promise<unknown>,
): Promise<CatalogLocation[] | undefined> {
  const file = join(output, LOCATIONS_DATASET, 'data.parquet');
  if (await exists(file)) {
    const rows = await (
      await db()
    ).all(
      `SELECT location_id AS id, longitude, latitude FROM read_parquet(${quotedString(file)}) WHERE location_id IS NOT NULL`,
    );
    return rows as unknown as CatalogLocation[];
  }
  if (!fetch) return undefined;
  const value = (await fetch()) as { features: unknown[] };
  return value.features.flatMap((feature): CatalogLocation[] => {
    const f = feature as {
      properties?: { id?: unknown };
      geometry?: { coordinates?: unknown[] };
    } | null;
    const id = f?.properties?.id;
    if (typeof id !== 'string' || id === '') return [];
    const [longitude, latitude] = (f?.geometry?.coordinates ?? []).map((n) =>
      typeof n === 'number' ? n : Number(n),
    );
    return [
      {
        id,
        longitude: Number.isFinite(longitude) ? longitude! : null,
        latitude: Number.isFinite(latitude) ? latitude! : null,
      },
    ];
  });
}

/** The sizes a run sends, and whether it still sends the selection as given (server side). */
interface Sizing {
  locations: Sizer;
  hours: Sizer;
  serverSide: boolean;
}

/** The catalog a plan can use without the network: the dataset of an earlier run, if any. */
async function catalogForPlan(output: string): Promise<CatalogLocation[] | undefined> {
  if (!(await exists(join(output, LOCATIONS_DATASET, 'data.parquet')))) return undefined;
  const db = await Database.open({ budget: MIN_BUDGET, threads: 1 });
  try {
    return await readCatalog(output, () => Promise.resolve(db));
  } finally {
    db.close();
  }
}

function runKey(
  spec: SelectionSpec,
  serverSide: boolean,
  ids: readonly string[],
  from: number,
  to: number,
): string {
  return createHash('sha256')
    .update(JSON.stringify({ from, to, ids, mode: spec.mode, serverSide }))
    .digest('hex')
    .slice(0, 16);
}

function batchStem(batch: Batch): string {
  return `b${createHash('sha256')
    .update(JSON.stringify([batch.from, batch.to, batch.ids]))
    .digest('hex')
    .slice(0, 20)}`;
}

export const bicycleMeasurementsStep = defineStepKind<BicycleMeasurementsOptions>({
  kind: 'bicycle.measurements',
  description:
    'Download hourly bicycle counts of a selection over a period into bicycle/measurements',
  options: bicycleMeasurementsOptions,
  source: 'bicycle',
  outputs: () => [MEASUREMENTS_DATASET],
  views: { bicycle_measurements: MEASUREMENTS_VIEW_COLUMNS },
  async check(options) {
    if (!options.polygon) return [];
    const read = await readPolygon(resolve(options.polygon));
    return 'problems' in read ? read.problems.map((p): [string[], string] => [['polygon'], p]) : [];
  },
  async describe(options, context) {
    const from = parseSecondTimestamp(options.start)!;
    const to = parseSecondTimestamp(options.end)!;
    const spec = await selectionSpec(options);
    const checkpoint = readCheckpoint(context.checkpoint, context.stepId);
    const sizes = plannedSizes(checkpoint.limits, options);
    const hours = (to - from) / HOUR_MS;
    const lines = [
      `measurements of ${describeSelection(spec)} for ${options.start} <= hour < ${options.end} (${hours.toLocaleString('en')} hours) into ${MEASUREMENTS_DATASET}`,
    ];
    const learned =
      checkpoint.limits.locations.max_ok !== null || checkpoint.limits.period_hours.max_ok !== null;
    lines.push(
      `requests of up to ${sizes.locations} locations x ${sizes.hours} hours (${learned ? 'learned by earlier runs' : 'first guesses; refusals adjust them'})`,
    );
    const catalog =
      spec.mode === 'locations' && !options.server_side
        ? undefined
        : await catalogForPlan(context.output);
    let ids: string[] | undefined;
    if (spec.mode === 'locations') ids = spec.ids;
    else if (catalog) ids = resolveSelection(spec, catalog);
    const windows = Math.ceil(hours / sizes.hours);
    if (ids === undefined) {
      lines.push(
        `${windows} window(s); the locations are resolved against the catalog at run time`,
      );
      return lines;
    }
    const perWindow = options.server_side ? 1 : Math.ceil(ids.length / sizes.locations);
    lines.push(
      `${ids.length} location(s): ${windows} window(s) x ${perWindow} batch(es) = ${(windows * perWindow).toLocaleString('en')} request(s) expected`,
    );
    if (checkpoint.run)
      lines.push(
        `an unfinished run has ${checkpoint.run.batches.length} batch(es) staged: a run with the same period and selection resumes from there`,
      );
    return lines;
  },
  async reset(_options, context) {
    await rm(context.staging, {
      recursive: true,
      force: true,
    });
  },
  async run(options, context) {
    const upstream = context.upstream.bicycle;
    if (!upstream) throw new RunError('bicycle.measurements: no bicycle upstream configured');
    return new MeasurementsRun(options, context, upstream).run();
  },
});

class MeasurementsRun {
  readonly #options: BicycleMeasurementsOptions;
  readonly #context: StepContext;
  readonly #upstream: NonNullable<StepContext['upstream']['bicycle']>;
  readonly #staging: string;
  #saving: Promise<void> = Promise.resolve();

  constructor(
    options: BicycleMeasurementsOptions,
    context: StepContext,
    upstream: NonNullable<StepContext['upstream']['bicycle']>,
  ) {
    this.#options = options;
    this.#context = context;
    this.#upstream = upstream;
    this.#staging = context.staging;
  }

  async run() {
    const options = this.#options;
    const context = this.#context;
    const from = parseSecondTimestamp(options.start)!;
    const to = parseSecondTimestamp(options.end)!;
    const spec = await selectionSpec(options);
    const http = httpClientFor(options, context);
    try {
      const tokens = new TokenSource(http, this.#upstream);
      const client = new BicycleClient(http, tokens, this.#upstream.url);
      const catalog = (await readCatalog(
        context.output,
        () => context.database(),
        async () => {
          context.progress.add({ requests: 1 });
          return (await client.locations(context.signal)).value;
        },
      ))!;
      const ids = resolveSelection(spec, catalog);
      if (spec.mode === 'locations' && ids.length < spec.ids.length) {
        const unknown = spec.ids.filter((id) => !ids.includes(id));
        context.log.log(
          'warn',
          'bicycle.unknown_locations',
          `${unknown.length} listed location id(s) are not in the catalog and are left out: ${unknown.slice(0, 10).join(', ')}${unknown.length > 10 ? ', ...' : ''}`,
          { unknown: unknown.length },
        );
      }
      if (ids.length === 0) {
        throw new InputError(
          `${context.stepId}: the selection (${describeSelection(spec)}) matches no location of the catalog (${catalog.length} locations)`,
        );
      }
      // One DuckDB thread per statement: batches are staged one at a time beside the
      // commit's connection and the network; more threads only contend.
      const db = await context.database();
      return await db.withThreads(1, async () => {
        // Dates are rewritten on a connection of their own while later batches are fetched.
        const committer = await db.fork();
        try {
          return await this.#fetchAndCommit(client, http, spec, ids, from, to, committer);
        } finally {
          committer.close();
        }
      });
    } finally {
      await http.close();
    }
  }

  #save(checkpoint: MeasurementsCheckpoint): Promise<void> {
    const snapshot = structuredClone(checkpoint);
    this.#saving = this.#saving.then(() =>
      this.#context.state.save(snapshot as unknown as Record<string, unknown>),
    );
    return this.#saving;
  }

  /**
   * A request refused with a 400: a limit is learned from "too many locations"
   * or "period too long" (the caller puts the batch back, to be cut again at
   * the new sizes); server-side selections fall back to id batches; any other
   * refusal stops the run with the service's message.
   */
  #learnFromRefusal(
    message: string,
    batch: Batch,
    probes: { locations: boolean; hours: boolean },
    sizing: Sizing,
    sentServerSide: boolean,
    selection: { mode: SelectionSpec['mode']; locations: number },
  ): void {
    const hours = (batch.to - batch.from) / HOUR_MS;
    const size = batch.ids.length;
    const refusal = classifyRefusal(message);
    if (refusal === 'locations') {
      sizing.locations.settled(size, false, probes.locations);
      sizing.hours.settled(hours, undefined, probes.hours);
      if (sentServerSide) {
        sizing.serverSide = false;
        this.#context.log.log(
          'info',
          'bicycle.fallback',
          `The service refused the ${selection.mode} as too many locations (${message}); asking for the ${selection.locations} matching locations in batches instead`,
        );
      } else if (size <= 1) {
        throw new RunError(`The bicycle service refuses even one location per request: ${message}`);
      }
      this.#log('limit', `${message}: ${size} locations per request is too many`);
      return;
    }
    if (refusal === 'period') {
      sizing.hours.settled(hours, false, probes.hours);
      sizing.locations.settled(size, undefined, probes.locations);
      if (hours <= 1)
        throw new RunError(`The bicycle service refuses even one hour per request: ${message}`);
      this.#log('limit', `${message}: ${hours} hours per request is too long`);
      return;
    }
    sizing.locations.settled(size, undefined, probes.locations);
    sizing.hours.settled(hours, undefined, probes.hours);
    const text = `The bicycle service refused the request for ${formatSecondTimestamp(batch.from)} .. ${formatSecondTimestamp(batch.to)}: ${message}`;
    if (sentServerSide && /prefix|polygon/i.test(message)) throw new InputError(text);
    throw new RunError(text);
  }

  /** Writes the run's quarantined rows (or removes an old quarantine file of the same run). */
  async #writeQuarantine(
    db: Database,
    key: string,
    quarantined: number,
    files: string[],
  ): Promise<void> {
    const context = this.#context;
    const quarantineFile = join(
      context.output,
      BICYCLE_QUARANTINE_DATASET,
      `${context.stepId}-${key}.parquet`,
    );
    if (quarantined === 0) {
      await rm(quarantineFile, { force: true });
      return;
    }
    await makeFolder(join(context.output, BICYCLE_QUARANTINE_DATASET));
    const temporary = temporaryPath(quarantineFile, context.scratch);
    await db.run(
      `COPY ${quarantinedRows(files)} TO ${quotedString(temporary)} (${PARQUET_FORMAT})`,
    );
    await commitFile(temporary, quarantineFile);
    await context.recordFile(quarantineFile);
    context.log.log(
      'warn',
      'bicycle.quarantine',
      `${quarantined} row(s) could not be kept; see ${BICYCLE_QUARANTINE_DATASET} for each with its reason`,
      { quarantined },
    );
  }

  /**
   * The checkpoint this run starts from: the learned limits, and the batches an
   * unfinished run with the same key (period and selection) staged. Staged files
   * the checkpoint does not list (a run killed before recording them) are removed;
   * a run with another key is set aside.
   */
  async #resume(key: string): Promise<{ current: MeasurementsCheckpoint; staged: StagedRecord[] }> {
    const options = this.#options;
    const context = this.#context;
    const checkpoint = readCheckpoint(context.checkpoint, context.stepId);
    let run = checkpoint.run;
    if (run && run.key !== key) {
      context.log.log(
        'warn',
        'bicycle.abandoned',
        `An unfinished run for ${run.start} .. ${run.end} is set aside: this run's period or selection differs (the dates it had completed keep its rows; its other staged batches are dropped)`,
        { staged_batches: run.batches.length },
      );
      run = null;
    }
    await makeFolder(this.#staging);
    const staged: StagedRecord[] = [];
    for (const batch of run?.batches ?? []) {
      if (await exists(join(this.#staging, batch.file))) staged.push(batch);
    }
    const keep = new Set(staged.map((b) => b.file));
    for (const name of await readdir(this.#staging)) {
      if (!keep.has(name)) await rm(join(this.#staging, name), { recursive: true, force: true });
    }
    if (staged.length > 0)
      context.log.log(
        'info',
        'bicycle.resume',
        `Resuming: ${staged.length} batch(es) of an unfinished run are already staged`,
        { staged_batches: staged.length },
      );
    const current: MeasurementsCheckpoint = {
      version: 1,
      limits: checkpoint.limits,
      run: { key, start: options.start, end: options.end, batches: staged },
    };
    await this.#save(current);
    return { current, staged };
  }

  async #fetchAndCommit(
    client: BicycleClient,
    http: { requests: number },
    spec: SelectionSpec,
    ids: string[],
    from: number,
    to: number,
    committer: Database,
  ) {
    const options = this.#options;
    const context = this.#context;
    const key = runKey(spec, options.server_side, ids, from, to);
    const { current, staged } = await this.#resume(key);
    const limits = current.limits;

    const plan = new WorkPlan(ids, [from, to], staged);
    const locationsSizer = new Sizer(limits.locations, options.locations_per_request);
    const hoursSizer = new Sizer(limits.period_hours, options.window_days * 24);
    const totalHours = (to - from) / HOUR_MS;
    const sizing: Sizing = {
      locations: locationsSizer,
      hours: hoursSizer,
      serverSide: options.server_side && spec.mode !== 'locations',
    };
    const expected = (): number => {
      const sizes = plannedSizes(limits, options);
      return plan.requestsLeft(sizing.serverSide ? ids.length : sizes.locations, sizes.hours);
    };
    context.progress.setTotal(staged.length + expected());
    const stats = { boundary: 0, refusals: 0, rowsIn: 0, requests: 0 };
    const db = await context.database();
    // Batches are staged one at a time on the run's connection.
    const land = pLimit(1);
    let failure: Error | undefined;
    const fail = (error: unknown): void => {
      failure ??= error instanceof Error ? error : new Error(String(error));
    };

    // A date is rewritten (on `committer`) as soon as the staged batches cover every
    // location of the run over its hours of that date.
    const stagedFiles = (): { file: string; from: number; to: number }[] =>
      current.run!.batches.map((b) => ({
        file: join(this.#staging, b.file),
        from: b.from,
        to: b.to,
      }));
    const commits = await DateCommits.open(
      committer,
      { output: context.output, ids, from, to },
      stagedFiles,
      staged,
    );

    const process = async (
      batch: Batch,
      probes: { locations: boolean; hours: boolean },
    ): Promise<void> => {
      const hours = (batch.to - batch.from) / HOUR_MS;
      const selection: Selection = sizing.serverSide
        ? spec.mode === 'prefixes'
          ? { prefixes: spec.prefixes }
          : { polygon: (spec as { polygon: unknown }).polygon }
        : { locations: batch.ids };
      const sentServerSide = sizing.serverSide;
      const stem = batchStem(batch);
      const body = join(this.#staging, `${stem}.json`);
      for (let attempt = 0; ; attempt++) {
        let answer;
        try {
          answer = await client.measurements(
            selection,
            formatSecondTimestamp(batch.from),
            formatSecondTimestamp(batch.to),
            body,
            context.signal,
          );
        } catch (error) {
          locationsSizer.settled(batch.ids.length, undefined, probes.locations);
          hoursSizer.settled(hours, undefined, probes.hours);
          throw error;
        }
        stats.requests++;
        context.progress.add({ requests: 1 });
        if (!answer.ok) {
          stats.refusals++;
          this.#learnFromRefusal(answer.message, batch, probes, sizing, sentServerSide, {
            mode: spec.mode,
            locations: ids.length,
          });
          plan.requeue([batch]);
          return;
        }
        locationsSizer.settled(
          batch.ids.length,
          sentServerSide ? undefined : true,
          probes.locations,
        );
        hoursSizer.settled(hours, true, probes.hours);
        try {
          const result = await land(async () => {
            const staged = await stageBatch(db, this.#staging, stem, body, batch);
            // What the staging freed goes back to the system before the next batch.
            await db.releaseMemory();
            return staged;
          });
          stats.boundary += result.boundary;
          stats.rowsIn += result.rows + result.quarantined + result.boundary;
          current.run!.batches.push({
            ...batch,
            file: `${stem}.parquet`,
            rows: result.rows,
            quarantined: result.quarantined,
          });
          await this.#save(current);
          commits.add(batch);
          context.progress.add({ rows: result.rows, done: 1 });
          return;
        } catch (error) {
          if (!(error instanceof UnreadableBodyError) || attempt >= options.retries) throw error;
          context.log.log(
            'warn',
            'http.retry',
            `${formatSecondTimestamp(batch.from)} .. ${formatSecondTimestamp(batch.to)}: ${error.message.slice(0, 300)}; asking again (attempt ${attempt + 2} of ${options.retries + 1})`,
          );
        } finally {
          await rm(body, { force: true });
        }
      }
    };

    const limit = pLimit(options.concurrency);
    const running = new Set<Promise<void>>();
    for (;;) {
      if (failure !== undefined || context.signal.aborted) break;
      if (limit.activeCount + limit.pendingCount >= options.concurrency) {
        await Promise.race(running);
        continue;
      }
      const locationSize = sizing.serverSide ? ids.length : locationsSizer.size(ids.length);
      const hourSize = hoursSizer.size(totalHours);
      const batch =
        locationSize === undefined || hourSize === undefined
          ? undefined
          : plan.next(locationSize, hourSize);
      if (!batch) {
        if (running.size === 0) {
          if (locationSize === undefined || hourSize === undefined)
            throw new Error('sizing stalled');
          break;
        }
        await Promise.race(running);
        continue;
      }
      const probes = {
        locations: sizing.serverSide ? false : locationsSizer.sent(batch.ids.length),
        hours: hoursSizer.sent((batch.to - batch.from) / HOUR_MS),
      };
      const task: Promise<void> = limit(() => process(batch, probes))
        .catch(fail)
        .finally(() => running.delete(task));
      running.add(task);
      context.progress.setTotal(current.run!.batches.length + running.size + expected());
    }
    await Promise.allSettled([...running]);
    await this.#saving;
    await commits.settle().catch(fail);
    if (failure !== undefined) throw failure;
    context.signal.throwIfAborted();
    if (commits.uncovered > 0)
      throw new Error(
        `${commits.uncovered} date(s) of the period are not covered by the staged batches`,
      );
    this.#log(
      'commit',
      `${current.run!.batches.length} batch(es) staged, ${commits.files.length} date partition(s) rewritten`,
    );
    for (const file of commits.files) await context.recordFile(file);
    const quarantined = current.run!.batches.reduce((sum, b) => sum + b.quarantined, 0);
    await this.#writeQuarantine(
      db,
      key,
      quarantined,
      stagedFiles().map((f) => f.file),
    );
    const rowsOut = current.run!.batches.reduce((sum, b) => sum + b.rows, 0);
    await this.#save({ version: 1, limits, run: null });
    await rm(this.#staging, { recursive: true, force: true });
    return {
      rowsIn: stats.rowsIn,
      rowsOut,
      notes: {
        locations: ids.length,
        batches: current.run!.batches.length,
        requests: stats.requests,
        http_requests: http.requests,
        refusals: stats.refusals,
        quarantined,
        partitions_written: commits.files.length,
        partitions_removed: commits.removed,
        rows_at_period_end_left_to_next_window: stats.boundary,
        learned_limits: {
          locations_per_request: limits.locations,
          hours_per_request: limits.period_hours,
        },
      },
    };
  }

  #log(event: string, message: string): void {
    this.#context.log.log('info', `bicycle.${event}`, message);
  }
}
