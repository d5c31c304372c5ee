/** How DuckDB writes an extract: on one thread when it sorts. */
import type { Database } from '../duckdb/database.js';
import type { ExportSource } from './columns.js';

/**
 * Whether DuckDB's plan of a query holds a full sort (an ORDER BY without a
 * LIMIT, which is a top-n and small).
 */
async function sorts(db: Database, source: ExportSource): Promise<boolean> {
  const rows = await db.all(`EXPLAIN SELECT * FROM ${source.sql}`, source.params);
  return rows.some(
    (r) => typeof r['explain_value'] === 'string' && /\bORDER_BY\b/.test(r['explain_value']),
  );
}

/**
 * Runs `write` (the COPY of an extract) with DuckDB on one thread when the
 * source sorts its rows. A sort of millions of wide rows does not fit a small
 * budget and goes to disk, and there one thread does the same work in less
 * time and memory than two: the national CSV extract of today's signs
 * (2.9M rows, `ORDER BY sign_id`, 600 MB for DuckDB) took 72.6 s of CPU,
 * 38.7 s and 1,239 MB on two threads; 28.9 s of CPU, 30.3 s and 825 MB on
 * one. Unsorted, two threads take the same CPU as one in half the time.
 */
export async function writing<T>(
  db: Database,
  source: ExportSource,
  write: () => Promise<T>,
): Promise<T> {
  return (await sorts(db, source)) ? db.withThreads(1, write) : write();
}
