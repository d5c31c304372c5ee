import { committed, committedPaths } from '../helpers/committed.js';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { runCli } from '../helpers/cli.js';
import { commitAsFound, runDefinition, readManifest } from '../helpers/pipeline.js';
import { duck, testDir, writeFiles, writeParquet } from '../helpers/tmp.js';

const SQL = {
  'totals.sql': `CREATE TABLE totals AS SELECT kind, sum(amount)::BIGINT AS total, count(*) AS n FROM items WHERE amount >= $min GROUP BY kind;\n`,
  'double.sql': `CREATE TABLE doubled AS SELECT kind, total * 2 AS total FROM totals;\nCREATE TEMP TABLE scratch AS SELECT 1;\n`,
};

const PIPELINE = `name: chain
params:
  min: { type: integer, default: 0 }
steps:
  - { id: export_doubled, kind: export, needs: [doubled], options: { table: doubled, path: exports/doubled.csv } }
  - { id: doubled, kind: sql, needs: [totals], options: { file: double.sql, outputs: [doubled] } }
  - { id: totals, kind: sql, options: { file: totals.sql, params: { min: "\${params.min}" }, outputs: [totals] } }
  - { id: export_totals, kind: export, needs: [totals], options: { table: totals, path: exports/totals.parquet } }
`;

async function withItems(): Promise<string> {
  const dir = await testDir();
  await writeParquet(
    join(dir, 'output', 'items', 'kind=a', 'part.parquet'),
    `SELECT 'x' || range AS name, range AS amount FROM range(10)`,
  );
  await writeParquet(
    join(dir, 'output', 'items', 'kind=b', 'part.parquet'),
    `SELECT 'y' || range AS name, range * 10 AS amount FROM range(5)`,
  );
  return dir;
}

