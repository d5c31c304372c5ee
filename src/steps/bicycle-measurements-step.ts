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
import { InputError } from '../errors.js';
import { join, resolve } from 'node:path';
import { TokenSource } from '../sources/bicycle/auth.js';
import { storedCatalog } from '../sources/bicycle/catalog.js';
import { BicycleClient } from '../sources/bicycle/client.js';
import {
  catalogDiffers,
  catalogIdentity,
  type CatalogIdentity,
} from '../sources/bicycle/identity.js';
import {
  BICYCLE_QUARANTINE_DATASET,
  MEASUREMENTS_DATASET,
  MEASUREMENTS_VIEW_COLUMNS,
} from '../sources/bicycle/landing.js';
import { runMeasurements } from '../sources/bicycle/measurements.js';
import {
  bicycleMeasurementsOptions,
  type BicycleMeasurementsOptions,
} from '../sources/bicycle/measurements-options.js';
import {
  describeMeasurementsPlan,
  planMeasurementsStep,
  type MeasurementsStepPlan,
} from '../sources/bicycle/measurements-plan.js';
import { readPolygon } from '../sources/bicycle/selection.js';
import { datesOf, partitionsThere, readOf } from './decisions.js';
import { defineStepKind, upstreamOf } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

export { bicycleMeasurementsOptions, type BicycleMeasurementsOptions };

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
  checkFolder(options, context) {
    if (options.start) return;
    const dates = folderFilesOf(context)
      .list(join(context.output, MEASUREMENTS_DATASET))
      .filter((entry) => entry.folder && entry.name.startsWith('date='));
    if (dates.length === 0)
      throw new InputError(
        `${context.stepId}: start is not given, and ${context.output} holds no measurements to go on from: give start, the first hour to fetch`,
      );
  },
  plan: planMeasurementsStep,
  decide(options, context, plan) {
    const period = datesOf(plan.start, plan.end);
    // The hours missing before the period (lookback) land in their own dates: a date is
    // rewritten, and the tables built from it with it, only where some arrived.
    const dates = datesOf(plan.lookback?.start ?? plan.start, plan.end);
    // A date the folder holds is rewritten only where what lands differs (a period run
    // again): the steps after build again only what did change.
    const there = partitionsThere(context, MEASUREMENTS_DATASET);
    const fresh = period.filter((d) => !there.has(d));
    const again = dates.filter((d) => !fresh.includes(d));
    const late = plan.lookback
      ? `, and asks again for ${plan.lookback.hours} missing hour(s) of ${plan.lookback.locations.length} location(s) from ${plan.lookback.start}, rewriting the dates where they arrived`
      : '';
    return {
      decision: 'partial',
      why: `fetches ${plan.hours} hour(s) from ${plan.start} to ${plan.end} (${plan.selection}): ${fresh.length} new date partition(s)${fresh.length < period.length ? `, ${period.length - fresh.length} held already rewritten where what lands differs` : ''}${late}`,
      builds: [
        { dataset: 'bicycle_measurements', partitions: fresh },
        // A file of the rows that could not be kept, when there are any.
        { dataset: 'bicycle_quarantine', partitions: 'all' },
      ],
      ...(again.length > 0
        ? { may_build: [{ dataset: 'bicycle_measurements', partitions: again }] }
        : {}),
      reads: [
        // A date's rows of other locations and hours stay: its partition is read.
        readOf(context, 'bicycle_measurements', MEASUREMENTS_DATASET, dates),
        // Prefixes and a polygon are resolved against the catalog.
        ...(options.locations
          ? []
          : [{ dataset: 'bicycle_locations', partitions: 'all' as const }]),
      ],
    };
  },
  repairPeriod(partition) {
    const day = Date.parse(`${partition}T00:00:00Z`);
    if (Number.isNaN(day)) return undefined;
    const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    return { start: iso(day), end: iso(day + 86_400_000) };
  },
  stagesAhead: true,
  describe: describeMeasurementsPlan,
  upstreamIdentity: {
    // Measurements are worth what their locations are: the catalog identifies the service.
    async identify(_options, context) {
      const upstream = context.upstream.bicycle;
      const catalog =
        upstream &&
        (await storedCatalog(await context.database(), context.output, folderFilesOf(context)));
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
      return context.once(`bicycle catalog ${upstream.url}`, () => {
        const http = context.http(options);
        const client = new BicycleClient(http, new TokenSource(http, upstream), upstream.url);
        return catalogDiffers(
          client,
          upstream.url,
          stored as unknown as CatalogIdentity,
          context.signal,
        );
      });
    },
  },
  async reset(_options, context) {
    // Started over, the step forgets its data too (measurements and their quarantine).
    await rm(context.staging, { recursive: true, force: true });
    await folderFilesOf(context).remove(join(context.output, MEASUREMENTS_DATASET));
    await folderFilesOf(context).remove(join(context.output, BICYCLE_QUARANTINE_DATASET));
  },
  run(options, context, plan) {
    const upstream = upstreamOf(context, 'bicycle', 'bicycle.measurements');
    return runMeasurements(options, context, { upstream, plan });
  },
});
