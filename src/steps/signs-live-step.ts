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
import { quotedString } from '../duckdb/database.js';
import { DataError, RunError, explainDataError } from '../errors.js';
import { TOWN_CODE, TOWN_CODE_HELP, downloadLive } from '../sources/signs/client.js';
import {
  LIVE_COLUMNS,
  LIVE_DATASET,
  LIVE_QUARANTINE_DATASET,
  csvFeatures,
  featureLines,
  liveTypingSelect,
  renameOldSnapshots,
} from '../sources/signs/live.js';
import { partitionFolder } from '../duckdb/partitions.js';
import { arrayMemberToLines } from '../util/json-lines.js';
import { httpClientFor, requestOptions, textList } from './http-options.js';
import { modifiedSince, saveDownload, startDownload, writeParquet } from './plumbing.js';
import { defineStepKind, type Upstream } from './step-kind.js';
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

/**
 * The partition value of a snapshot: its moment in ISO 8601 UTC to the
 * millisecond (fixed width, so that folder names sort as the moments do); the
 * folder name escapes its colons as Hive does (snapshot=2026-11-15T00%3A00%3A00.123Z).
 */
function snapshotKey(ms: number): string {
  return new Date(ms).toISOString();
}

/** A moment as a DuckDB TIMESTAMPTZ literal. */
function timestampLiteral(ms: number): string {
  return `TIMESTAMPTZ ${quotedString(new Date(ms).toISOString())}`;
}

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

export const signsLiveStep = defineStepKind<SignsLiveOptions>({
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
  describe(options) {
    return [
      `downloads ${liveRequest(options)} as ${options.format} into ${LIVE_DATASET} (a snapshot per download; signs_live is the latest)`,
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
  async run(options, context) {
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
    const previous = await startDownload(context);
    const staging = context.staging;
    const http = httpClientFor(options, context);
    try {
      const download = join(staging, `current-state.${options.format}`);
      // What the latest snapshot was taken with: only the same request may skip the download.
      const request = JSON.stringify([
        options.api,
        options.format,
        ...(options.file ? [options.file] : []),
        options.county_code,
        options.rvv_codes,
        options.road_section_ids,
        options.status,
      ]);
      const downloadedAt = Date.now();
      const { headers, notModified } = options.file
        ? await fetchBulkFile(http, options.file, download, {
            ifModifiedSince: modifiedSince(previous, request),
            signal: context.signal,
          }).then(({ lastModified, notModified: same }) => ({
            headers: lastModified ? { 'last-modified': lastModified } : {},
            notModified: same,
          }))
        : await downloadLive(
            http,
            {
              api: options.api,
              base: liveBase(options, upstream)!,
              format: options.format,
              countyCode: options.county_code ?? undefined,
              rvvCodes: options.rvv_codes ?? undefined,
              roadSectionIds: options.road_section_ids ?? undefined,
              status: options.status ?? undefined,
              ifModifiedSince: modifiedSince(previous, request),
              signal: context.signal,
            },
            download,
          );
      context.progress.add({ requests: http.requests });
      if (notModified) {
        context.log.log(
          'info',
          'signs.live',
          `The current state of ${previous.last_modified ?? '?'} is still the service's: no new snapshot`,
          { last_modified: previous.last_modified },
        );
        return { rowsIn: 0, rowsOut: 0, notes: { unchanged: true } };
      }
      const db = await context.database();
      // A download DuckDB cannot read or type as a whole is a data error, not a bug.
      const read = (sql: string): Promise<void> =>
        db.run(sql).catch((error: unknown) => {
          throw explainDataError(error, `signs.live: the ${options.api} download`);
        });
      let features: string;
      if (options.format === 'csv') {
        // The rows are made into features in a pass of their own: typed in the same
        // statement, DuckDB held far more of a national file than the budget allows.
        const made = join(staging, 'features.parquet');
        await read(
          `COPY (SELECT f FROM ${csvFeatures(download)}) TO ${quotedString(made)} (FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE_BYTES '16MB')`,
        );
        await rm(download, { force: true });
        features = `(SELECT f FROM read_parquet(${quotedString(made)}))`;
      } else {
        // One object of a gigabyte cannot be read a piece at a time: its features become lines.
        const lines = join(staging, 'features.jsonl');
        const split = await arrayMemberToLines(download, lines, 'features');
        if (!split.found)
          throw new DataError(
            `signs.live: the ${options.api} answer is not a FeatureCollection (no features array)`,
          );
        await rm(download, { force: true });
        features = featureLines(lines);
      }
      const key = snapshotKey(downloadedAt);
      const typed = `(${liveTypingSelect(features, options.api, timestampLiteral(downloadedAt))})`;
      // The typed rows are set apart once, then written as the snapshot and the quarantine.
      const kept = join(staging, 'typed.parquet');
      await read(
        `COPY ${typed} TO ${quotedString(kept)} (FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE_BYTES '16MB')`,
      );
      const quarantineFile = join(
        context.output,
        LIVE_QUARANTINE_DATASET,
        `${context.stepId}-${key.replace(/[-:.]/g, '')}.parquet`,
      );
      const [counted] = await db.all(
        `SELECT count(*) FILTER (WHERE _problem IS NOT NULL) AS n FROM read_parquet(${quotedString(kept)})`,
      );
      const quarantined = Number(counted?.['n'] ?? 0);
      if (quarantined > 0)
        await writeParquet(
          context,
          db,
          `(SELECT _problem AS reason, raw_feature, api, downloaded_at FROM read_parquet(${quotedString(kept)}) WHERE _problem IS NOT NULL)`,
          quarantineFile,
        );
      const rows = await writeParquet(
        context,
        db,
        `(SELECT * EXCLUDE (_problem, raw_feature) FROM read_parquet(${quotedString(kept)}) WHERE _problem IS NULL)`,
        join(
          context.output,
          LIVE_DATASET,
          partitionFolder('snapshot', key),
          `${context.stepId}.parquet`,
        ),
      );
      await saveDownload(context, request, headers);
      if (quarantined > 0)
        context.log.log(
          'warn',
          'signs.live.quarantine',
          `${quarantined} feature(s) could not be typed; see ${LIVE_QUARANTINE_DATASET} for each with its reason`,
          { quarantined },
        );
      return {
        rowsIn: rows + quarantined,
        rowsOut: rows,
        notes: { api: options.api, snapshot: key, quarantined },
      };
    } finally {
      await http.close();
      await rm(staging, { recursive: true, force: true });
    }
  },
});
