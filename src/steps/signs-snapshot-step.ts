/**
 * Step kind `signs.snapshot`: the monthly current-state download (4.6), streamed
 * to disk and landed as signs/snapshot/data.parquet, replacing the previous one
 * (sources/signs/snapshot-landing.ts), when the service has a newer one.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { SignsClient, TOWN_CODE, TOWN_CODE_HELP } from '../sources/signs/client.js';
import { SIGN_GEOMETRY, SNAPSHOT_VIEW_COLUMNS } from '../sources/signs/schema.js';
import { SNAPSHOT_DATASET, landSnapshot } from '../sources/signs/snapshot-landing.js';
import { exists } from '../util/fs.js';
import {
  describeDownload,
  lastModifiedMs,
  planDownload,
  runDownload,
  type DownloadPlan,
} from './download.js';
import { feedIdentityHooks } from './feed-identity.js';
import { geometryUpgrade } from './geometry-upgrade.js';
import { defineStepKind, upstreamOf } from './step-kind.js';

const signsSnapshotOptions = z.strictObject({
  format: z
    .enum(['json', 'csv'])
    .default('json')
    .describe('Download as JSON (default) or CSV; both gzip-compressed on the wire'),
  town_code: z.string().regex(TOWN_CODE, TOWN_CODE_HELP).optional().describe('Only this town code'),
  rvv_code: z.string().min(1).optional().describe('Only signs with this RVV code'),
  road_section_ids: z
    .array(z.number().int().nonnegative())
    .optional()
    .describe('Only these road sections (wvk_id)'),
  refresh: z
    .enum(['if-modified', 'always'])
    .default('if-modified')
    .describe('Download only when the service has a newer snapshot (default), or always'),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .default(120_000)
    .describe('Longest silence during the download. Default 120000.'),
  retries: z.number().int().min(0).default(3).describe('Retries of the whole download. Default 3.'),
  backoff_ms: z.number().int().min(0).default(500).describe('First retry backoff. Default 500.'),
});

export type SignsSnapshotOptions = z.output<typeof signsSnapshotOptions>;

export const signsSnapshotStep = defineStepKind<SignsSnapshotOptions, DownloadPlan>({
  kind: 'signs.snapshot',
  upgrade: geometryUpgrade(SNAPSHOT_DATASET, SIGN_GEOMETRY),
  description: 'Download the traffic-sign current state into signs/snapshot',
  options: signsSnapshotOptions,
  source: 'signs',
  views: { signs_snapshot: SNAPSHOT_VIEW_COLUMNS },
  async plan(options, context) {
    const kept = join(context.output, SNAPSHOT_DATASET, 'data.parquet');
    return planDownload(
      context,
      [options.format, options.town_code, options.rvv_code, options.road_section_ids],
      options.refresh === 'if-modified' && (await exists(kept)),
    );
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
  upstreamIdentity: feedIdentityHooks(),
  async reset(_options, context) {
    await rm(join(context.output, SNAPSHOT_DATASET), { recursive: true, force: true });
  },
  async run(options, context, plan) {
    const upstream = upstreamOf(context, 'signs', 'signs.snapshot');
    return runDownload(options, context, plan, {
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
    });
  },
});
