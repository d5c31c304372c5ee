/**
 * Step kind `signs.snapshot`: the monthly current-state download (4.6), streamed
 * to disk and landed as signs/snapshot/data.parquet, replacing the previous one
 * (sources/signs/snapshot-landing.ts), when the service has a newer one.
 */
import { join } from 'node:path';
import { SignsClient } from '../sources/signs/client.js';
import {
  signsSnapshotOptions,
  snapshotRequestKey,
  type SignsSnapshotOptions,
} from '../sources/signs/snapshot-options.js';
import { SNAPSHOT_VIEW_COLUMNS } from '../sources/signs/schema.js';
import { SNAPSHOT_DATASET, landSnapshot } from '../sources/signs/snapshot-landing.js';
import {
  describeDownload,
  lastModifiedMs,
  planDownload,
  runDownload,
  type DownloadPlan,
} from './download.js';
import { feedIdentityHooks } from './feed-identity.js';
import { defineStepKind, upstreamOf } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

export type { SignsSnapshotOptions };

export const signsSnapshotStep = defineStepKind<SignsSnapshotOptions, DownloadPlan>({
  kind: 'signs.snapshot',
  description: 'Download the traffic-sign current state into signs/snapshot',
  options: signsSnapshotOptions,
  source: 'signs',
  views: { signs_snapshot: SNAPSHOT_VIEW_COLUMNS },
  plan(options, context) {
    const kept = join(context.output, SNAPSHOT_DATASET, 'data.parquet');
    return planDownload(context, snapshotRequestKey(options), {
      mayKeep: options.refresh === 'if-modified' && folderFilesOf(context).size(kept) !== undefined,
    });
  },
  describe(plan, options) {
    const filters = [
      options.town_code && `town-code ${options.town_code}`,
      options.rvv_code && `rvv-code ${options.rvv_code}`,
      options.road_section_ids && `${options.road_section_ids.length} road sections`,
    ].filter(Boolean);
    return [
      `downloads the current state as ${options.format}${filters.length ? ` (${filters.join(', ')})` : ''} into ${SNAPSHOT_DATASET}`,
      describeDownload(plan),
    ];
  },
  decide(_options, _context, plan) {
    const builds = [{ dataset: 'signs_snapshot', partitions: 'all' as const }];
    // Asked If-Modified-Since: kept as it is unless the service has a newer one, which it may not.
    return plan.if_modified_since
      ? {
          decision: 'skip',
          why: `keeps the current state it has, unless the service has one newer than ${plan.if_modified_since}`,
          builds: [],
          reads: [],
          may_build: builds,
        }
      : { decision: 'whole', why: 'downloads the current state whole', builds, reads: [] };
  },
  upstreamIdentity: feedIdentityHooks(),
  async reset(_options, context) {
    await folderFilesOf(context).remove(join(context.output, SNAPSHOT_DATASET));
  },
  async run(options, context, plan, decision) {
    const upstream = upstreamOf(context, 'signs', 'signs.snapshot');
    return runDownload(
      options,
      context,
      { plan, decision },
      {
        file: `current-state.${options.format}`,
        fetch: (http, file, since) =>
          new SignsClient(http, upstream.url).downloadCurrentState(
            {
              format: options.format,
              townCode: options.town_code,
              rvvCode: options.rvv_code,
              roadSectionIds: options.road_section_ids,
              ifModifiedSince: since,
              signal: context.signal,
            },
            file,
          ),
        unchanged(lastModified) {
          context.log.log(
            'info',
            'signs.snapshot',
            `The snapshot of ${lastModified ?? '?'} is still current: kept, not downloaded`,
            { last_modified: lastModified },
          );
          return {
            rowsIn: 0,
            rowsOut: 0,
            notes: { unchanged: true, snapshot_moment: lastModified ?? null },
          };
        },
        async land(file, headers) {
          const lastModified = lastModifiedMs(headers);
          const landed = await landSnapshot(await context.database(), {
            file,
            format: options.format,
            lastModified,
            staging: context.staging,
            output: context.output,
            files: folderFilesOf(context),
            scratch: context.scratch,
            stepId: context.stepId,
          });
          for (const path of landed.files) await context.recordFile(path);
          return {
            rowsIn: landed.rows + landed.quarantined,
            rowsOut: landed.rows,
            notes: {
              quarantined: landed.quarantined,
              snapshot_moment: Number.isNaN(lastModified)
                ? null
                : new Date(lastModified).toISOString(),
            },
          };
        },
      },
    );
  },
});
