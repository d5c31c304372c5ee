/**
 * The views of a sql step's outputs while its file runs: the file makes tables
 * of the same names, which are written out and then dropped for the view
 * again. A partial build (a few partitions, no column added) sets the view
 * aside and puts it back, as binding a view over a year of partitions again
 * takes milliseconds and a rename none; a full build (perhaps other columns)
 * makes it anew.
 */
import { quotedIdentifier, type Database } from '../duckdb/database.js';

/** The name an output's view has while set aside. */
function asideName(table: string): string {
  return `road_etl_aside_${table}`;
}

async function mainViews(db: Database): Promise<Set<string>> {
  const rows = await db.all(
    `SELECT view_name AS name FROM duckdb_views() WHERE NOT internal AND NOT temporary AND schema_name = 'main'`,
  );
  return new Set(rows.map((row) => String(row['name'])));
}

/**
 * Makes room for the outputs' tables: each output's view is dropped, or, with
 * `keep`, set aside. Resolves to the views set aside (output -> name aside).
 */
export async function setViewsAside(
  db: Database,
  outputs: readonly string[],
  keep: boolean,
): Promise<Map<string, string>> {
  const aside = new Map<string, string>();
  const views = await mainViews(db);
  for (const table of outputs) {
    if (!views.has(table)) continue;
    if (!keep) {
      await db.run(`DROP VIEW ${quotedIdentifier(table)}`);
      continue;
    }
    const name = asideName(table);
    if (views.has(name)) await db.run(`DROP VIEW ${quotedIdentifier(name)}`);
    await db.run(`ALTER VIEW ${quotedIdentifier(table)} RENAME TO ${quotedIdentifier(name)}`);
    aside.set(table, name);
  }
  return aside;
}

/** Puts the view of `table` back, once its table is gone; false when none was set aside. */
export async function putViewBack(
  db: Database,
  aside: Map<string, string>,
  table: string,
): Promise<boolean> {
  const name = aside.get(table);
  if (name === undefined) return false;
  await db.run(`ALTER VIEW ${quotedIdentifier(name)} RENAME TO ${quotedIdentifier(table)}`);
  aside.delete(table);
  return true;
}

/**
 * Puts back the views still aside (a file or a write that failed): what the
 * file made of their names goes, so that the steps after see the data as it
 * is on disk.
 */
export async function putViewsBack(db: Database, aside: Map<string, string>): Promise<void> {
  if (aside.size === 0) return;
  const made = await createdOutputs(db, [...aside.keys()]);
  for (const table of [...aside.keys()]) {
    const kind = made.get(table);
    if (kind !== undefined) await db.run(`DROP ${kind} ${quotedIdentifier(table)}`);
    await putViewBack(db, aside, table);
  }
}

/**
 * The outputs the file made, each a table or a view (a view is streamed into
 * Parquet, never held in memory).
 */
export async function createdOutputs(
  db: Database,
  outputs: readonly string[],
): Promise<Map<string, 'TABLE' | 'VIEW'>> {
  const created = new Map<string, 'TABLE' | 'VIEW'>();
  for (const row of await db.all(
    `SELECT table_name AS name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main'`,
  )) {
    created.set(String(row['name']), 'TABLE');
  }
  for (const row of await db.all(
    `SELECT view_name AS name FROM duckdb_views() WHERE NOT internal AND NOT temporary AND schema_name = 'main'`,
  )) {
    if (outputs.includes(String(row['name']))) created.set(String(row['name']), 'VIEW');
  }
  return created;
}
