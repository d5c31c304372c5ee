import { committed } from '../helpers/committed.js';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { duck, outputHashes, testDir, writeFiles, writeParquet } from '../helpers/tmp.js';

async function outputWithData(): Promise<string> {
  const dir = await testDir();
  await writeParquet(
    join(dir, 'signs', 'events', 'publication_date=2024-01-01', 'a.parquet'),
    `SELECT range AS id, 'C' || range AS rvv_code FROM range(3)`,
  );
  await writeParquet(
    join(dir, 'signs', 'events', 'publication_date=2024-01-02', 'b.parquet'),
    `SELECT 10 + range AS id, 'D,1' AS rvv_code FROM range(2)`,
  );
  await writeParquet(
    committed(dir, 'derived/summary/data.parquet'),
    `SELECT 'x' AS k, 9007199254740993::BIGINT AS big, 1.25::DECIMAL(5,2) AS d`,
  );
  return dir;
}

describe('road-etl query', () => {
  it('sees every dataset and derived table as a view', async () => {
    const dir = await outputWithData();
    const result = await runCli([
      'query',
      'SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1',
      '--output',
      dir,
      '--format',
      'csv',
    ]);
    expect(result.code).toBe(0);
    expect(parseRfc4180(result.stdout)).toEqual([['view_name'], ['signs_events'], ['summary']]);
  });

  it('prints CSV with hive partition columns, quoting where needed', async () => {
    const dir = await outputWithData();
    const result = await runCli([
      'query',
      'SELECT id, rvv_code, publication_date FROM signs_events ORDER BY id',
      '--output',
      dir,
      '--format',
      'csv',
    ]);
    expect(parseRfc4180(result.stdout)).toEqual([
      ['id', 'rvv_code', 'publication_date'],
      ['0', 'C0', '2024-01-01'],
      ['1', 'C1', '2024-01-01'],
      ['2', 'C2', '2024-01-01'],
      ['10', 'D,1', '2024-01-02'],
      ['11', 'D,1', '2024-01-02'],
    ]);
  });

  it('prints JSON and JSON lines, numbers as numbers where exact', async () => {
    const dir = await outputWithData();
    const json = await runCli([
      'query',
      'SELECT id, rvv_code FROM signs_events WHERE id < 2 ORDER BY id',
      '--output',
      dir,
      '--format',
      'json',
    ]);
    expect(JSON.parse(json.stdout)).toEqual([
      { id: 0, rvv_code: 'C0' },
      { id: 1, rvv_code: 'C1' },
    ]);
    const lines = await runCli([
      'query',
      'SELECT * FROM summary',
      '--output',
      dir,
      '--format',
      'jsonl',
    ]);
    expect(
      lines.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([{ k: 'x', big: '9007199254740993', d: 1.25 }]);
    const empty = await runCli([
      'query',
      'SELECT * FROM summary WHERE false',
      '--output',
      dir,
      '--format',
      'json',
    ]);
    expect(JSON.parse(empty.stdout)).toEqual([]);
  });

  it('prints a table, cutting it at --max-rows', async () => {
    const dir = await outputWithData();
    const result = await runCli([
      'query',
      'SELECT id FROM signs_events ORDER BY id',
      '--output',
      dir,
      '--max-rows',
      '2',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('│ 0  │');
    expect(result.stdout).toContain('│ 1  │');
    expect(result.stdout).not.toContain('│ 10 │');
    expect(result.stdout).toContain('5 rows (3 not shown');
  });

  it('reads only: a write in any disguise is refused with exit 2, and the folder is byte-identical after each', async () => {
    const dir = await outputWithData();
    const before = await outputHashes(dir);
    const landed = join(dir, 'signs', 'events', 'publication_date=2024-01-01', 'a.parquet');
    const outside = join(dir, '..', `outside-${Date.now()}.db`);
    const copy = `COPY (SELECT 1 AS id) TO '${landed}' (FORMAT parquet)`;
    const refused: [string, RegExp][] = [
      [copy, /only reads .*\(COPY\)/],
      [`EXPLAIN ANALYZE ${copy}`, /--explain/],
      [`explain analyse ${copy}`, /--explain/],
      [`/* a plan */ EXPLAIN -- only\n /* x */ ANALYZE ${copy}`, /--explain/],
      [`EXPLAIN ${copy}`, /--explain/],
      [`EXPLAIN ANALYZE SELECT * FROM signs_events`, /--explain/],
      // DuckDB nests block comments and ends a -- comment at a carriage return.
      [`EXPLAIN /* /* */ SELECT 1 -- */ ANALYZE ${copy}`, /--explain/],
      [`EXPLAIN --\rANALYZE ${copy}`, /--explain/],
      [`EXPLAIN --\rANALYZE COPY (SELECT 'a\nSELECT 1 --' AS x) TO '${landed}'`, /--explain/],
      [`/* /* */ SELECT 1 -- */ ${copy}`, /only reads .*\(COPY\)/],
      ['/* /* */ SELECT 1 -- */', /no statement/],
      [
        `COPY (WITH t AS (SELECT 1 AS id) SELECT * FROM t) TO '${landed}' (FORMAT parquet)`,
        /only reads .*\(COPY\)/,
      ],
      [`SELECT 1; ${copy}`, /one statement \(there are 2\)/],
      [`\n-- SELECT 1\n${copy}`, /only reads .*\(COPY\)/],
      [`/* SELECT 1 */ ${copy}`, /only reads .*\(COPY\)/],
      [`EXPORT DATABASE '${join(dir, 'exported')}'`, /only reads .*\(EXPORT\)/],
      [`ATTACH '${outside}'`, /only reads .*\(ATTACH\)/],
      ['INSTALL spatial', /only reads .*\(LOAD\)/],
      ['SET threads = 1', /only reads .*\(SET\)/],
      ['PRAGMA threads = 1', /only reads/],
      ['CREATE TABLE t AS SELECT 1', /only reads .*\(CREATE\)/],
      ['CREATE OR REPLACE VIEW signs_events AS SELECT 1', /only reads .*\(CREATE\)/],
      ['SELECT 1; SELECT 2', /one statement \(there are 2\)/],
    ];
    for (const [sql, message] of refused) {
      const result = await runCli(['query', sql, '--output', dir]);
      expect(result.code, sql).toBe(2);
      expect(result.stderr, sql).toMatch(message);
      expect(result.stdout.trim(), sql).toBe('');
      expect(await outputHashes(dir), sql).toEqual(before);
    }
    await expect(stat(outside)).rejects.toThrow();
    // What reads goes through, in its usual forms.
    for (const sql of [
      '/* count */ SELECT count(*) FROM signs_events -- all',
      'WITH t AS (SELECT * FROM signs_events) SELECT count(*) FROM t',
      'FROM signs_events SELECT count(*)',
      'SUMMARIZE signs_events',
      'DESCRIBE signs_events',
    ]) {
      const result = await runCli(['query', sql, '--output', dir, '--format', 'csv']);
      expect(result.code, `${sql}: ${result.stderr}`).toBe(0);
    }
    expect(await outputHashes(dir)).toEqual(before);
  });

  it('shows the plan of a SELECT with --explain, without running it', async () => {
    const dir = await outputWithData();
    const before = await outputHashes(dir);
    const plan = await runCli([
      'query',
      '--explain',
      "/* a /* nested */ comment */ SELECT count(*) FROM signs_events WHERE rvv_code <> 'a\nSELECT 1 --' -- */",
      '--output',
      dir,
    ]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/READ_PARQUET|PARQUET_SCAN|TABLE_SCAN/);
    expect(plan.stdout).toMatch(/UNGROUPED_AGGREGATE/);
    const copy = await runCli([
      'query',
      '--explain',
      `COPY (SELECT 1) TO '${join(dir, 'x.csv')}'`,
      '--output',
      dir,
    ]);
    expect(copy.code).toBe(2);
    expect(copy.stderr).toMatch(/only reads .*\(COPY\)/);
    expect(await outputHashes(dir)).toEqual(before);
  });

  it("keeps DuckDB's spill folder to itself: the working folder's .tmp cannot be read", async () => {
    const dir = await outputWithData();
    const cwd = await testDir();
    await writeFiles(cwd, { '.tmp/secret.txt': 'not for the query\n' });
    const read = await runCli(
      ['query', "SELECT content FROM read_text('.tmp/secret.txt')", '--output', dir],
      { cwd },
    );
    expect(read.code).toBe(2);
    expect(read.stdout).not.toContain('not for the query');
    expect(read.stderr).toMatch(/Permission Error/);
  });

  it('reads no file outside the output folder, and any inside it', async () => {
    const dir = await outputWithData();
    const passwd = await runCli([
      'query',
      "SELECT * FROM read_csv('/etc/passwd')",
      '--output',
      dir,
    ]);
    expect(passwd.code).toBe(2);
    expect(passwd.stderr).toMatch(/Permission Error: Cannot access file "\/etc\/passwd"/);
    const escape = await runCli([
      'query',
      `SELECT * FROM read_parquet('${join(dir, '..', 'x.parquet')}')`,
      '--output',
      dir,
    ]);
    expect(escape.code).toBe(2);
    expect(escape.stderr).toMatch(/Permission Error/);
    const inside = await runCli([
      'query',
      `SELECT count(*) AS n FROM read_parquet('${join(dir, 'signs', 'events', '*', '*.parquet')}')`,
      '--output',
      dir,
      '--format',
      'csv',
    ]);
    expect(inside.code).toBe(0);
    expect(parseRfc4180(inside.stdout)).toEqual([['n'], ['5']]);
  });

  it('writes timestamps in ISO 8601 as the extracts do: milliseconds always, Z for an instant', async () => {
    const dir = await testDir();
    await writeParquet(
      committed(dir, 'derived/times/data.parquet'),
      `SELECT * FROM (VALUES
         (1, TIMESTAMPTZ '2026-11-26 13:33:26.752+00', TIMESTAMP '2026-10-25 02:00:00'),
         (2, TIMESTAMPTZ '2026-11-26 13:33:26+00', TIMESTAMP '2026-10-25 02:30:00.5'),
         (3, TIMESTAMPTZ '2024-10-27 02:30:00.000251+00', NULL)
       ) t(id, instant, wall)`,
    );
    const sql = 'SELECT id, instant, wall FROM times ORDER BY id';
    const csv = await runCli(['query', sql, '--output', dir, '--format', 'csv']);
    expect(parseRfc4180(csv.stdout)).toEqual([
      ['id', 'instant', 'wall'],
      ['1', '2026-11-26T13:33:26.752Z', '2026-10-25T02:00:00.000'],
      ['2', '2026-11-26T13:33:26.000Z', '2026-10-25T02:30:00.500'],
      ['3', '2024-10-27T02:30:00.000251Z', ''],
    ]);
    const jsonl = await runCli(['query', sql, '--output', dir, '--format', 'jsonl']);
    const rows = jsonl.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; instant: string });
    // The same instants as DuckDB holds them (to the millisecond, what Date keeps).
    const truth = await duck(
      `SELECT id, epoch_ms(instant) AS ms FROM read_parquet('${committed(dir, 'derived/times/data.parquet')}') ORDER BY id`,
    );
    expect(rows.map((r) => Date.parse(r.instant))).toEqual(truth.map((r) => Number(r['ms'])));
  });

  it("exits 2 with DuckDB's message for bad SQL", async () => {
    const dir = await outputWithData();
    const result = await runCli(['query', 'SELECT * FROM no_such_table', '--output', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/road-etl: query: .*no_such_table/);
  });
});

const simulator = await useSimulator({
  seed: 5,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 6 },
});

describe('road-etl query on a folder a run committed', () => {
  async function committedFolder(): Promise<string> {
    const output = join(await testDir(), 'output');
    const run = await runCli(
      [
        'run',
        join(ROOT, 'pipelines', 'bicycle.yaml'),
        '--output',
        output,
        '--param',
        'start=2026-11-10T00:00:00Z',
        '--param',
        'end=2026-11-11T00:00:00Z',
        '--param',
        'prefixes=UTR',
      ],
      { env: { ...simulator.env } },
    );
    expect(run.code, run.stderr).toBe(0);
    return output;
  }

  it('answers with the system temporary folder on another file system (TMPDIR=/dev/shm)', async () => {
    const output = await committedFolder();
    const truth = await duck(
      `SELECT count(*) AS n FROM read_parquet('${join(output, 'bicycle', 'measurements', '*', '*.parquet')}')`,
    );
    const result = await runCli(
      [
        'query',
        'SELECT count(*) AS n FROM bicycle_measurements',
        '--output',
        output,
        '--format',
        'csv',
      ],
      { env: { TMPDIR: '/dev/shm' }, process: true },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(parseRfc4180(result.stdout)).toEqual([['n'], [String(truth[0]?.['n'])]]);
  });

  it('refuses a write disguised by comments and line endings, over a committed data file, writing nothing', async () => {
    const output = await committedFolder();
    const before = await outputHashes(output);
    const landed = committed(output, 'bicycle/locations/data.parquet');
    const copy = `COPY (SELECT 666 AS pwned) TO '${landed}' (FORMAT parquet)`;
    for (const sql of [
      `EXPLAIN /* /* */ SELECT 1 -- */ ANALYZE ${copy}`,
      `EXPLAIN --\rANALYZE COPY (SELECT 'a\nSELECT 1 --' AS x) TO '${landed}' (FORMAT parquet)`,
      `/* /* */ SELECT 1 -- */ ${copy}`,
    ]) {
      const result = await runCli(['query', sql, '--output', output]);
      expect(result.code, sql).toBe(2);
      expect(await outputHashes(output), sql).toEqual(before);
    }
  });
});
