/**
 * Step kind `bicycle.measurements`: hourly counts of the selected locations over
 * [start, end) into bicycle/measurements/date=YYYY-MM-DD/data.parquet, one row
 * per location and hour. The work is cut into period windows x location
 * batches whose sizes follow the limits learned from the service's refusals
 * (sources/bicycle/sizing.ts, plan.ts). Each batch is staged atomically and
 * listed in the checkpoint; once every batch covering a date is staged, that
 * date partition is rewritten with the run's rows in place of what it held for
 * those locations and hours (date-commits.ts). A killed run resumes where it
 * stopped; a rerun or an overlapping run replaces, never duplicates.
 */
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Database } from '../duckdb/database.js';
import { MIN_BUDGET } from '../duckdb/memory.js';
import { InputError, RunError } from '../errors.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import { BicycleClient } from '../sources/bicycle/client.js';
import { catalogFile, readCatalog, storedCatalog } from '../sources/bicycle/catalog.js';
import {
  BICYCLE_QUARANTINE_DATASET,
  MEASUREMENTS_DATASET,
  MEASUREMENTS_VIEW_COLUMNS,
} from '../sources/bicycle/landing.js';
import {
  catalogDiffers,
  catalogIdentity,
  type CatalogIdentity,
} from '../sources/bicycle/identity.js';
import { planMeasurements, runKey } from '../sources/bicycle/plan.js';
import {
  describeSelection,
  readPolygon,
  resolveSelection,
  type CatalogLocation,
} from '../sources/bicycle/selection.js';
import { exists } from '../util/fs.js';
import { parseSecondTimestamp } from '../util/time.js';
import {
  bicycleMeasurementsOptions,
  selectionSpec,
  sizeGuesses,
  type BicycleMeasurementsOptions,
} from './bicycle-measurements-options.js';
import { MeasurementsRun, readMeasurementsCheckpoint } from './bicycle-measurements-run.js';
import { httpClientFor } from './http-options.js';
import {
  defineStepKind,
  type BicycleUpstream,
  type StepContext,
  type StepOutcome,
} from './step-kind.js';

export { bicycleMeasurementsOptions, type BicycleMeasurementsOptions };

/** The catalog a plan can use without the network: the dataset of an earlier run, if any. */
async function catalogForPlan(output: string): Promise<CatalogLocation[] | undefined> {
  if (!(await exists(catalogFile(output)))) return undefined;
  const db = await Database.open({ budget: MIN_BUDGET, threads: 1 });
  try {
    return await storedCatalog(db, output);
  } finally {
    db.close();
  }
}

async function runMeasurements(
  options: BicycleMeasurementsOptions,
  context: StepContext,
  upstream: BicycleUpstream,
): Promise<StepOutcome> {
  const from = parseSecondTimestamp(options.start)!;
  const to = parseSecondTimestamp(options.end)!;
  const spec = await selectionSpec(options);
  const http = httpClientFor(options, context);
  try {
    const tokens = new TokenSource(http, upstream);
    const client = new BicycleClient(http, tokens, upstream.url);
    const db = await context.database();
    const catalog = await readCatalog(db, context.output, context.scratch, async () => {
      context.progress.add({ requests: 1 });
      return (await client.locations(context.signal)).body;
    });
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
    return await db.withThreads(1, async () => {
      // Dates are rewritten on a connection of their own while later batches are fetched.
      const committer = await db.fork();
      try {
        const run = new MeasurementsRun(options, context, { spec, ids, from, to });
        return await run.fetchAndCommit(client, http, db, committer);
      } finally {
        committer.close();
      }
    });
  } finally {
    await http.close();
  }
}

