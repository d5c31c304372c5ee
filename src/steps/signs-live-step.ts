/**
 * Step kind `signs.live`: the current state of today's traffic-sign API (v5 by
 * default, or v4), downloaded whole (gzip on the wire, streamed to disk),
 * typed by DuckDB and kept as one snapshot per download under
 * signs/live_snapshots/snapshot=<moment>/. The view signs_live is the latest
 * snapshot. A download the service says is unchanged (If-Modified-Since) adds
 * nothing.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { RunError } from '../errors.js';
import { TOWN_CODE, TOWN_CODE_HELP, downloadLive } from '../sources/signs/client.js';
import {
  LIVE_COLUMNS,
  LIVE_DATASET,
  LIVE_QUARANTINE_DATASET,
  renameOldSnapshots,
} from '../sources/signs/live.js';
import { landLive } from '../sources/signs/live-landing.js';
import { httpClientFor, requestOptions, textList } from './http-options.js';
import type { HttpClient } from '../http/client.js';
import {
  describeDownload,
  planDownload,
  runDownload,
  type DownloadPlan,
  type Fetched,
} from './download.js';
import { defineStepKind, type StepContext, type Upstream } from './step-kind.js';
import { landedLiveIdentity, liveDiffers, type LiveIdentity } from '../sources/signs/identity.js';
import { geometryUpgrade } from './geometry-upgrade.js';
import { fetchBulkFile } from '../sources/signs/bulk.js';
import { LIVE_GEOMETRY } from '../sources/signs/live.js';

const signsLiveOptions = z
  .strictObject({
    api: z.enum(['v5', 'v4']).default('v5').describe('API version: v5 (default) or v4'),
    format: z
      .enum(['geojson', 'csv'])
      .default('geojson')
      .describe('GeoJSON (default), or CSV (v4 only); gzip-compressed on the wire'),
    county_code: z
      .string()
      .regex(TOWN_CODE, TOWN_CODE_HELP)
      .nullish()
      .describe('Only signs of this municipality (countyCode, e.g. GM0363)'),
    rvv_codes: textList
      .nullish()
      .describe('Only signs with these RVV codes (a list, or a comma-separated text)'),
    road_section_ids: z
      .array(z.number().int().nonnegative())
      .nullish()
      .describe('Only signs on these road sections (NWB ids)'),
    status: z
      .enum(['PLANNED', 'PLACED', 'REMOVED'])
      .nullish()
      .describe('Only signs with this status (PLANNED, PLACED or REMOVED)'),
    file: z
      .string()
      .min(1)
      .nullish()
      .describe(
        "NDW's daily bulk file of the current state instead of the API: an http(s) URL or a local path, gzip or not, in the v4 CSV layout (api v4, format csv) or GeoJSON",
      ),
    ...requestOptions(600_000),
  })
  .superRefine((options, ctx) => {
    if (options.file) {
      const filters = (['county_code', 'rvv_codes', 'road_section_ids', 'status'] as const).filter(
        (f) => options[f] !== undefined && options[f] !== null,
      );
      for (const filter of filters)
        ctx.addIssue({
          code: 'custom',
          path: [filter],
          message: 'a bulk file holds the whole country: filters apply to the API only',
        });
    }
    if (options.format === 'csv' && options.api !== 'v4')
      ctx.addIssue({
        code: 'custom',
        path: ['format'],
        message: 'v5 serves GeoJSON only: use format geojson, or api v4 for CSV',
      });
  });

export type SignsLiveOptions = z.output<typeof signsLiveOptions>;

/** What a download asks for, in words: the snapshots of one history are all taken so. */
function liveRequest(options: SignsLiveOptions): string {
  const filters = [
    options.county_code && `countyCode ${options.county_code}`,
    options.rvv_codes && `rvvCode ${options.rvv_codes.join(', ')}`,
    options.road_section_ids && `${options.road_section_ids.length} road sections`,
    options.status && `status ${options.status}`,
  ].filter(Boolean);
  if (options.file) return `the ${options.api} current state from the bulk file ${options.file}`;
  return `the ${options.api} current state${filters.length ? ` (${filters.join(', ')})` : ''}`;
}

/** The host of the version asked for. */
function liveBase(options: SignsLiveOptions, upstream: Upstream['signs']): string | undefined {
  // A bulk file is not the API: there is no upstream to identify.
  if (options.file) return undefined;
  return upstream && (options.api === 'v5' ? upstream.v5Url : upstream.url);
}

