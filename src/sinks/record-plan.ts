/**
 * The rows of an extract set apart for its write (record-reuse.ts): their
 * keys and fingerprints, from one scan of the source, in a staging Parquet
 * file that the view PLAN_TABLE reads back as they were.
 */
import { rm } from 'node:fs/promises';
import {
  STAGED_FORMAT,
  quotedIdentifier,
  quotedString,
  type Database,
} from '../duckdb/database.js';
import { temporaryPath } from '../util/fs.js';
import { pointColumns } from '../duckdb/geoparquet.js';
import { isGeometry, isNested, type Column, type ExportSource } from './columns.js';
import { ROW_HASH } from './row-order.js';
import { keepPlan, keptPlan, readingKey, type KeptPlan } from './shared-rows.js';

/** The view of a write's keys and fingerprints set apart. */
export const PLAN_TABLE = 'road_etl_plan';

/** Types whose values Parquet does not give back as they were (HUGEINT as DOUBLE, INTERVAL in milliseconds, ...). */
const NOT_KEPT =
  /HUGEINT|BIGNUM|VARINT|TIME_NS|TIMESTAMP_S\b|TIMESTAMP_MS|TIME WITH TIME ZONE|INTERVAL|\bBIT\b|UNION\(|GEOMETRY/;

/**
 * A column into the staging file and back: as it is (cast back: an ENUM
 * comes back as text), as text, or a geometry as WKB; undefined where it
 * cannot pass (such a type within a nested one).
 */
function staging(column: Column): { out: string; back: string } | undefined {
  const name = quotedIdentifier(column.name);
  const type = column.type;
  if (isGeometry(type) && !isNested(type))
    return { out: `ST_AsWKB(${name})`, back: `CAST(ST_GeomFromWKB(${name}) AS ${type})` };
  if (NOT_KEPT.test(type) && isNested(type)) return undefined;
  return { out: NOT_KEPT.test(type) ? `${name}::VARCHAR` : name, back: `CAST(${name} AS ${type})` };
}

/** How the column `name` (quoted) of `columns` goes into a staging file and back (`staging`). */
function stagingOf(columns: readonly Column[], name: string) {
  const column = columns.find((c) => quotedIdentifier(c.name) === name);
  return column && staging(column);
}

/**
 * The SELECT that reads `names` (quoted names of `columns`) and the
 * fingerprint back from the staging file `file` as they were; undefined when
 * a column cannot pass through one.
 */
function readBack(file: string, columns: readonly Column[], names: readonly string[]) {
  const back = names.map((name) => {
    const way = stagingOf(columns, name);
    return way && `${way.back} AS ${name}`;
  });
  if (back.some((b) => b === undefined)) return undefined;
  return `SELECT ${[...back, ROW_HASH].join(', ')} FROM read_parquet(${quotedString(file)})`;
}

/** Rows set apart: the view over a staging file, or a temporary table; the file to remove, if it is this write's. */
export interface Apart {
  table: boolean;
  file?: string;
  /** The key of the plan kept for the run's next extracts of the same rows (shared-rows.ts). */
  kept?: string;
}

/**
 * The columns a plan keeps beyond the keys asked for: the source's point
 * position (geoparquet.ts), which a FlatGeobuf extract of the same rows
 * orders its features by, so that it reads the plan of a CSV or GeoJSON
 * extract before it rather than the source.
 */
function alsoKept(columns: readonly Column[]): string[] {
  const point = pointColumns(columns);
  return point ? [point.longitude, point.latitude].map(quotedIdentifier) : [];
}

/**
 * Sets the rows' keys (`keep`, quoted names of `columns`) and fingerprints
 * apart in one scan of the source: in a staging Parquet file in `scratch`
 * that the view PLAN_TABLE reads back as they were, or, where a key cannot
 * pass through Parquet unchanged, in a temporary table (which holds them in
 * DuckDB's memory). A staging file of the same rows set apart by an extract
 * before (`data`, the source's print: shared-rows.ts) with these keys among
 * its columns is read again, not made. Resolves to what letGo lets go of.
 */
export async function setApart(
  db: Database,
  rows: { keyed: string; keep: readonly string[]; columns: readonly Column[] },
  params: ExportSource['params'],
  scratch: string,
  data?: string,
): Promise<Apart> {
  const wayOf = (name: string) => stagingOf(rows.columns, name);
  if (rows.keep.some((name) => !wayOf(name))) {
    await db.run(
      `CREATE OR REPLACE TEMP TABLE ${PLAN_TABLE} AS SELECT ${[...rows.keep, ROW_HASH].join(', ')} FROM ${rows.keyed}`,
      params,
    );
    return { table: true };
  }
  const key = data === undefined ? undefined : readingKey(data, rows.keyed, params);
  const held = key === undefined ? undefined : keptPlan(db, key);
  const serves = (kept: KeptPlan) =>
    rows.keep.every((name) => kept.columns.includes(name)) && kept.columns.every(wayOf);
  let plan = held && serves(held) ? held : undefined;
  if (plan === undefined) {
    const columns = [...new Set([...rows.keep, ...(key ? alsoKept(rows.columns) : [])])];
    const out = columns.map((name) => `${wayOf(name)!.out} AS ${name}`);
    const file = `${temporaryPath(PLAN_TABLE, scratch)}.parquet`;
    await db.copy(
      `COPY (SELECT ${[...out, ROW_HASH].join(', ')} FROM ${rows.keyed}) TO ${quotedString(file)} (${STAGED_FORMAT})`,
      params,
    );
    plan = { key: key ?? '', file, columns };
    if (key !== undefined) keepPlan(db, plan);
  }
  await db.run(
    `CREATE OR REPLACE TEMP VIEW ${PLAN_TABLE} AS ${readBack(plan.file, rows.columns, plan.columns)!}`,
  );
  // A file kept for the next extract is the kept one's to remove (shared-rows.ts).
  return key === undefined ? { table: false, file: plan.file } : { table: false, kept: key };
}

/**
 * The plan of `keyed` kept for the run's next extracts (shared-rows.ts) as a
 * FROM item of the columns `names` (quoted names of `columns`), as they were,
 * and the fingerprint (ROW_HASH): every row of the source, read from the
 * narrow staging file rather than the source. Undefined when no plan of these
 * rows is kept, or it lacks a column.
 */
export function keptPlanRows(
  db: Database,
  rows: { keyed: string; columns: readonly Column[] },
  names: readonly string[],
  params: ExportSource['params'],
  data: string | undefined,
): string | undefined {
  const plan = data === undefined ? undefined : keptPlan(db, readingKey(data, rows.keyed, params));
  if (plan === undefined || !names.every((name) => plan.columns.includes(name))) return undefined;
  const read = readBack(plan.file, rows.columns, names);
  return read && `(${read})`;
}

/** Drops the rows set apart (`setApart`: the view and its file, or the table), and gives DuckDB's memory back. */
export async function letGo(db: Database, apart: Apart | undefined): Promise<void> {
  if (apart === undefined) return;
  await db.run(`DROP ${apart.table ? 'TABLE' : 'VIEW'} IF EXISTS ${PLAN_TABLE}`);
  if (apart.file !== undefined) await rm(apart.file, { force: true });
  await db.releaseMemory();
}
