import { committed } from '../helpers/committed.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { join } from 'node:path';
import { readManifest } from '../helpers/pipeline.js';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import {
  defaultBudget,
  isOutOfMemory,
  MIN_BUDGET,
  parseSize,
  shareBudget,
} from '../../src/duckdb/memory.js';
import { runCli } from '../helpers/cli.js';
import { duck, outputHashes, pipelineProject, testDir, writeFiles } from '../helpers/tmp.js';

const MiB = 2 ** 20;

/** A sort of 3M rows of 200-byte strings: DuckDB needs memory per thread to sort them. */
const WIDE_SORT = `SELECT count(*)::INTEGER AS n FROM (SELECT i, repeat('x', 200) || i AS s FROM range(3000000) t(i) ORDER BY s DESC)`;

describe('the memory budget', () => {
  it('reads sizes as DuckDB writes them', () => {
    expect(parseSize('1GB')).toBe(1e9);
    expect(parseSize('512MB')).toBe(512e6);
    expect(parseSize('2GiB')).toBe(2 * 2 ** 30);
    expect(parseSize('1.5 gb')).toBe(1.5e9);
    expect(parseSize('300 MiB')).toBe(300 * MiB);
    expect(parseSize('1G')).toBeUndefined();
    expect(parseSize('lots')).toBeUndefined();
    expect(parseSize('80%')).toBeUndefined();
  });

  it('defaults to a quarter of the memory available, never less than the minimum', () => {
    expect(defaultBudget(24 * 2 ** 30)).toBe(6 * 2 ** 30);
    expect(defaultBudget(2 * 2 ** 30)).toBe(512 * MiB);
    expect(defaultBudget(512 * MiB)).toBe(MIN_BUDGET);
  });

  it('gives DuckDB 60% of the budget and no more threads than that can feed (200 MiB each)', () => {
    expect(shareBudget(1e9, 16, 16)).toEqual({
      budget: 1e9,
      memoryLimit: 6e8,
      threads: 2,
      wanted: 16,
    });
    // 4.8 GiB for DuckDB could feed 24 threads: the 16 cores are the limit
    expect(shareBudget(8 * 2 ** 30, undefined, 16).threads).toBe(16);
    // 1.2 GB for DuckDB feeds 5
    expect(shareBudget(2e9, undefined, 16).threads).toBe(5);
    // never less than one
    expect(shareBudget(MIN_BUDGET, 4, 16).threads).toBe(1);
  });

  it('runs a statement asked to run on 16 threads under a small budget, on the threads it can feed', async () => {
    const budget = 256 * MiB;
    // Without the cap, DuckDB fails this statement under the same memory_limit.
    const raw = await DuckDBInstance.create(':memory:', {
      memory_limit: `${Math.floor((budget * 0.6) / MiB)}MiB`,
      threads: '16',
      preserve_insertion_order: 'false',
      temp_directory: join(await testDir(), 'spill'),
    });
    const connection = await raw.connect();
    const failed = await connection.run(WIDE_SORT).then(
      () => undefined,
      (error: unknown) => error,
    );
    connection.closeSync();
    raw.closeSync();
    expect(isOutOfMemory(failed)).toBe(true);

    const db = await Database.open({
      budget,
      threads: 16,
      tempDirectory: join(await testDir(), 'spill'),
    });
    try {
      expect(db.memory.threads).toBe(1);
      const [setting] = await db.all(`SELECT current_setting('threads') AS threads`);
      expect(Number(setting?.['threads'])).toBe(1);
      expect(await db.all(WIDE_SORT)).toEqual([{ n: 3_000_000 }]);
    } finally {
      db.close();
    }
  });

  it('stops a run that still runs out of memory with exit 1, naming the step and what to change, and keeps what had landed', async () => {
    const definition = (budget: string): string => `name: oom
duckdb: { memory_limit: ${budget}, threads: 4 }
steps:
  - { id: keep_all, kind: sql, options: { file: big.sql, outputs: [big] } }
`;
    // A list aggregate is held whole in memory: no spilling helps it.
    const N = 30_000_000;
    const project = await pipelineProject(definition('4GiB'));
    await writeFiles(project.dir, {
      'sql/big.sql': `CREATE TABLE big AS SELECT len(list(i)) AS n FROM range(${N}) t(i);\n`,
    });
    // With room, the step lands its table.
    const landed = await runCli(['run', project.file, '--output', project.output]);
    expect(landed.code, landed.stderr).toBe(0);
    const table = committed(project.output, 'derived/big/data.parquet');
    expect(await duck(`SELECT n FROM read_parquet('${table}')`)).toEqual([{ n: String(N) }]);
    const before = await outputHashes(project.output, ['manifest.json']);

    // The same step under a budget too small for it.
    await writeFiles(project.dir, { 'pipelines/p.yaml': definition('256MiB') });
    const result = await runCli(['run', project.file, '--output', project.output]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'step keep_all: DuckDB ran out of memory within the budget of 268 MB (duckdb.memory_limit; 161 MB of it for DuckDB, 1 thread)',
    );
    expect(result.stderr).toContain('Raise duckdb.memory_limit in the pipeline definition');
    expect(result.stderr).not.toContain('a bug');
    const { run: manifest } = await readManifest(project.output);
    expect(manifest.status).toBe('failed');
    expect(manifest.steps).toMatchObject([{ id: 'keep_all', status: 'failed', files: [] }]);
    // What had landed is as it was.
    expect(await outputHashes(project.output, ['manifest.json'])).toEqual(before);
  });
});
