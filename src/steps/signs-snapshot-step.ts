/**
 * Step kind `signs.snapshot`: the monthly current-state download (4.6), streamed
 * to disk (never held in memory: the national file is hundreds of MB), typed by
 * DuckDB with the same typing as the event feed, and written as
 * signs/snapshot/data.parquet, replacing the previous one.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { PARQUET_FORMAT, quotedString, type Database } from '../duckdb/database.js';
import { DataError, RunError } from '../errors.js';
import { defineStepKind } from './step-kind.js';
import { feedIdentityHooks } from './feed-identity.js';
import { httpClientFor } from './http-options.js';
import { modifiedSince, saveDownload, startDownload } from './plumbing.js';
import { SignsClient, TOWN_CODE, TOWN_CODE_HELP } from '../sources/signs/client.js';
import { QUARANTINE_DATASET } from '../sources/signs/landing.js';
import { SNAPSHOT_VIEW_COLUMNS, typingSelect } from '../sources/signs/schema.js';
import { commitFile, exists, temporaryPath, makeFolder } from '../util/fs.js';
import { geometryUpgrade } from './geometry-upgrade.js';
import { SIGN_GEOMETRY } from '../sources/signs/schema.js';

const SNAPSHOT_DATASET = join('signs', 'snapshot');

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

/** The tables in which DuckDB sets aside the CSV rows that do not fit the header. */
async function dropRejects(db: Database): Promise<void> {
  await db.run(
    'DROP TABLE IF EXISTS snapshot_rejects; DROP TABLE IF EXISTS snapshot_reject_scans; DROP TABLE IF EXISTS snapshot_rejects_seen',
  );
}

