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
import { InputError, RunError } from '../errors.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import { BicycleClient } from '../sources/bicycle/client.js';
import { readCatalog, storedCatalog } from '../sources/bicycle/catalog.js';
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
import { describeSelection, readPolygon, resolveSelection } from '../sources/bicycle/selection.js';
import { parseSecondTimestamp } from '../util/time.js';
import {
  bicycleMeasurementsOptions,
  selectionSpec,
  type BicycleMeasurementsOptions,
} from './bicycle-measurements-options.js';
import { MeasurementsRun, type RunScope } from './bicycle-measurements-run.js';
import {
  batchesOf,
  describeMeasurementsPlan,
  planMeasurementsStep,
  type MeasurementsStepPlan,
} from './bicycle-measurements-plan.js';
import { httpClientFor } from './http-options.js';
import {
  defineStepKind,
  type BicycleUpstream,
  type StepContext,
  type StepOutcome,
} from './step-kind.js';

export { bicycleMeasurementsOptions, type BicycleMeasurementsOptions };

/** The plan's requests, when the run's locations are those the plan knew. */
function plannedWork(
  plan: MeasurementsStepPlan,
  ids: readonly string[],
  context: StepContext,
): RunScope['planned'] {
  const batches = batchesOf(plan);
  if (!batches) return undefined;
  const same =
    plan.locations?.length === ids.length && plan.locations.every((id, i) => id === ids[i]);
  if (!same) {
    context.log.log(
      'info',
      'bicycle.replanned',
      `The catalog now gives ${ids.length} location(s) for the selection, the plan had ${plan.locations?.length ?? 0}: the requests are cut anew`,
    );
    return undefined;
  }
  return { batches, staged: plan.unfinished?.resumed ? plan.unfinished.staged : 0 };
}

async function runMeasurements(
  options: BicycleMeasurementsOptions,
  context: StepContext,
  { upstream, plan }: { upstream: BicycleUpstream; plan: MeasurementsStepPlan },
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
        const planned = plannedWork(plan, ids, context);
        const run = new MeasurementsRun(options, context, { spec, ids, from, to, planned });
        return await run.fetchAndCommit(client, http, db, committer);
      } finally {
        committer.close();
      }
    });
  } finally {
    await http.close();
  }
}

export const bicycleMeasurementsStep = defineStepKind<
  BicycleMeasurementsOptions,
  MeasurementsStepPlan
>({
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
  plan: planMeasurementsStep,
  describe: describeMeasurementsPlan,
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
  async run(options, context, plan) {
    const upstream = context.upstream.bicycle;
    if (!upstream) throw new RunError('bicycle.measurements: no bicycle upstream configured');
    return runMeasurements(options, context, { upstream, plan });
  },
});