export const bicycleMeasurementsStep = defineStepKind<BicycleMeasurementsOptions>({
  kind: 'bicycle.measurements',
  description:
    'Download hourly bicycle counts of a selection over a period into bicycle/measurements',
  options: bicycleMeasurementsOptions,
  source: 'bicycle',
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
    const checkpoint = readMeasurementsCheckpoint(context);
    const catalog =
      spec.mode === 'locations' && !options.server_side
        ? undefined
        : await catalogForPlan(context.output);
    const ids =
      spec.mode === 'locations' ? spec.ids : catalog ? resolveSelection(spec, catalog) : undefined;
    const serverSide = options.server_side && spec.mode !== 'locations';
    // An unfinished run is resumed only by a run of the same period and selection.
    const resumed =
      ids !== undefined && checkpoint.run?.key === runKey(spec, options.server_side, ids, from, to)
        ? checkpoint.run.batches
        : [];
    const plan = planMeasurements({
      ids,
      from,
      to,
      limits: checkpoint.limits,
      staged: resumed,
      guesses: sizeGuesses(options),
      serverSide,
    });
    const empty =
      spec.mode === 'polygon' && catalog !== undefined && ids !== undefined && ids.length === 0
        ? [
            `warning: ${spec.file} contains none of the ${catalog.length.toLocaleString('en')} locations of the catalog in ${context.output}: is it the area meant, in WGS 84 or RD New with its crs?`,
          ]
        : [];
    const lines = [
      ...empty,
      `measurements of ${describeSelection(spec)} for ${options.start} <= hour < ${options.end} (${plan.hours.toLocaleString('en')} hours) into ${MEASUREMENTS_DATASET}`,
      `requests of up to ${plan.sizes.locations} locations x ${plan.sizes.hours} hours (${plan.learned ? 'learned by earlier runs' : 'first guesses; refusals adjust them'})`,
    ];
    if (ids === undefined || plan.perWindow === undefined) {
      lines.push(
        `${plan.windows} window(s); the locations are resolved against the catalog at run time`,
      );
      return lines;
    }
    lines.push(
      `${ids.length} location(s): ${plan.windows} window(s) x ${plan.perWindow} batch(es) = ${(plan.windows * plan.perWindow).toLocaleString('en')} request(s) expected`,
    );
    if (checkpoint.run)
      lines.push(
        resumed.length > 0
          ? `an unfinished run of the same period and selection has ${resumed.length} batch(es) staged: about ${plan.requests!.toLocaleString('en')} request(s) are left`
          : `an unfinished run has ${checkpoint.run.batches.length} batch(es) staged: a run with the same period and selection resumes from there`,
      );
    return lines;
  },
  upstreamIdentity: {
    // Measurements are worth what their locations are: the catalog identifies the service.
    async identify(_options, context) {
      const upstream = context.upstream.bicycle;
      const catalog = upstream && (await storedCatalog(await context.database(), context.output));
      return (
        catalog &&
        catalogIdentity(
          upstream.url,
          catalog.map((l) => l.id),
        )
      );
    },
    async check(options, context, stored) {
      const upstream = context.upstream.bicycle;
      if (!upstream) return undefined;
      return context.once(`bicycle catalog ${upstream.url}`, async () => {
        const http = httpClientFor(options, context);
        try {
          const client = new BicycleClient(http, new TokenSource(http, upstream), upstream.url);
          return await catalogDiffers(
            client,
            upstream.url,
            stored as unknown as CatalogIdentity,
            context.signal,
          );
        } finally {
          await http.close();
        }
      });
    },
  },
  async reset(_options, context) {
    // Started over, the step forgets its data too (measurements and their quarantine).
    await rm(context.staging, { recursive: true, force: true });
    await rm(join(context.output, MEASUREMENTS_DATASET), { recursive: true, force: true });
    await rm(join(context.output, BICYCLE_QUARANTINE_DATASET), { recursive: true, force: true });
  },
  async run(options, context) {
    const upstream = context.upstream.bicycle;
    if (!upstream) throw new RunError('bicycle.measurements: no bicycle upstream configured');
    return runMeasurements(options, context, upstream);
  },
});
