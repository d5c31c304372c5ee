/**
 * The rows of an extract set apart for its write (record-reuse.ts): their
 * keys and fingerprints in a temporary table, with the rows to make; and
 * the fingerprints of a written file kept beside its index, for DuckDB.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  PARQUET_FORMAT,
  quotedIdentifier,
  quotedString,
  type Database,
} from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import type { Column, ExportSource } from './columns.js';
import type { IndexedFile } from './record-index.js';
import { ROW_HASH } from './row-order.js';

/** The temporary table of a write's keys and fingerprints, and its column of the rows to make. */
export const PLAN_TABLE = 'road_etl_plan';
export const MADE = 'road_etl_row';

/**
 * Sets the rows' keys and fingerprints apart in a temporary table, in one
 * scan of the source; with `unchanged` (the fingerprints of the last file,
 * as Parquet), also the whole rows whose fingerprint is not among them, as
 * a struct each, so that the rows to make need no second scan.
 */
export async function setApart(
  db: Database,
  rows: { keyed: string; keep: readonly string[]; columns: readonly Column[] },
  params: ExportSource['params'],
  unchanged?: string,
): Promise<void> {
  const whole = `struct_pack(${rows.columns.map((c) => `${quotedIdentifier(c.name)} := ${quotedIdentifier(c.name)}`).join(', ')})`;
  const made = unchanged
    ? `, CASE WHEN ${ROW_HASH} IN (SELECT h FROM read_parquet(${quotedString(unchanged)})) THEN NULL ELSE ${whole} END AS ${MADE}`
    : '';
  await db.run(
    `CREATE OR REPLACE TEMP TABLE ${PLAN_TABLE} AS SELECT ${[...rows.keep, ROW_HASH].join(', ')}${made} FROM ${rows.keyed}`,
    params,
  );
}

/**
 * Keeps the fingerprints that one row alone has, as Parquet beside the index
 * at `indexPath` under a name of its own (the index names it), for the next
 * night's scan.
 */
export async function keepFingerprints(
  db: Database,
  indexPath: string,
  scratch: string,
): Promise<NonNullable<IndexedFile['hashes']>> {
  const file = `${basename(indexPath)}.${randomBytes(4).toString('hex')}.hashes.parquet`;
  const count = await writeThrough(join(dirname(indexPath), file), scratch, (temporary) =>
    db.copy(
      `COPY (SELECT ${ROW_HASH} AS h FROM ${PLAN_TABLE} GROUP BY ALL HAVING count(*) = 1) ` +
        `TO ${quotedString(temporary)} (${PARQUET_FORMAT})`,
    ),
  );
  return { file, count };
}

/** Removes the fingerprints kept beside the index at `indexPath` other than those it names now. */
export async function forgetFingerprints(indexPath: string, kept: string): Promise<void> {
  const prefix = `${basename(indexPath)}.`;
  const names = await readdir(dirname(indexPath)).catch(() => [] as string[]);
  for (const name of names)
    if (name !== kept && name.startsWith(prefix) && name.endsWith('.hashes.parquet'))
      await rm(join(dirname(indexPath), name), { force: true });
}

/** The fingerprints kept beside an index, if they are there, as many as it says. */
export async function keptFingerprints(
  db: Database,
  indexPath: string,
  hashes: IndexedFile['hashes'],
): Promise<string | undefined> {
  if (hashes === undefined) return undefined;
  const path = join(dirname(indexPath), hashes.file);
  try {
    const [row] = await db.all(`SELECT count(*) AS n FROM read_parquet(${quotedString(path)})`);
    return Number(row?.['n']) === hashes.count ? path : undefined;
  } catch {
    return undefined;
  }
}

/** Drops the table of keys and fingerprints, and gives its memory back, before the file is put together. */
export async function letGo(db: Database): Promise<void> {
  await db.run(`DROP TABLE IF EXISTS ${PLAN_TABLE}`);
  await db.releaseMemory();
}
