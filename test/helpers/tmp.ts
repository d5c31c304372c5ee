import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { ROOT } from './cli.js';
import { committed, committedPaths } from './committed.js';

/** A temporary folder removed when the current test finishes. */
export async function testDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-test-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A temporary folder for several tests of one file, made when first asked for
 * and removed once the file's tests have run: call at the top of the file.
 */
export function fileDir(): () => Promise<string> {
  let dir: Promise<string> | undefined;
  afterAll(async () => {
    if (dir) await rm(await dir, { recursive: true, force: true });
  });
  return () => (dir ??= mkdtemp(join(tmpdir(), 'road-etl-test-')));
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

/**
 * The DuckDB of the tests' own queries, opened once per worker (about 12 ms of
 * CPU each time it is opened): each query has a connection of its own.
 */
let queries: Promise<Database> | undefined;

/** Runs a query on a fresh connection (UTC) and returns the rows as JSON-friendly objects. */
export async function duck(sql: string): Promise<Record<string, unknown>[]> {
  queries ??= Database.open();
  const db = await (await queries).fork();
  try {
    return await db.all(sql);
  } finally {
    db.close();
  }
}

/**
 * A project folder for a pipeline run by the CLI: pipelines/p.yaml and copies
 * of the shipped SQL files it names. In `dir`, or a fresh test folder.
 */
export async function pipelineProject(
  yaml: string,
  sqlFiles: readonly string[] = [],
  dir?: string,
): Promise<{ dir: string; file: string; output: string }> {
  const folder = dir ?? (await testDir());
  const files: Record<string, string> = { 'pipelines/p.yaml': yaml };
  for (const name of sqlFiles)
    files[`sql/${name}`] = await readFile(join(ROOT, 'sql', name), 'utf8');
  await writeFiles(folder, files);
  return { dir: folder, file: join(folder, 'pipelines/p.yaml'), output: join(folder, 'output') };
}

/** The sha256 of every file of an output folder (path -> hash; a committed one: the files its commit names), leaving out .state and `skip`. */
export async function outputHashes(
  output: string,
  skip: readonly string[] = [],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const hash = async (path: string) =>
    createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
  // A committed folder holds what its commit names, each file by its path; views.sql names
  // each data file's version, whose bytes are compared as that file's.
  const paths = committedPaths(output);
  if (paths.length > 0) {
    for (const path of paths) {
      if (skip.includes(basename(path))) continue;
      const file = committed(output, path);
      found.set(
        path,
        path === 'views.sql'
          ? createHash('sha256')
              .update(
                (await readFile(file, 'utf8')).replace(
                  /\.v\d{8}T\d{6}Z-[0-9a-f]+\.parquet/g,
                  '.parquet',
                ),
              )
              .digest('hex')
          : await hash(file),
      );
    }
    return found;
  }
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.state') await walk(path);
      } else if (!skip.includes(entry.name)) {
        found.set(relative(output, path), await hash(path));
      }
    }
  };
  await walk(output);
  return found;
}

/** Rows of a dataset in one output folder and not in the other, both ways (every column compared). */
export async function datasetDifference(a: string, b: string, dataset: string): Promise<number> {
  const read = (folder: string) =>
    `(SELECT * FROM read_parquet('${folder}/${dataset}/**/*.parquet', hive_partitioning = true))`;
  const [row] = await duck(
    `SELECT count(*) AS n FROM ((FROM ${read(a)} EXCEPT ALL FROM ${read(b)}) UNION ALL (FROM ${read(b)} EXCEPT ALL FROM ${read(a)}))`,
  );
  return Number(row?.['n']);
}
