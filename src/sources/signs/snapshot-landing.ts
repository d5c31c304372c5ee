/**
 * Landing the v1 current-state download (4.6): the JSON or CSV file typed by
 * DuckDB with the same typing as the event feed (schema.ts) into
 * signs/snapshot/data.parquet, replacing the previous one, and the records
 * that cannot be typed (or CSV rows that do not fit the header) quarantined.
 * Streamed from the file, never held in memory: the national file is hundreds
 * of MB.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, STAGED_FORMAT, type Database } from '../../duckdb/database.js';
import { DataError } from '../../errors.js';
import { commitFile, makeFolder, temporaryPath } from '../../util/fs.js';
import { QUARANTINE_DATASET } from './landing.js';
import { signTyping } from './schema.js';
import { portableCopySql } from '../../duckdb/portable.js';
import type { FolderFiles } from '../../duckdb/folder-files.js';

export const SNAPSHOT_DATASET = join('signs', 'snapshot');

export interface SnapshotDownload {
  /** The downloaded file, in `staging`. */
  file: string;
  format: 'json' | 'csv';
  /** The service's Last-Modified (ms), the snapshot's moment; NaN when it gave none. */
  lastModified: number;
  staging: string;
  output: string;
  /** The folder's listing: the quarantine's last file may be the commit's, not fetched. */
  files: FolderFiles;
  scratch: string;
  stepId: string;
}

export interface LandedSnapshot {
  rows: number;
  quarantined: number;
  /** The files written (the snapshot, and the quarantine when some records could not be typed). */
  files: string[];
}

/** The tables in which DuckDB sets aside the CSV rows that do not fit the header. */
async function dropRejects(db: Database): Promise<void> {
  await db.run(
    'DROP TABLE IF EXISTS snapshot_rejects; DROP TABLE IF EXISTS snapshot_reject_scans; DROP TABLE IF EXISTS snapshot_rejects_seen',
  );
}

/** The records of the download as rows of (raw, event_hash). */
function recordsOf(download: SnapshotDownload, records: string): string {
  return download.format === 'json'
    ? `(SELECT raw, md5(raw::VARCHAR) AS event_hash FROM read_parquet(${quotedString(records)}))`
    : // A row that does not fit the header (too many or too few fields) is set aside
      // by DuckDB in a rejects table, and quarantined with its line and text.
      `(SELECT to_json(c) AS raw, md5(to_json(c)::VARCHAR) AS event_hash FROM read_csv(${quotedString(download.file)}, all_varchar = true, header = true, strict_mode = true, store_rejects = true, rejects_table = 'snapshot_rejects', rejects_scan = 'snapshot_reject_scans') c)`;
}

/** Writes the typed rows and the quarantine to temporary files; resolves to their row counts. */
async function writeTyped(
  db: Database,
  download: SnapshotDownload,
  temporary: { snapshot: string; quarantine: string },
): Promise<{ rows: number; quarantined: number }> {
  // DuckDB reads a JSON array on one thread: its records are first set apart as
  // they are (unparsed text) in a Parquet file, which every thread can then type.
  const records = join(download.staging, 'records.parquet');
  if (download.format === 'json') {
    await db.run(
      `COPY (SELECT json AS raw FROM read_json_objects(${quotedString(download.file)}, format = 'array'))
       TO ${quotedString(records)} (${STAGED_FORMAT})`,
    );
    await rm(download.file, { force: true });
  }
  // Streamed twice from the file (typed rows, then the untypeable ones): nothing
  // is materialised, so memory stays flat whatever the size of the download.
  const typed = await signTyping(
    db,
    recordsOf(download, records),
    download.format === 'json' ? 'nested' : 'flat',
  );
  const cutoff = Number.isNaN(download.lastModified)
    ? `(SELECT max(publication_timestamp) FROM ${typed} WHERE _problem IS NULL)`
    : `TIMESTAMPTZ ${quotedString(new Date(download.lastModified).toISOString())}`;
  const rows = await db.copy(
    await portableCopySql(
      db,
      `(SELECT * EXCLUDE (_problem), ${cutoff} AS snapshot_moment FROM ${typed} WHERE _problem IS NULL)`,
      temporary.snapshot,
      // The national download as it came: sorting 3M wide rows would double the step's cost.
      { spatialOrder: false },
    ),
  );
  let rejected = '';
  if (download.format === 'csv') {
    // Set apart first: the next scan of the CSV adds its rejects to snapshot_rejects again.
    await db.run(
      'CREATE OR REPLACE TEMP TABLE snapshot_rejects_seen AS SELECT DISTINCT line, error_message, csv_line FROM snapshot_rejects',
    );
    rejected = `UNION ALL SELECT 'CSV line ' || line || ': ' || error_message, to_json(csv_line), NULL::INTEGER, md5(csv_line), NULL::VARCHAR FROM snapshot_rejects_seen`;
  }
  const quarantined = await db.copy(
    await portableCopySql(
      db,
      `(SELECT _problem AS reason, raw_event, NULL::INTEGER AS feed_index, event_hash, raw_event ->> '$.publication_timestamp' AS publication_timestamp_text
        FROM ${typed} WHERE _problem IS NOT NULL ${rejected})`,
      temporary.quarantine,
    ),
  );
  return { rows, quarantined };
}

/** Types the download and puts the snapshot (and its quarantine) in place. */
export async function landSnapshot(
  db: Database,
  download: SnapshotDownload,
): Promise<LandedSnapshot> {
  const target = join(download.output, SNAPSHOT_DATASET, 'data.parquet');
  const quarantineTarget = join(download.output, QUARANTINE_DATASET, `${download.stepId}.parquet`);
  await makeFolder(join(download.output, SNAPSHOT_DATASET));
  await makeFolder(join(download.output, QUARANTINE_DATASET));
  const temporary = {
    snapshot: temporaryPath(target, download.scratch),
    quarantine: temporaryPath(quarantineTarget, download.scratch),
  };
  await dropRejects(db);
  let counts: { rows: number; quarantined: number };
  try {
    counts = await writeTyped(db, download, temporary);
  } catch (error) {
    await rm(temporary.snapshot, { force: true });
    await rm(temporary.quarantine, { force: true });
    throw new DataError(
      `signs.snapshot: the ${download.format.toUpperCase()} download cannot be read: ${(error as Error).message.split('\n')[0] ?? ''}`,
      { cause: error },
    );
  }
  await dropRejects(db);
  await commitFile(temporary.snapshot, target);
  const files = [target];
  if (counts.quarantined > 0) {
    await commitFile(temporary.quarantine, quarantineTarget);
    files.push(quarantineTarget);
  } else {
    await rm(temporary.quarantine, { force: true });
    await download.files.remove(quarantineTarget);
  }
  return { ...counts, files };
}
