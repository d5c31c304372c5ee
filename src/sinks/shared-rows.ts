/**
 * What one extract reads of its source, kept for the next extract of the
 * same rows in the same run: the CSV, GeoJSON and FlatGeobuf of one query (a
 * nightly pipeline's extracts of one table) each read every row twice, for
 * the keys and fingerprints of all (record-plan.ts) and for the rows that
 * changed (record-reuse.ts); kept, the later extracts read their source
 * not at all. What is kept is used only while the folder's data files are
 * those it was read from (each file's name, size and time, `dataPrint`),
 * for the same statement and parameters.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { STATE_FOLDER } from '../layout.js';
import type { ExportSource } from './columns.js';
import { ORDERED_ROWS, withFingerprints } from './row-order.js';

/** Keys and fingerprints set apart in a staging file: what read them, and the columns it holds (quoted). */
export interface KeptPlan {
  key: string;
  file: string;
  columns: readonly string[];
}

/** The fingerprints of a kept plan in an extract's order (their halves), and what ordered them. */
export interface KeptOrder {
  key: string;
  hi: Uint32Array;
  lo: Uint32Array;
}

interface Kept {
  plan?: KeptPlan;
  order?: KeptOrder;
  /** Rows picked by their fingerprints (a temporary table), and what they were read by. */
  rows?: { key: string; table: string; fingerprints: Set<string> };
}

const kept = new WeakMap<Database, Kept>();

/** The table of kept rows: one per database at a time. */
const ROWS_TABLE = 'road_etl_kept_rows';

/**
 * The print of the data below `output` (its Parquet files, which the views
 * read; not its state), or below `folders` of it when given: their names,
 * sizes and times, hashed. Another print, other data.
 */
export function dataPrint(output: string, folders?: readonly string[]): string {
  const hash = createHash('sha256');
  // Synchronously: a year of partitions is thousands of files, each a trip through the thread pool otherwise.
  const walk = (folder: string, relative: string): void => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return; // not there: no files
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (relative === '' && entry.name === STATE_FOLDER) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path, `${relative}${entry.name}/`);
      else if (entry.name.endsWith('.parquet')) {
        const info = statSync(path, { bigint: true, throwIfNoEntry: false });
        if (info) hash.update(`${relative}${entry.name}\t${info.size}\t${info.mtimeNs}\n`);
      }
    }
  };
  if (folders === undefined) walk(output, '');
  else for (const folder of [...folders].sort()) walk(join(output, folder), `${folder}/`);
  return hash.digest('hex');
}

/** A key of what a statement reads: the data's print, the statement, its parameters. */
export function readingKey(data: string, ...what: unknown[]): string {
  return JSON.stringify([data, ...what], (_key, value: unknown) =>
    typeof value === 'bigint' ? `${value}n` : value,
  );
}

/** The staging file of keys and fingerprints kept under `key`, if it is. */
export function keptPlan(db: Database, key: string): KeptPlan | undefined {
  const plan = kept.get(db)?.plan;
  return plan?.key === key ? plan : undefined;
}

/** Keeps `plan` (the one kept before is removed); its file is then the kept one's to remove. */
export function keepPlan(db: Database, plan: KeptPlan): void {
  const entry = kept.get(db) ?? {};
  if (entry.plan && entry.plan.file !== plan.file) rmSync(entry.plan.file, { force: true });
  // The fingerprints in order of the plan let go of go with it.
  if (entry.plan?.key !== plan.key) delete entry.order;
  entry.plan = plan;
  kept.set(db, entry);
}

/** The fingerprints in order kept under `key`, if they are. */
export function keptOrder(db: Database, key: string): KeptOrder | undefined {
  const order = kept.get(db)?.order;
  return order?.key === key ? order : undefined;
}

/** Keeps the fingerprints of a plan in an extract's order, for the next extract of the same rows and order. */
export function keepOrder(db: Database, order: KeptOrder): void {
  const entry = kept.get(db) ?? {};
  entry.order = order;
  kept.set(db, entry);
}

/**
 * The rows of `keyed` (a FROM item named `alias`, with ROW_HASH) whose
 * fingerprints are `fingerprints`, as a FROM item of the same name: from the
 * rows kept under `key` when they hold them all, else read from `read` (the
 * same rows, or some of them that hold these fingerprints: `keyed` unless
 * given) and kept (a temporary table: they are a few of the source's).
 */
export async function rowsByFingerprint(
  db: Database,
  key: string,
  keyed: string,
  alias: string,
  fingerprints: readonly string[],
  params: ExportSource['params'],
  read = keyed,
): Promise<string> {
  const entry = kept.get(db) ?? {};
  const wanted = withFingerprints(fingerprints);
  const held = entry.rows;
  if (!(held?.key === key && fingerprints.every((f) => held.fingerprints.has(f)))) {
    await db.run(
      `CREATE OR REPLACE TEMP TABLE ${ROWS_TABLE} AS SELECT * FROM ${read} WHERE ${wanted}`,
      params,
    );
    entry.rows = { key, table: ROWS_TABLE, fingerprints: new Set(fingerprints) };
    kept.set(db, entry);
  }
  return `(SELECT * FROM ${quotedIdentifier(ROWS_TABLE)} WHERE ${wanted}) AS ${alias}`;
}

/** Lets go of what is kept for `db` (at the end of a run). */
export function letGoKept(db: Database): void {
  const entry = kept.get(db);
  if (entry?.plan) rmSync(entry.plan.file, { force: true });
  kept.delete(db);
}

/**
 * The rows of `keyed` (the keyed rows of a source, unnamed, with ROW_HASH)
 * whose fingerprints are `fingerprints`, named as the keyed rows are
 * (ORDERED_ROWS), and kept for the next extract of the same rows while the
 * data's print is `data`; read from `read` (some of those rows that hold
 * these fingerprints) when given.
 */
export function sharedRows(
  db: Database,
  data: string,
  keyed: string,
  fingerprints: readonly string[],
  params: ExportSource['params'],
  read = keyed,
): Promise<string> {
  const key = readingKey(data, 'rows', keyed, params);
  return rowsByFingerprint(db, key, keyed, ORDERED_ROWS, fingerprints, params, read);
}
