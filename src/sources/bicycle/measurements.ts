/**
 * A `bicycle.measurements` step's work: the selection resolved against the
 * catalog (the landed one, else fetched), the plan's requests kept when the
 * locations are those it knew, and the run (measurements-run.ts).
 */
import { InputError } from '../../errors.js';
import type { BicycleUpstream, RunContext, RunOutcome } from '../context.js';
import { TokenSource } from './auth.js';
import { readCatalog } from './catalog.js';
import { BicycleClient } from './client.js';
import { selectionSpec, type BicycleMeasurementsOptions } from './measurements-options.js';
import { batchesOf, type MeasurementsStepPlan } from './measurements-plan.js';
import { MeasurementsRun, type RunScope } from './measurements-run.js';
import {
  describeSelection,
  resolveSelection,
  type CatalogLocation,
  type SelectionSpec,
} from './selection.js';
import { parseSecondTimestamp } from '../../util/time.js';
import { folderFilesOf } from '../../duckdb/folder-files.js';

/** The plan's requests, when the run's locations are those the plan knew. */
function plannedWork(
  plan: MeasurementsStepPlan,
  ids: readonly string[],
  context: RunContext,
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

/** The selection's locations in the catalog; unknown listed ids are warned of, none at all refused. */
function locationsOf(
  spec: SelectionSpec,
  catalog: readonly CatalogLocation[],
  context: RunContext,
): string[] {
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
  return ids;
}

/**
 * The run of the hours missing before the period (the plan's lookback), for
 * the locations of the run that have some: after the period's own run, on the
 * same connections. Undefined when there is nothing to ask (fetched ahead).
 */
async function lookBack(
  lookback: NonNullable<MeasurementsStepPlan['lookback']>,
  ids: readonly string[],
  run: { again(scope: RunScope): Promise<RunOutcome> },
  context: RunContext,
): Promise<RunOutcome | undefined> {
  const gapIds = lookback.locations.filter((id) => ids.includes(id));
  if (gapIds.length === 0 || context.ahead) return undefined;
  context.log.log(
    'info',
    'bicycle.lookback',
    `asking for the ${lookback.hours} hour(s) missing of ${gapIds.length} location(s) from ${lookback.start} on (lookback ${lookback.days} days)`,
  );
  return run.again({
    spec: { mode: 'locations', ids: gapIds },
    ids: gapIds,
    from: parseSecondTimestamp(lookback.start)!,
    to: parseSecondTimestamp(lookback.end)!,
    planned: undefined,
  });
}

/** The period's outcome with the lookback's added. */
function withLate(outcome: RunOutcome, late: RunOutcome | undefined): RunOutcome {
  if (!late) return outcome;
  return {
    rowsIn: outcome.rowsIn + late.rowsIn,
    rowsOut: outcome.rowsOut + late.rowsOut,
    notes: { ...outcome.notes, lookback: late.notes },
  };
}

/** Resolves the selection against the catalog (fetched when none has landed) and runs the plan. */
export async function runMeasurements(
  options: BicycleMeasurementsOptions,
  context: RunContext,
  { upstream, plan }: { upstream: BicycleUpstream; plan: MeasurementsStepPlan },
): Promise<RunOutcome> {
  const from = parseSecondTimestamp(plan.start)!;
  const to = parseSecondTimestamp(plan.end)!;
  const spec = await selectionSpec(options);
  const http = context.http(options);
  const client = new BicycleClient(http, new TokenSource(http, upstream), upstream.url);
  const db = await context.database();
  const catalog = await readCatalog(
    db,
    { output: context.output, files: folderFilesOf(context), scratch: context.scratch },
    async () => {
      context.progress.add({ requests: 1 });
      return (await client.locations(context.signal)).body;
    },
  );
  const ids = locationsOf(spec, catalog, context);
  // One DuckDB thread per statement: batches are staged one at a time beside the
  // commit's connection and the network; more threads only contend.
  return db.withThreads(1, async () => {
    // Dates are rewritten on a connection of their own while later batches are fetched.
    const committer = await db.fork();
    try {
      const planned = plannedWork(plan, ids, context);
      const run = new MeasurementsRun(options, context, { spec, ids, from, to, planned });
      const outcome = await run
        .fetchAndCommit(client, http, db, committer)
        .catch((error: unknown) => ({ error }));
      // The hours missing before the period (lookback), asked for after it, whatever became of it.
      const again = {
        again: (scope: RunScope) =>
          new MeasurementsRun(options, context, scope).fetchAndCommit(client, http, db, committer),
      };
      const late = plan.lookback && (await lookBack(plan.lookback, ids, again, context));
      if ('error' in outcome) throw outcome.error;
      return withLate(outcome, late ?? undefined);
    } finally {
      committer.close();
    }
  });
}
