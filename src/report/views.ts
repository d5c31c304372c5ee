/**
 * What the report's queries share: the views of the output folder (which
 * exist, with which columns), the report's SQL files run with bound values,
 * and rankings cut to their top rows.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import type { Database, Row } from '../duckdb/database.js';
import { engineSql } from '../duckdb/sql-files.js';
import type { Count } from './data.js';

export const num = (value: unknown): number =>
  value === null || value === undefined ? 0 : Number(value);

export const text = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value as string | number | boolean);

/** The views the report can read, with their columns, and its queries over them. */
export class Views {
  readonly #columns = new Map<string, Set<string>>();

  private constructor(readonly db: Database) {}

  static async of(db: Database): Promise<Views> {
    const views = new Views(db);
    const rows = await db.all(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'`,
    );
    for (const row of rows) {
      const name = String(row['table_name']);
      const columns = views.#columns.get(name) ?? new Set<string>();
      columns.add(String(row['column_name']));
      views.#columns.set(name, columns);
    }
    return views;
  }

  has(view: string, ...columns: string[]): boolean {
    const known = this.#columns.get(view);
    return known !== undefined && columns.every((c) => known.has(c));
  }

  /** Rows of the report's query src/report/sql/<name>.sql, with `values` bound. */
  async query(name: string, values?: Record<string, DuckDBValue>): Promise<Row[]> {
    return this.db.all(await engineSql('report', name), values);
  }

  /** Runs the report's statement src/report/sql/<name>.sql. */
  async run(name: string): Promise<void> {
    await this.db.run(await engineSql('report', name));
  }
}

/**
 * Rows of (ranking, label, n), most frequent first within a ranking, as
 * [label, count] lists by ranking.
 */
export function rankings(rows: readonly Row[]): Map<string, Count[]> {
  const out = new Map<string, Count[]>();
  for (const row of rows) {
    const name = String(row['ranking']);
    const counts = out.get(name) ?? [];
    counts.push([String(row['label']), num(row['n'])]);
    out.set(name, counts);
  }
  return out;
}

/** The first `top` counts, the rest summed under `rest` (with how many there are). */
export function topOf(counts: readonly Count[] | undefined, top: number, rest: string): Count[] {
  if (!counts) return [];
  if (counts.length <= top + 1) return [...counts];
  const others = counts.slice(top).reduce((sum, [, n]) => sum + n, 0);
  return [...counts.slice(0, top), [`${rest} (${counts.length - top})`, others]];
}