/** The chain pipeline and its SQL on disk, over fresh items; sql overrides files. */
async function chainOnDisk(
  sql: Record<string, string> = {},
): Promise<{ dir: string; file: string; output: string }> {
  const dir = await withItems();
  const files = { ...SQL, ...sql };
  await writeFiles(dir, {
    'pipelines/p.yaml': PIPELINE,
    'sql/totals.sql': files['totals.sql']!,
    'sql/double.sql': files['double.sql']!,
  });
  // The input items, committed as a run would have landed them.
  await commitAsFound(join(dir, 'output'));
  return { dir, file: join(dir, 'pipelines/p.yaml'), output: join(dir, 'output') };
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

describe('running a pipeline', () => {
  it('runs steps after what they need, in written order otherwise, with hive partitions as columns', async () => {
    const dir = await withItems();
    const { summary, failure, output } = await runDefinition(dir, PIPELINE, SQL, {
      params: { min: '3' },
    });
    expect(failure).toBeUndefined();
    expect(summary.steps.map((s) => s.id)).toEqual([
      'totals',
      'doubled',
      'export_doubled',
      'export_totals',
    ]);
    const totals = await duck(
      `SELECT kind, total::VARCHAR AS total, n FROM read_parquet('${committed(output, 'derived/totals/data.parquet')}') ORDER BY kind`,
    );
    // a: 3..9 -> 42 over 7 rows; b: 0,10,20,30,40 -> 100 over 4 rows (>= 3)
    expect(totals).toEqual([
      { kind: 'a', total: '42', n: '7' },
      { kind: 'b', total: '100', n: '4' },
    ]);
    const csv = await readFile(join(output, 'exports/doubled.csv'), 'utf8');
    expect(csv.split('\r\n').slice(1).filter(Boolean).sort()).toEqual(['a,84', 'b,200']);
    expect(existsSync(join(output, 'derived/scratch'))).toBe(false);
  });

  it('writes a manifest with params, step statuses, rows, and every file with its size and sha256', async () => {
    const dir = await withItems();
    const { output, summary } = await runDefinition(dir, PIPELINE, SQL);
    const { manifest: folder, run: manifest } = await readManifest(output);
    expect(folder).toMatchObject({
      manifest_version: 2,
      last_run: { pipeline: 'chain', status: 'succeeded' },
    });
    expect(Object.keys(folder.pipelines)).toEqual(['chain']);
    expect(manifest).toMatchObject({
      pipeline: 'chain',
      params: { min: 0 },
      status: 'succeeded',
    });
    expect(Date.parse(manifest.finished_at)).toBeGreaterThanOrEqual(
      Date.parse(manifest.started_at),
    );
    expect(manifest.steps.map((s) => [s.id, s.status, s.rows_in, s.rows_out])).toEqual([
      ['totals', 'succeeded', 15, 2],
      ['doubled', 'succeeded', 2, 2],
      ['export_doubled', 'succeeded', 2, 2],
      ['export_totals', 'succeeded', 2, 2],
    ]);
    for (const step of manifest.steps) {
      expect(step.files.length).toBeGreaterThan(0);
      for (const file of step.files) {
        const bytes = await readFile(committed(output, file.path));
        expect(file.bytes).toBe(bytes.length);
        expect(file.sha256).toBe(sha256(bytes));
      }
    }
    expect(manifest.exports.map((e) => [e.path, e.format, e.rows, e.step])).toEqual([
      ['exports/doubled.csv', 'csv', 2, 'export_doubled'],
      ['exports/totals.parquet', 'parquet', 2, 'export_totals'],
    ]);
    // The folder's extracts: the same two, as the run wrote them, with the CSV's CSVW
    // metadata and CSVT beside it and the folder's DCAT description.
    expect(
      folder.exports.filter((e) => e.rows !== null).map((e) => [e.path, e.rows, e.sha256]),
    ).toEqual(manifest.exports.map((e) => [e.path, e.rows, e.sha256]));
    const companions = folder.exports.filter((e) => e.rows === null);
    expect(companions.map((e) => [e.path, e.format])).toEqual([
      ['exports/dataset.jsonld', 'jsonld'],
      ['exports/doubled.csv-metadata.json', 'csvw'],
      ['exports/doubled.csvt', 'csvt'],
    ]);
    for (const file of companions)
      expect(file.sha256).toBe(sha256(await readFile(join(output, file.path))));
    expect(summary).toMatchObject({ status: 'succeeded', rows_out: 8, exports: 2 });
  });

  it('runs only --select steps, reusing the output of earlier runs, and refuses when that output is missing', async () => {
    const dir = await withItems();
    await commitAsFound(join(dir, 'output'));
    const commit = join(dir, 'output', '.state', 'commit.json');
    const before = await readFile(commit, 'utf8');
    await expect(runDefinition(dir, PIPELINE, SQL, { select: ['doubled'] })).rejects.toThrow(
      /step doubled needs totals, which has not run successfully in .*; select it too/,
    );
    // Refused: the folder's commit as it was, nothing of the run left.
    expect(await readFile(commit, 'utf8')).toBe(before);
    expect(existsSync(join(dir, 'output', '.state', 'work'))).toBe(false);
    await runDefinition(dir, PIPELINE, SQL);
    const again = await runDefinition(dir, PIPELINE, SQL, {
      select: ['doubled', 'export_doubled'],
    });
    expect(again.failure).toBeUndefined();
    expect(again.summary.steps.map((s) => s.id)).toEqual(['doubled', 'export_doubled']);
    expect(
      again.logger.events.filter((e) => e.event === 'step.reused').map((e) => e.message),
    ).toEqual(['doubled reuses the output of totals from an earlier run']);
  });

  it('refuses --select and --reset of steps that are not there', async () => {
    const dir = await withItems();
    await expect(runDefinition(dir, PIPELINE, SQL, { select: ['nope'] })).rejects.toThrow(
      InputError,
    );
    await expect(
      runDefinition(dir, PIPELINE, SQL, { select: ['totals'], reset: ['doubled'] }),
    ).rejects.toThrow(/--reset: doubled is not among the steps that run/);
  });

  it('stops at a failing step: later steps are skipped, finished ones kept, the manifest says why', async () => {
    const dir = await withItems();
    const broken = {
      ...SQL,
      'double.sql': 'CREATE TABLE doubled AS SELECT no_such_column FROM totals;\n',
    };
    const { failure, output } = await runDefinition(dir, PIPELINE, broken);
    expect(failure?.message).toMatch(/^sql\/double\.sql, statement 1: .*no_such_column/);
    const { run: manifest } = await readManifest(output);
    expect(manifest.status).toBe('failed');
    expect(manifest.steps.map((s) => s.status)).toEqual([
      'succeeded',
      'failed',
      'skipped',
      'skipped',
    ]);
    expect(manifest.steps[1]!.error).toMatch(/no_such_column/);
    expect(existsSync(committed(output, 'derived/totals/data.parquet'))).toBe(true);
    expect(existsSync(join(output, 'derived/doubled'))).toBe(false);
  });

  it('refuses a SQL file that uses a $param the step does not give, and one that does not create its outputs', async () => {
    const dir = await withItems();
    const missingParam = `name: p\nsteps:\n  - { id: t, kind: sql, options: { file: totals.sql, outputs: [totals] } }\n`;
    expect((await runDefinition(dir, missingParam, SQL)).failure?.message).toMatch(
      /statement 1: uses \$min, which the step's params do not give/,
    );
    const dir2 = await withItems();
    const wrongOutput = `name: p\nsteps:\n  - { id: t, kind: sql, options: { file: totals.sql, params: { min: 0 }, outputs: [totals, extra] } }\n`;
    expect((await runDefinition(dir2, wrongOutput, SQL)).failure?.message).toMatch(
      /did not create extra \(declared in outputs\)/,
    );
  });

  it('binds params as values: SQL in a param is data, not code', async () => {
    const dir = await withItems();
    const yaml = `name: p\nparams:\n  kind: { type: string, default: "a'; DROP TABLE x; --" }\nsteps:\n  - { id: t, kind: sql, options: { file: pick.sql, params: { kind: "\${params.kind}" }, outputs: [picked] } }\n`;
    const { failure, output } = await runDefinition(dir, yaml, {
      'pick.sql':
        'CREATE TABLE picked AS SELECT $kind AS asked, count(*) AS n FROM items WHERE kind = $kind;\n',
    });
    expect(failure).toBeUndefined();
    expect(
      await duck(
        `SELECT * FROM read_parquet('${committed(output, 'derived/picked/data.parquet')}')`,
      ),
    ).toEqual([{ asked: "a'; DROP TABLE x; --", n: '0' }]);
  });

  it('counts what a sql step asks for into the summary line, summed over steps, and names a count that fails', async () => {
    const dir = await withItems();
    const yaml = `name: p
steps:
  - id: a
    kind: sql
    options: { file: totals.sql, params: { min: 5 }, outputs: [totals], counts: { big: "count(*) FILTER (WHERE total > 40)", rows: "count(*)" } }
  - id: b
    kind: sql
    needs: [a]
    options: { file: double.sql, outputs: [doubled], counts: { big: "count(*) FILTER (WHERE total > 40)" } }
`;
    const { summary, failure } = await runDefinition(dir, yaml, SQL);
    expect(failure).toBeUndefined();
    // Amounts of at least 5: a 5+6+7+8+9 = 35, b 10+20+30+40 = 100; doubled 70 and 200.
    const [totals] = await duck(
      `SELECT count(*) FILTER (WHERE total > 40) AS big FROM read_parquet('${committed(join(dir, 'output'), 'derived/totals/data.parquet')}')`,
    );
    expect(Number(totals!['big'])).toBe(1);
    expect(summary.counts).toEqual({ big: 1 + 2, rows: 2 });
    // An incremental step with nothing new builds nothing and counts 0 of each.
    const incremental = `name: p
steps:
  - id: by_kind
    kind: sql
    options:
      file: by_kind.sql
      outputs: [by_kind]
      partition_by: kind
      incremental: { from: items, touches: '[kind]' }
      counts: { many: "count(*) FILTER (WHERE n > 5)" }
`;
    const byKind = {
      'by_kind.sql':
        "CREATE TABLE by_kind AS SELECT kind, count(*) AS n FROM items WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), kind) GROUP BY kind;\n",
    };
    const first = await runDefinition(dir, incremental, byKind);
    expect(first.failure).toBeUndefined();
    expect(first.summary.counts).toEqual({ many: 1 }); // a: 10 items, b: 5
    const second = await runDefinition(dir, incremental, byKind);
    expect(second.failure).toBeUndefined();
    expect(second.summary.counts).toEqual({ many: 0 });
    const broken = yaml.replace('count(*)"', 'count(nonexistent)"');
    const again = await runDefinition(await withItems(), broken, SQL);
    expect(again.failure?.message).toMatch(
      /counts\.rows \(count\(nonexistent\)\) over totals: .*nonexistent/,
    );
  });

  it('gives an incremental build only the partitions of its input that `reads` names, and builds what one run builds', async () => {
    // Daily amounts; each day's output sums the day and the one before (a trailing window).
    const day = (n: number): string => `2026-01-0${n}`;
    const writeDay = (dir: string, n: number): Promise<void> =>
      writeParquet(
        join(dir, 'output', 'items', `day=${day(n)}`, 'part.parquet'),
        `SELECT range AS amount FROM range(${n * 10}, ${n * 10 + n})`,
      );
    const yaml = `name: p
steps:
  - id: windows
    kind: sql
    options:
      file: windows.sql
      outputs: [windows]
      partition_by: day
      incremental: { from: items, touches: '[day, day + 1]', reads: '[day - 1, day]' }
`;
    const sql = {
      'windows.sql': `CREATE TABLE windows AS
SELECT p.day, sum(i.amount) AS total, (SELECT count(DISTINCT day) FROM items) AS days_seen
FROM (SELECT unnest(coalesce(getvariable('partitions'), (SELECT list(DISTINCT day) FROM items))) AS day) p
JOIN items i ON i.day BETWEEN p.day - 1 AND p.day
WHERE p.day IN (SELECT day FROM items)
GROUP BY p.day;
`,
    };
    const nightly = await testDir();
    for (const n of [1, 2, 3, 4, 5]) await writeDay(nightly, n);
    expect((await runDefinition(nightly, yaml, sql)).failure).toBeUndefined();
    // A new day: of the two days it touches, the one within the data is built from the two
    // days it reads, of six; the day after the data's last is neither built nor planned.
    await writeDay(nightly, 6);
    const night = await runDefinition(nightly, yaml, sql);
    expect(night.failure).toBeUndefined();
    const built = night.logger.events.find((e) => e.event === 'sql.build');
    expect(built?.message).toMatch(
      /rebuilding 1 partition\(s\) of windows from 2 partition\(s\) of items/,
    );
    const read = (dir: string) =>
      duck(
        `SELECT CAST(day AS VARCHAR) AS day, CAST(total AS INTEGER) AS total, days_seen FROM read_parquet('${join(dir, 'output/derived/windows/*/*.parquet')}', hive_partitioning = true) ORDER BY day`,
      );
    const nightRows = await read(nightly);
    expect(
      nightRows.filter((r) => String(r['day']) >= day(6)).map((r) => Number(r['days_seen'])),
    ).toEqual([2]);
    // The same six days in one run.
    const once = await testDir();
    for (const n of [1, 2, 3, 4, 5, 6]) await writeDay(once, n);
    expect((await runDefinition(once, yaml, sql)).failure).toBeUndefined();
    const strip = (rows: Record<string, unknown>[]) =>
      rows.map(({ day: d, total }) => ({ day: d, total }));
    expect(strip(nightRows)).toEqual(strip(await read(once)));
    // By hand: day 6 is 60..65 and 50..54.
    expect(strip(nightRows).slice(-2)).toEqual([
      { day: day(5), total: 260 + 166 },
      { day: day(6), total: 375 + 260 },
    ]);
    // Partitions read that are not there: the file sees the columns without rows.
    const nowhere = yaml.replace("reads: '[day - 1, day]'", "reads: '[day + 100]'");
    expect((await runDefinition(nightly, nowhere, sql)).failure).toBeUndefined(); // all, once
    await writeDay(nightly, 7);
    expect((await runDefinition(nightly, nowhere, sql)).failure).toBeUndefined();
    expect((await read(nightly)).map((r) => r['day'])).toEqual([1, 2, 3, 4, 5, 6].map(day));
    // An expression that gives no list is named.
    await writeDay(nightly, 8);
    const broken = await runDefinition(
      nightly,
      yaml.replace("reads: '[day - 1, day]'", "reads: 'day'"),
      sql,
    );
    expect(broken.failure).toBeUndefined(); // another definition: everything is built, reads unused
    await writeDay(nightly, 9);
    const again = await runDefinition(
      nightly,
      yaml.replace("reads: '[day - 1, day]'", "reads: 'day'"),
      sql,
    );
    expect(again.failure?.message).toMatch(
      /incremental\.reads of items \(day\) over the partitions to build \(day\): /,
    );
  });

  it('narrows every dataset `reads` names, each to its partitions, and tells the file which partitions each has', async () => {
    // Daily amounts and daily prices; each day's output is its amounts times its price, and
    // says whether a price was landed before it (a question of what is there, not what is read).
    const day = (n: number): string => `2026-02-0${n}`;
    const land = async (dir: string, n: number): Promise<void> => {
      await writeParquet(
        join(dir, 'output', 'items', `day=${day(n)}`, 'part.parquet'),
        `SELECT range AS amount FROM range(${n}, ${2 * n})`,
      );
      await writeParquet(
        join(dir, 'output', 'prices', `day=${day(n)}`, 'part.parquet'),
        `SELECT ${n * 10} AS price`,
      );
    };
    const yaml = `name: p
steps:
  - id: values
    kind: sql
    options:
      file: values.sql
      outputs: [item_values]
      partition_by: day
      incremental:
        from: items
        touches: '[day]'
        reads: { items: '[day]', prices: '[day]' }
`;
    const sql = {
      'values.sql': `CREATE TABLE item_values AS
SELECT i.day, sum(i.amount * p.price) AS value,
  coalesce(list_min(getvariable('partitions_of_prices')) < i.day,
           (SELECT count(*) FROM prices WHERE day < i.day) > 0) AS priced_before,
  (SELECT count(DISTINCT day) FROM prices) AS prices_seen
FROM items i JOIN prices p USING (day)
WHERE getvariable('partitions') IS NULL OR list_contains(getvariable('partitions'), i.day)
GROUP BY i.day;
`,
    };
    const read = async (dir: string) =>
      (
        await duck(
          `SELECT CAST(day AS VARCHAR) AS day, CAST(value AS INTEGER) AS value, priced_before, CAST(prices_seen AS INTEGER) AS seen FROM read_parquet('${join(dir, 'output/derived/item_values/*/*.parquet')}', hive_partitioning = true) ORDER BY day`,
        )
      ).map((r) => ({ ...r }));
    const nightly = await testDir();
    for (const n of [1, 2, 3]) await land(nightly, n);
    expect((await runDefinition(nightly, yaml, sql)).failure).toBeUndefined();
    await land(nightly, 4);
    const night = await runDefinition(nightly, yaml, sql);
    expect(night.failure).toBeUndefined();
    expect(night.logger.events.find((e) => e.event === 'sql.build')?.message).toMatch(
      /rebuilding 1 partition\(s\) of item_values from 1 partition\(s\) of items, 1 partition\(s\) of prices/,
    );
    const once = await testDir();
    for (const n of [1, 2, 3, 4]) await land(once, n);
    expect((await runDefinition(once, yaml, sql)).failure).toBeUndefined();
    const nightRows = await read(nightly);
    const strip = (rows: Record<string, unknown>[]) =>
      rows.map(({ day: d, value, priced_before }) => ({ day: d, value, priced_before }));
    expect(strip(nightRows)).toEqual(strip(await read(once)));
    // By hand: day 4 is (4 + 5 + 6 + 7) * 40, a price landed before it; its build saw one price.
    expect(nightRows.at(-1)).toEqual({ day: day(4), value: 880, priced_before: true, seen: 1 });
    expect(nightRows[0]).toMatchObject({ day: day(1), value: 10, priced_before: false });
    // A dataset kept whole cannot be read by partition: said so.
    await writeParquet(join(nightly, 'output', 'rates', 'part.parquet'), 'SELECT 1 AS rate');
    const whole = yaml.replace("prices: '[day]' }", "prices: '[day]', rates: '[day]' }");
    expect((await runDefinition(nightly, whole, sql)).failure).toBeUndefined(); // all, once
    await land(nightly, 5);
    expect((await runDefinition(nightly, whole, sql)).failure?.message).toMatch(
      /incremental\.reads names rates, which is not kept in partitions/,
    );
  });

  it('replaces a derived table on rerun instead of adding to it', async () => {
    const dir = await withItems();
    await runDefinition(dir, PIPELINE, SQL);
    await runDefinition(dir, PIPELINE, SQL);
    const files = await readdir(join(dir, 'output', 'derived', 'totals'));
    expect(files).toEqual([
      basename(committed(join(dir, 'output'), 'derived/totals/data.parquet')),
    ]);
    expect(
      await duck(
        `SELECT count(*) AS n FROM read_parquet('${committed(join(dir, 'output'), 'derived/totals/data.parquet')}')`,
      ),
    ).toEqual([{ n: '2' }]);
  });
});

describe('road-etl run (CLI)', () => {
  it('prints the plan with --dry-run and writes nothing', async () => {
    const { dir, file, output } = await chainOnDisk();
    const result = await runCli(['run', file, '--output', output, '--dry-run']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /1\. totals \[sql\][\s\S]*2\. doubled \[sql\] \(after totals\)[\s\S]*3\. export_doubled/,
    );
    // Its stdout ends with the summary line too: planned, every step it would run.
    const lines = result.stdout.trim().split('\n');
    const summary = JSON.parse(lines[lines.length - 1]!) as {
      status: string;
      exit_code: number;
      steps: { id: string; status: string }[];
    };
    expect(summary).toMatchObject({ status: 'planned', exit_code: 0 });
    expect(summary.steps.map((s) => [s.id, s.status])).toEqual([
      ['totals', 'planned'],
      ['doubled', 'planned'],
      ['export_doubled', 'planned'],
      ['export_totals', 'planned'],
    ]);
    // The input's commit only: no run's.
    expect(committedPaths(join(dir, 'output')).every((p) => p.startsWith('items/'))).toBe(true);
    expect(existsSync(join(dir, 'output', 'manifest.json'))).toBe(false);
    expect(existsSync(join(dir, 'output', '.state', 'work'))).toBe(false);
  });

  it('logs JSON lines on stderr when not on a terminal and ends stdout with a one-line JSON summary (the bin, as a process)', async () => {
    const { dir, file, output } = await chainOnDisk();
    const result = await runCli(['run', file, '--output', output, '--param', 'min=1'], {
      process: true,
    });
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    const summary = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
    expect(summary).toMatchObject({
      status: 'succeeded',
      pipeline: 'chain',
      manifest: join(dir, 'output', 'manifest.json'),
    });
    // The process's CPU time: at least what its steps used, as the manifest measured them.
    const { run } = await readManifest(output);
    const steps = run.steps.reduce((sum, s) => sum + s.cpu_ms, 0);
    expect(steps).toBeGreaterThan(0);
    expect(summary['cpu_ms']).toEqual(expect.any(Number));
    expect(summary['cpu_ms'] as number).toBeGreaterThanOrEqual(steps);
    const events = result.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; event: string; step?: string });
    expect(events.filter((e) => e.event === 'step.end').map((e) => e.step)).toEqual([
      'totals',
      'doubled',
      'export_doubled',
      'export_totals',
    ]);
    expect(events.every((e) => typeof e.level === 'string')).toBe(true);
  });

  it('exits 1 with the summary still printed when a step fails (the bin, as a process)', async () => {
    const { file, output } = await chainOnDisk({
      'totals.sql': 'CREATE TABLE totals AS SELECT * FROM nowhere;\n',
    });
    const result = await runCli(['run', file, '--output', output, '--log-format', 'text'], {
      process: true,
    });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout.trim().split('\n').pop()!)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/nowhere/) as string,
    });
    expect(result.stderr).toMatch(/road-etl: sql\/totals\.sql, statement 1: .*nowhere/);
  });

  it('--reset starts a step over', async () => {
    const dir = await withItems();
    await runDefinition(dir, PIPELINE, SQL);
    const { logger, failure } = await runDefinition(dir, PIPELINE, SQL, { reset: ['totals'] });
    expect(failure).toBeUndefined();
    expect(
      logger.events.some((e) => e.event === 'step.reset' && e.message.startsWith('totals')),
    ).toBe(true);
  });
});
