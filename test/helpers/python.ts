/**
 * Python with the readers users open the output with (pyarrow, pandas, polars,
 * geopandas, duckdb, rdflib): the virtual environment `.venv` that `.ci/run`
 * makes from test/python/requirements.txt, or ROAD_ETL_PYTHON. Without it the
 * tests that need it are skipped, with a warning that says how to have them.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './cli.js';

const run = promisify(execFile);

function findPython(): string | undefined {
  const candidate = process.env['ROAD_ETL_PYTHON'] ?? join(ROOT, '.venv', 'bin', 'python');
  if (!existsSync(candidate)) return undefined;
  try {
    execFileSync(candidate, ['-c', 'import pyarrow, pandas, polars, geopandas, duckdb, rdflib']);
    return candidate;
  } catch {
    return undefined;
  }
}

export const PYTHON: string | undefined = findPython();
export const NO_PYTHON =
  'no Python with pyarrow, pandas, polars, geopandas, duckdb and rdflib: the tests that read the output with them are skipped (run the lines of .ci/run that make .venv, or set ROAD_ETL_PYTHON)';

/** Runs a Python script (`-c` text, or a file and its arguments) from `cwd`; resolves to its stdout. */
export async function python(args: string[], cwd: string): Promise<string> {
  if (!PYTHON) throw new Error(NO_PYTHON);
  const { stdout } = await run(PYTHON, args, { cwd, maxBuffer: 64 * 2 ** 20 });
  return stdout;
}
