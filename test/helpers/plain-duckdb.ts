/**
 * DuckDB as someone without road-etl runs it: a separate Node process with
 * only `@duckdb/node-api`, in a folder of their choice, optionally running the
 * folder's `views.sql` first (as `duckdb -c ".read views.sql"` does).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const API = pathToFileURL(createRequire(import.meta.url).resolve('@duckdb/node-api')).href;

const SCRIPT = `const { DuckDBInstance } = await import(${JSON.stringify(API)});
const { readFileSync } = await import('node:fs');
const db = await (await DuckDBInstance.create(':memory:')).connect();
const [views, ...statements] = JSON.parse(process.argv[2]);
if (views) await db.run(readFileSync('views.sql', 'utf8'));
const results = [];
for (const sql of statements) results.push((await db.runAndReadAll(sql)).getRowObjectsJson());
console.log(JSON.stringify(results));
`;

/** The rows of each statement, run in order in one session in `cwd`. Rejects with DuckDB's error. */
export async function plainDuckDb(
  cwd: string,
  statements: readonly string[],
  options: { views: boolean },
): Promise<Record<string, unknown>[][]> {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-plain-'));
  try {
    const script = join(dir, 'plain.mjs');
    await writeFile(script, SCRIPT);
    const child = spawn(
      process.execPath,
      [script, JSON.stringify([options.views, ...statements])],
      {
        cwd,
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const [code] = (await once(child, 'close')) as [number];
    if (code !== 0) throw new Error(`plain DuckDB in ${cwd}: ${err}`);
    return JSON.parse(out) as Record<string, unknown>[][];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
