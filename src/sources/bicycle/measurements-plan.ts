/**
 * The plan of a `bicycle.measurements` step: its locations (when they are known
 * before the run), the sizes of its requests, what an unfinished run has
 * staged, and, once the service's limits are settled, every request in order.
 * `validate` prints it; the run makes exactly those requests unless the service
 * refuses one (its limits came down) or the catalog fetched then differs.
 */
import { Database } from '../../duckdb/database.js';
import { MIN_BUDGET } from '../../duckdb/memory.js';
import { catalogFile, storedCatalog } from './catalog.js';
import { MEASUREMENTS_DATASET } from './landing.js';
import { planMeasurements, plannedBatches, runKey } from './plan.js';
import {
  describeSelection,
  resolveSelection,
  type CatalogLocation,
  type SelectionSpec,
} from './selection.js';
import { planPeriod, type Period } from './lookback.js';
import { settledSizes } from './sizing.js';
import { formatSecondTimestamp, parseSecondTimestamp } from '../../util/time.js';
import {
  selectionSpec,
  sizeGuesses,
  type BicycleMeasurementsOptions,
} from './measurements-options.js';
import { readMeasurementsCheckpoint } from './checkpoint.js';
import type { PlanContext } from '../context.js';
import { folderFilesOf } from '../../duckdb/folder-files.js';

/** One request of the plan: locations over [from, to). */
export interface PlannedBatch {
  from: string;
  to: string;
  locations: string[];
}

export interface MeasurementsStepPlan {
  selection: string;
  start: string;
  end: string;
  hours: number;
  /** The run's locations; null when they are resolved against the catalog at run time. */
  locations: string[] | null;
  /** Sent to the service as given (one request per window). */
  server_side: boolean;
  sizes: { locations: number; hours: number };
  /** The sizes come from earlier runs' answers. */
  learned: boolean;
  windows: number;
  per_window: number | null;
  /** Requests left (the staged batches left out); null without the locations. */
  requests: number | null;
  /** Batches an unfinished run left staged: those of the same key are kept. */
  unfinished: { staged: number; resumed: boolean } | null;
  /** Every request in order, when the locations are known and no size is still searched for. */
  batches: PlannedBatch[] | null;
  /** Said before the run: a polygon that holds none of the catalog's locations. */
  warning: string | null;
  /** The location-hours missing in the days before the start, asked for too (lookback_days). */
  lookback: {
    days: number;
    start: string;
    end: string;
    locations: string[];
    hours: number;
  } | null;
}

/** Works with the run's DuckDB; validate and plan open a small one. */
async function withPlanDatabase<T>(
  context: PlanContext,
  work: (db: Database) => Promise<T>,
): Promise<T> {
  if (context.database) return work(await context.database());
  const db = await Database.open({ budget: MIN_BUDGET, threads: 1 });
  try {
    return await work(db);
  } finally {
    db.close();
  }
}

/**
 * What a plan reads of the folder, without the network: the catalog of an
 * earlier run, if any; the period (start and end, given or where the data
 * ends); and the hours missing before it (lookback.ts).
 */
async function readFolder(
  options: BicycleMeasurementsOptions,
  context: PlanContext,
  spec: SelectionSpec,
): Promise<{ catalog: CatalogLocation[] | undefined; ids: string[] | undefined; period: Period }> {
  const output = context.output;
  const files = folderFilesOf(context);
  return withPlanDatabase(context, async (db) => {
    const catalog =
      files.size(catalogFile(output)) === undefined
        ? undefined
        : await storedCatalog(db, output, files);
    // Listed ids without a catalog yet: in the order the run resolves them (sorted).
    const ids = catalog
      ? resolveSelection(spec, catalog)
      : spec.mode === 'locations'
        ? [...spec.ids].sort()
        : undefined;
    const period = await planPeriod(db, {
      output,
      files,
      ids,
      start: options.start ? parseSecondTimestamp(options.start) : undefined,
      end: options.end ? parseSecondTimestamp(options.end) : undefined,
      lookbackDays: options.lookback_days,
      stepId: context.stepId,
    });
    return { catalog, ids, period };
  });
}

