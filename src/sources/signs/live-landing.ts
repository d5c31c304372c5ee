/**
 * Landing a download of today's API: the file (GeoJSON or v4 CSV) made into
 * features, typed by DuckDB (live.ts), and written as one snapshot partition
 * (signs/live_snapshots/snapshot=<moment>/) with the features that cannot be
 * typed quarantined beside it, each file put in place whole.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PARQUET_FORMAT, quotedString, type Database } from '../../duckdb/database.js';
import { partitionFolder } from '../../duckdb/partitions.js';
import { DataError, explainDataError } from '../../errors.js';
import { writeThrough } from '../../util/fs.js';
import { arrayMemberToLines } from '../../util/json-lines.js';
import { engineSql } from '../../duckdb/sql-files.js';
import type { RunContext, RunOutcome } from '../context.js';
import { LIVE_DATASET, LIVE_QUARANTINE_DATASET, csvFeatures, featureLines } from './live.js';

/** Parquet for files that live only in staging: fast to write and read back. */
const STAGED = `FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE_BYTES '16MB'`;

export interface LiveDownload {
  /** The downloaded file, in `staging`. */
  file: string;
  format: 'geojson' | 'csv';
  api: 'v4' | 'v5';
  /** When it was downloaded: the snapshot's moment. */
  downloadedAt: number;
  staging: string;
  output: string;
  scratch: string;
  stepId: string;
}

export interface LandedLive {
  /** The snapshot's partition value: its moment in ISO 8601 UTC to the millisecond. */
  snapshot: string;
  rows: number;
  quarantined: number;
  /** The files written (the snapshot's, and the quarantine's when some features could not be typed). */
  files: string[];
}

/** The features of the file as a SQL relation of one JSON column `f`. */
async function featuresOf(download: LiveDownload, read: Reader): Promise<string> {
  if (download.format === 'csv') {
    // The rows are made into features in a pass of their own: typed in the same
    // statement, DuckDB held far more of a national file than the budget allows.
    const made = join(download.staging, 'features.parquet');
    await read(
      `COPY (SELECT f FROM ${csvFeatures(download.file)}) TO ${quotedString(made)} (${STAGED})`,
    );
    await rm(download.file, { force: true });
    return `(SELECT f FROM read_parquet(${quotedString(made)}))`;
  }
  // One object of a gigabyte cannot be read a piece at a time: its features become lines.
  const lines = join(download.staging, 'features.jsonl');
  const split = await arrayMemberToLines(download.file, lines, 'features');
  if (!split.found)
    throw new DataError(
      `signs.live: the ${download.api} answer is not a FeatureCollection (no features array)`,
    );
  await rm(download.file, { force: true });
  return featureLines(lines);
}

type Reader = (sql: string, values?: Record<string, string>) => Promise<void>;

/** Types the downloaded file and lands it as a snapshot (and its quarantine). */
export async function landLive(db: Database, download: LiveDownload): Promise<LandedLive> {
  // A download DuckDB cannot read or type as a whole is a data error, not a bug.
  const read: Reader = (sql, values) =>
    db.run(sql, values).catch((error: unknown) => {
      throw explainDataError(error, `signs.live: the ${download.api} download`);
    });
  const features = await featuresOf(download, read);
  const moment = new Date(download.downloadedAt).toISOString();
  // The typed rows are set apart once, then written as the snapshot and the quarantine.
  const kept = join(download.staging, 'typed.parquet');
  await db.run(`CREATE OR REPLACE TEMP VIEW live_features AS SELECT f FROM ${features}`);
  try {
    const typing = await engineSql('sources/signs', 'live_typing');
    await read(`COPY (${typing}) TO ${quotedString(kept)} (${STAGED})`, {
      api: download.api,
      downloaded_at: moment,
    });
  } finally {
    await db.run('DROP VIEW IF EXISTS live_features');
  }
  const typedRows = `read_parquet(${quotedString(kept)})`;
  const [counted] = await db.all(
    `SELECT count(*) FILTER (WHERE _problem IS NOT NULL) AS n FROM ${typedRows}`,
  );
  const quarantined = Number(counted?.['n'] ?? 0);
  const files: string[] = [];
  const write = async (query: string, target: string): Promise<number> => {
    const rows = await writeThrough(target, download.scratch, (temporary) =>
      db.copy(`COPY ${query} TO ${quotedString(temporary)} (${PARQUET_FORMAT})`),
    );
    files.push(target);
    return rows;
  };
  if (quarantined > 0) {
    const name = `${download.stepId}-${moment.replace(/[-:.]/g, '')}.parquet`;
    await write(
      `(SELECT _problem AS reason, raw_feature, api, downloaded_at FROM ${typedRows} WHERE _problem IS NOT NULL)`,
      join(download.output, LIVE_QUARANTINE_DATASET, name),
    );
  }
  const rows = await write(
    `(SELECT * EXCLUDE (_problem, raw_feature) FROM ${typedRows} WHERE _problem IS NULL)`,
    join(
      download.output,
      LIVE_DATASET,
      partitionFolder('snapshot', moment),
      `${download.stepId}.parquet`,
    ),
  );
  return { snapshot: moment, rows, quarantined, files };
}

/**
 * Lands a download as the step's snapshot: its files recorded for the
 * manifest, the features that could not be typed warned of; resolves to what
 * the step did.
 */
export async function landLiveSnapshot(
  context: RunContext,
  download: Pick<LiveDownload, 'file' | 'format' | 'api' | 'downloadedAt'>,
): Promise<RunOutcome> {
  const landed = await landLive(await context.database(), {
    ...download,
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
    notes: { api: download.api, snapshot: landed.snapshot, quarantined: landed.quarantined },
  };
}