/** The current state from the API (v4 or v5) or from NDW's daily file, into `file`. */
async function fetchCurrentState(
  options: SignsLiveOptions,
  context: StepContext,
  upstream: Upstream['signs'],
  { http, file, since }: { http: HttpClient; file: string; since: string | undefined },
): Promise<Fetched> {
  if (options.file) {
    const bulk = await fetchBulkFile(http, options.file, file, {
      ifModifiedSince: since,
      signal: context.signal,
    });
    return {
      headers: bulk.lastModified ? { 'last-modified': bulk.lastModified } : {},
      notModified: bulk.notModified,
    };
  }
  return downloadLive(
    http,
    {
      api: options.api,
      base: liveBase(options, upstream)!,
      format: options.format,
      countyCode: options.county_code ?? undefined,
      rvvCodes: options.rvv_codes ?? undefined,
      roadSectionIds: options.road_section_ids ?? undefined,
      status: options.status ?? undefined,
      ifModifiedSince: since,
      signal: context.signal,
    },
    file,
  );
}

export const signsLiveStep = defineStepKind<SignsLiveOptions, DownloadPlan>({
  kind: 'signs.live',
  upgrade: geometryUpgrade(LIVE_DATASET, LIVE_GEOMETRY),
  description:
    'Download the current state of the traffic-sign API v5 (or v4) into signs/live_snapshots; signs_live is the latest',
  options: signsLiveOptions,
  single: true,
  source: 'signs',
  views: {
    signs_live_snapshots: [...LIVE_COLUMNS, ['snapshot', 'TIMESTAMPTZ']],
    signs_live: LIVE_COLUMNS,
  },
  plan(options, context) {
    return planDownload(context, [
      options.api,
      options.format,
      ...(options.file ? [options.file] : []),
      options.county_code,
      options.rvv_codes,
      options.road_section_ids,
      options.status,
    ]);
  },
  describe(plan, options) {
    return [
      `downloads ${liveRequest(options)} as ${options.format} into ${LIVE_DATASET} (a snapshot per download; signs_live is the latest)`,
      describeDownload(plan),
    ];
  },
  upstreamIdentity: {
    async identify(options, context) {
      const base = liveBase(options, context.upstream.signs);
      if (base === undefined) return undefined;
      return landedLiveIdentity(await context.database(), base, liveRequest(options));
    },
    async check(options, context, stored) {
      const base = liveBase(options, context.upstream.signs);
      if (base === undefined) return undefined;
      const http = httpClientFor(options, context);
      try {
        return await liveDiffers(http, stored as LiveIdentity, {
          api: options.api,
          base,
          rvvCodes: options.rvv_codes ?? undefined,
          roadSectionIds: options.road_section_ids ?? undefined,
          status: options.status ?? undefined,
          request: liveRequest(options),
          signal: context.signal,
        });
      } finally {
        await http.close();
      }
    },
  },
  async reset(_options, context) {
    await rm(join(context.output, LIVE_DATASET), { recursive: true, force: true });
  },
  async run(options, context, plan) {
    const upstream = context.upstream.signs;
    if (!upstream && !options.file) throw new RunError('signs.live: no signs upstream configured');
    const renamed = await renameOldSnapshots(context.output);
    if (renamed > 0)
      context.log.log(
        'info',
        'signs.live.renamed',
        `${renamed} snapshot folder(s) of an earlier version renamed to ISO 8601 moments`,
        { renamed },
      );
    let downloadedAt = 0;
    return runDownload(options, context, plan, {
      file: `current-state.${options.format}`,
      fetch(http, file, since) {
        downloadedAt = Date.now();
        return fetchCurrentState(options, context, upstream, { http, file, since });
      },
      unchanged(lastModified) {
        context.log.log(
          'info',
          'signs.live',
          `The current state of ${lastModified ?? '?'} is still the service's: no new snapshot`,
          { last_modified: lastModified },
        );
        return { rowsIn: 0, rowsOut: 0, notes: { unchanged: true } };
      },
      async land(file) {
        const landed = await landLive(await context.database(), {
          file,
          format: options.format,
          api: options.api,
          downloadedAt,
          staging: context.staging,
          output: context.output,
          scratch: context.scratch,
          stepId: context.stepId,
        });
        for (const path of landed.files) await context.recordFile(path);
        if (landed.quarantined > 0)
          context.log.log(
            'warn',
            'signs.live.quarantine',
            `${landed.quarantined} feature(s) could not be typed; see ${LIVE_QUARANTINE_DATASET} for each with its reason`,
            { quarantined: landed.quarantined },
          );
        return {
          rowsIn: landed.rows + landed.quarantined,
          rowsOut: landed.rows,
          notes: { api: options.api, snapshot: landed.snapshot, quarantined: landed.quarantined },
        };
      },
    });
  },
});