export async function planMeasurementsStep(
  options: BicycleMeasurementsOptions,
  context: PlanContext,
): Promise<MeasurementsStepPlan> {
  const spec = await selectionSpec(options);
  const checkpoint = readMeasurementsCheckpoint(context);
  // The catalog as landed now: a run that fetches another says so and cuts its requests anew.
  const { catalog, ids, period } = await readFolder(options, context, spec);
  const { from, to, gaps } = period;
  const serverSide = options.server_side && spec.mode !== 'locations';
  // An unfinished run is resumed only by a run of the same period and selection.
  const resumed =
    ids !== undefined && checkpoint.run?.key === runKey(spec, options.server_side, ids, from, to)
      ? checkpoint.run.batches
      : [];
  const guesses = sizeGuesses(options);
  const plan = planMeasurements({
    ids,
    from,
    to,
    limits: checkpoint.limits,
    staged: resumed,
    guesses,
    serverSide,
  });
  const sizes =
    ids === undefined
      ? undefined
      : settledSizes(
          checkpoint.limits,
          guesses,
          { locations: ids.length, hours: plan.hours },
          serverSide,
        );
  const batches =
    ids && sizes
      ? plannedBatches(ids, [from, to], resumed, sizes).map((b) => ({
          from: formatSecondTimestamp(b.from),
          to: formatSecondTimestamp(b.to),
          locations: b.ids,
        }))
      : null;
  return {
    selection: describeSelection(spec),
    start: formatSecondTimestamp(from),
    end: formatSecondTimestamp(to),
    hours: plan.hours,
    locations: ids ? [...ids] : null,
    server_side: serverSide,
    sizes: plan.sizes,
    learned: plan.learned,
    windows: plan.windows,
    per_window: plan.perWindow ?? null,
    requests: plan.requests ?? null,
    unfinished: checkpoint.run
      ? { staged: checkpoint.run.batches.length, resumed: resumed.length > 0 }
      : null,
    batches,
    warning:
      spec.mode === 'polygon' && catalog !== undefined && ids?.length === 0
        ? `warning: ${spec.file} contains none of the ${catalog.length.toLocaleString('en')} locations of the catalog in ${context.output}: is it the area meant, in WGS 84 or RD New with its crs?`
        : null,
    lookback: gaps
      ? {
          days: options.lookback_days,
          start: formatSecondTimestamp(gaps.from),
          end: formatSecondTimestamp(gaps.to),
          locations: gaps.ids,
          hours: gaps.hours,
        }
      : null,
  };
}

/** The plan in words. */
export function describeMeasurementsPlan(plan: MeasurementsStepPlan): string[] {
  const lines = [
    ...(plan.warning ? [plan.warning] : []),
    `measurements of ${plan.selection} for ${plan.start} <= hour < ${plan.end} (${plan.hours.toLocaleString('en')} hours) into ${MEASUREMENTS_DATASET}`,
    `requests of up to ${plan.sizes.locations} locations x ${plan.sizes.hours} hours (${plan.learned ? 'learned by earlier runs' : 'first guesses; refusals adjust them'})`,
  ];
  if (plan.locations === null || plan.per_window === null) {
    lines.push(
      `${plan.windows} window(s); the locations are resolved against the catalog at run time`,
    );
    return lines;
  }
  lines.push(
    `${plan.locations.length} location(s): ${plan.windows} window(s) x ${plan.per_window} batch(es) = ${(plan.windows * plan.per_window).toLocaleString('en')} request(s) expected`,
  );
  if (plan.unfinished)
    lines.push(
      plan.unfinished.resumed
        ? `an unfinished run of the same period and selection has ${plan.unfinished.staged} batch(es) staged: about ${plan.requests!.toLocaleString('en')} request(s) are left`
        : `an unfinished run has ${plan.unfinished.staged} batch(es) staged: a run with the same period and selection resumes from there`,
    );
  if (plan.batches)
    lines.push(
      `the limits are settled: the run makes exactly these ${plan.batches.length.toLocaleString('en')} request(s) (validate --format json lists them)`,
    );
  if (plan.lookback)
    lines.push(
      `and the ${plan.lookback.hours.toLocaleString('en')} hour(s) missing of ${plan.lookback.locations.length} location(s) from ${plan.lookback.start} on (lookback ${plan.lookback.days} days): their late hours land`,
    );
  return lines;
}

/** The plan's batches as the run works on them (ms, whole hours). */
export function batchesOf(
  plan: MeasurementsStepPlan,
): { from: number; to: number; ids: string[] }[] | undefined {
  return plan.batches?.map((b) => ({
    from: parseSecondTimestamp(b.from)!,
    to: parseSecondTimestamp(b.to)!,
    ids: b.locations,
  }));
}
