import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Database } from '../../src/duckdb/database.js';

/** A temporary folder removed when the current test finishes. */
export async function testDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-test-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes files (path -> text) below dir. */
export async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}

/** Writes the result of a SELECT as a Parquet file. */
export async function writeParquet(path: string, select: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const db = await Database.open();
  try {
    await db.run(`COPY (${select}) TO '${path.replaceAll("'", "''")}' (FORMAT parquet)`);
  } finally {
    db.close();
  }
}

/** Runs a query in a fresh DuckDB and returns the rows as JSON-friendly objects. */
export async function duck(sql: string): Promise<Record<string, unknown>[]> {
  const db = await Database.open();
  try {
    await db.run(`SET TimeZone = 'UTC'`);
    return await db.all(sql);
  } finally {
    db.close();
  }
}