export const signsSnapshotStep = defineStepKind<SignsSnapshotOptions>({
  kind: 'signs.snapshot',
  upgrade: geometryUpgrade(SNAPSHOT_DATASET, SIGN_GEOMETRY),
  description: 'Download the traffic-sign current state into signs/snapshot',
  options: signsSnapshotOptions,
  source: 'signs',
  views: { signs_snapshot: SNAPSHOT_VIEW_COLUMNS },
  describe(options) {
    const filters = [
      options.town_code && `town-code ${options.town_code}`,
      options.rvv_code && `rvv-code ${options.rvv_code}`,
      options.road_section_ids && `${options.road_section_ids.length} road sections`,
    ].filter(Boolean);
    return [
      `downloads the current state as ${options.format}${filters.length ? ` (${filters.join(', ')})` : ''} into ${SNAPSHOT_DATASET}`,
    ];
  },
  upstreamIdentity: feedIdentityHooks(),
  async reset(_options, context) {
    await rm(join(context.output, SNAPSHOT_DATASET), { recursive: true, force: true });
  },
  async run(options, context) {
    const upstream = context.upstream.signs;
    if (!upstream) throw new RunError('signs.snapshot: no signs upstream configured');
    const previous = await startDownload(context);
    const staging = context.staging;
    const http = httpClientFor(options, context);
    try {
      const download = join(staging, `current-state.${options.format}`);
      // What the snapshot on disk was taken with: only the same request may skip the download.
      const request = JSON.stringify([
        options.format,
        options.town_code,
        options.rvv_code,
        options.road_section_ids,
      ]);
      const since = modifiedSince(previous, request);
      const have =
        options.refresh === 'if-modified' &&
        since !== undefined &&
        (await exists(join(context.output, SNAPSHOT_DATASET, 'data.parquet')));
      const { headers, notModified } = await new SignsClient(
        http,
        upstream.url,
      ).downloadCurrentState(
        {
          format: options.format,
          townCode: options.town_code,
          rvvCode: options.rvv_code,
          roadSectionIds: options.road_section_ids,
          ifModifiedSince: have ? since : undefined,
          signal: context.signal,
        },
        download,
      );
      context.progress.add({ requests: http.requests });
      if (notModified) {
        context.log.log(
          'info',
          'signs.snapshot',
          `The snapshot of ${previous.last_modified ?? '?'} is still current: kept, not downloaded`,
          { last_modified: previous.last_modified },
        );
        return {
          rowsIn: 0,
          rowsOut: 0,
          notes: { unchanged: true, snapshot_moment: previous.last_modified ?? null },
        };
      }
      const lastModified = Date.parse(String(headers['last-modified'] ?? ''));
      const moment = Number.isNaN(lastModified)
        ? 'NULL::TIMESTAMPTZ'
        : `TIMESTAMPTZ ${quotedString(new Date(lastModified).toISOString())}`;
      // DuckDB reads a JSON array on one thread: its records are first set apart as
      // they are (unparsed text) in a Parquet file, which every thread can then type.
      const records = join(staging, 'records.parquet');
      const source =
        options.format === 'json'
          ? `(SELECT raw, md5(raw::VARCHAR) AS event_hash FROM read_parquet(${quotedString(records)}))`
          : // A row that does not fit the header (too many or too few fields) is set aside
            // by DuckDB in a rejects table, and quarantined below with its line and text.
            `(SELECT to_json(c) AS raw, md5(to_json(c)::VARCHAR) AS event_hash FROM read_csv(${quotedString(download)}, all_varchar = true, header = true, strict_mode = true, store_rejects = true, rejects_table = 'snapshot_rejects', rejects_scan = 'snapshot_reject_scans') c)`;
      const db = await context.database();
      await dropRejects(db);
      // Streamed twice from the file (typed rows, then the untypeable ones): nothing
      // is materialised, so memory stays flat whatever the size of the download.
      const typed = `(${typingSelect(source, options.format === 'json' ? 'nested' : 'flat', ['event_hash'])})`;
      const target = join(context.output, SNAPSHOT_DATASET, 'data.parquet');
      await makeFolder(join(context.output, SNAPSHOT_DATASET));
      const scratch = context.scratch;
      const temporary = temporaryPath(target, scratch);
      const quarantineTarget = join(
        context.output,
        QUARANTINE_DATASET,
        `${context.stepId}.parquet`,
      );
      const quarantineTemporary = temporaryPath(quarantineTarget, scratch);
      await makeFolder(join(context.output, QUARANTINE_DATASET));
      let rows: number;
      let quarantined: number;
      try {
        if (options.format === 'json') {
          await db.run(
            `COPY (SELECT json AS raw FROM read_json_objects(${quotedString(download)}, format = 'array'))
             TO ${quotedString(records)} (FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE_BYTES '16MB')`,
          );
          await rm(download, { force: true });
        }
        const cutoff = Number.isNaN(lastModified)
          ? `(SELECT max(publication_timestamp) FROM ${typed} WHERE _problem IS NULL)`
          : moment;
        rows = await db.copy(
          `COPY (SELECT * EXCLUDE (_problem), ${cutoff} AS snapshot_moment FROM ${typed} WHERE _problem IS NULL)
           TO ${quotedString(temporary)} (${PARQUET_FORMAT})`,
        );
        let rejected = '';
        if (options.format === 'csv') {
          // Set apart first: the next scan of the CSV adds its rejects to snapshot_rejects again.
          await db.run(
            'CREATE OR REPLACE TEMP TABLE snapshot_rejects_seen AS SELECT DISTINCT line, error_message, csv_line FROM snapshot_rejects',
          );
          rejected = `UNION ALL SELECT 'CSV line ' || line || ': ' || error_message, to_json(csv_line), NULL::INTEGER, md5(csv_line), NULL::VARCHAR FROM snapshot_rejects_seen`;
        }
        quarantined = await db.copy(
          `COPY (SELECT _problem AS reason, raw_event, NULL::INTEGER AS feed_index, event_hash, raw_event ->> '$.publication_timestamp' AS publication_timestamp_text
                 FROM ${typed} WHERE _problem IS NOT NULL ${rejected})
           TO ${quotedString(quarantineTemporary)} (${PARQUET_FORMAT})`,
        );
      } catch (error) {
        await rm(temporary, { force: true });
        await rm(quarantineTemporary, { force: true });
        throw new DataError(
          `signs.snapshot: the ${options.format.toUpperCase()} download cannot be read: ${(error as Error).message.split('\n')[0] ?? ''}`,
          { cause: error },
        );
      }
      await dropRejects(db);
      await commitFile(temporary, target);
      await context.recordFile(target);
      if (quarantined > 0) {
        await commitFile(quarantineTemporary, quarantineTarget);
        await context.recordFile(quarantineTarget);
      } else {
        await rm(quarantineTemporary, { force: true });
        await rm(quarantineTarget, { force: true });
      }
      await saveDownload(context, request, headers);
      return {
        rowsIn: rows + quarantined,
        rowsOut: rows,
        notes: {
          quarantined,
          snapshot_moment: Number.isNaN(lastModified) ? null : new Date(lastModified).toISOString(),
        },
      };
    } finally {
      await http.close();
      await rm(staging, { recursive: true, force: true });
    }
  },
});
