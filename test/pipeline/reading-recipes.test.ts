/**
 * The recipes of docs/reading.md (and the reading recipes of the other
 * pages), run as they are written against the demo's output, from the folder
 * that holds `output/`: road-etl query, plain DuckDB (with views.sql, and over
 * the files), GDAL, and Python with pandas, polars, pyarrow and geopandas
 * (helpers/python.ts), whose results are checked against DuckDB.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { copyOfDemo } from '../helpers/demo.js';
import { NO_GDAL, OGRINFO } from '../helpers/gdal.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { PYTHON, python, python as runPythonText } from '../helpers/python.js';

const run = promisify(execFile);

interface Block {
  language: string;
  text: string;
}

/** The fenced code blocks of a Markdown page (indented ones in lists too). */
function codeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const pattern = /^( *)```(\w+)\n([\s\S]*?)^\1```$/gm;
  for (const m of markdown.matchAll(pattern)) {
    const indent = m[1]!.length;
    const text = m[3]!
      .split('\n')
      .map((line) => line.slice(indent))
      .join('\n');
    blocks.push({ language: m[2]!, text });
  }
  return blocks;
}

/** A shell line's words: spaces split them, double quotes keep them together. */
function words(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/**
 * Runs a shell recipe of the page from `cwd` (the folder that holds `output`):
 * resolves to whether it printed rows (or, for GDAL, features); throws when it
 * fails or is of a kind this test does not know.
 */
async function runShellRecipe(line: string, output: string, cwd: string): Promise<boolean> {
  const argv = words(line);
  if (argv[0] === 'npx' && argv[1] === 'road-etl') {
    const result = await runCli([...argv.slice(2), '--output', output], { env: {} });
    if (result.code !== 0)
      throw new Error(`${line}: exit ${String(result.code)}\n${result.stderr}`);
    return result.stdout.trim() !== '';
  }
  if (argv[0] === 'cd' && argv[1] === 'output' && argv[3] === 'duckdb') {
    // cd output && duckdb -c ".read views.sql" -c "SQL"
    const sql = argv.slice(4).filter((_, i) => i % 2 === 1);
    if (sql[0] !== '.read views.sql') throw new Error(`${line}: not .read views.sql first`);
    const results = await plainDuckDb(output, sql.slice(1), { views: true });
    return (results.at(-1)?.length ?? 0) > 0;
  }
  if (argv[0] === 'duckdb' && argv[1] === '-c') {
    const [rows] = await plainDuckDb(cwd, [argv[2]!], { views: false });
    return (rows?.length ?? 0) > 0;
  }
  if (argv[0] === 'ogrinfo' || argv[0] === 'ogr2ogr') {
    if (!OGRINFO) {
      console.warn(`test/pipeline/reading-recipes.test.ts: ${NO_GDAL}`);
      return true;
    }
    const { stdout } = await run(join(dirname(OGRINFO), argv[0]), argv.slice(1), { cwd });
    return argv[0] === 'ogr2ogr' || /Feature Count: [1-9]/.test(stdout);
  }
  throw new Error(`a recipe this test does not know how to run: ${line}`);
}

/**
 * What a Python recipe left, printed after it as JSON: the rows of each frame
 * or table it made, whether `sign_id` is unique in those that have one, and
 * the type of each `local_hour` column.
 */
const AFTER_RECIPE = `
import json as _json
_found = {}
for _name, _value in list(globals().items()):
    if _name.startswith("_") or type(_value).__module__.split(".")[0] not in ("pandas", "polars", "pyarrow", "geopandas"):
        continue
    try:
        _entry = {"rows": len(_value)}
    except TypeError:
        continue
    _columns = getattr(_value, "columns", None)
    _columns = list(getattr(_value, "column_names", []) if _columns is None else _columns)
    if "sign_id" in _columns:
        _unique = _value["sign_id"].is_unique
        _entry["unique_sign_id"] = bool(_unique().all() if callable(_unique) else _unique)
    if "local_hour" in _columns:
        _entry["local_hour"] = str(_value["local_hour"].dtype)
    _found[_name] = _entry
print(_json.dumps(_found))
`;

/** Runs a Python recipe as written from `cwd`; resolves to what it left (AFTER_RECIPE). */
async function runPythonRecipe(
  text: string,
  cwd: string,
): Promise<Record<string, { rows: number; unique_sign_id?: boolean; local_hour?: string }>> {
  const printed = await python(['-c', `${text}\n${AFTER_RECIPE}`], cwd);
  return JSON.parse(printed.trim().split('\n').at(-1)!) as Record<
    string,
    { rows: number; unique_sign_id?: boolean; local_hour?: string }
  >;
}

/** One number from DuckDB over the folder's views (plain DuckDB with views.sql). */
async function count(output: string, sql: string): Promise<number> {
  const [rows] = await plainDuckDb(output, [sql], { views: true });
  const [value] = Object.values(rows![0]!) as unknown[];
  return Number(value);
}

describe('docs/reading.md', async () => {
  const page = await readFile(join(ROOT, 'docs', 'reading.md'), 'utf8');
  const blocks = codeBlocks(page);

  it('has recipes for road-etl query, plain DuckDB, Python and GDAL', () => {
    expect(new Set(blocks.map((b) => b.language))).toEqual(new Set(['sh', 'sql', 'python']));
    expect(blocks.length).toBeGreaterThan(6);
  });

  it('its SQL and shell recipes run against the demo output as written', async () => {
    const { output } = await copyOfDemo();
    const cwd = dirname(output);
    let ran = 0;
    for (const block of blocks.filter((b) => b.language === 'sql')) {
      const statements = block.text
        .split(/;\s*\n/)
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const results = await plainDuckDb(output, statements, { views: true });
      expect(results).toHaveLength(statements.length);
      ran += statements.length;
    }
    // Each line's outcome: what it printed (rows, features), or why it could not run.
    const outcomes: { line: string; printed: boolean }[] = [];
    for (const block of blocks.filter((b) => b.language === 'sh'))
      for (const line of block.text.split('\n').filter((l) => l.trim() !== '')) {
        outcomes.push({ line, printed: await runShellRecipe(line, output, cwd) });
        ran++;
      }
    expect(outcomes.filter((o) => !o.printed)).toEqual([]);
    expect(ran).toBeGreaterThan(8);
  }, 120_000);

  it.skipIf(!PYTHON)(
    'its Python recipes run as written against the demo output, and give what they say',
    async () => {
      const { output } = await copyOfDemo();
      const cwd = dirname(output);
      const recipes = blocks.filter((b) => b.language === 'python');
      expect(recipes).toHaveLength(2);
      const [tables, gis] = await Promise.all(recipes.map((r) => runPythonRecipe(r.text, cwd)));
      const csvRows = async (file: string) =>
        parseRfc4180(await readFile(join(output, file), 'utf8')).length - 1;
      // pyarrow: the days from 2026-10-25 on, read by their partitions.
      expect(tables!['october_end']?.rows).toBe(
        await count(
          output,
          "SELECT count(*) FROM bicycle_measurements WHERE date >= DATE '2026-10-25'",
        ),
      );
      // pandas: the latest snapshot, one row per sign, every one in the CSV extract.
      const signs = await count(output, 'SELECT count(*) FROM signs_live');
      expect(tables!['signs']).toEqual({ rows: signs, unique_sign_id: true });
      expect(tables!['joined']?.rows).toBe(await csvRows('exports/signs_live.csv'));
      // polars: the days with hours missing, those not faulty, the catalog with its JSON decoded.
      expect(tables!['partial_days']?.rows).toBe(
        await count(
          output,
          'SELECT count(*) FROM bicycle_daily WHERE hours_in_period < hours_in_day',
        ),
      );
      expect(tables!['trusted']?.rows).toBe(
        await count(output, "SELECT count(*) FROM bicycle_daily WHERE quality_status <> 'faulty'"),
      );
      expect(tables!['locations']?.rows).toBe(
        await count(output, 'SELECT count(*) FROM bicycle_locations'),
      );
      // Local time: Dutch time in both libraries, the summer and the winter hours alike.
      const hours = await csvRows('exports/bicycle_hourly/2026-10.csv');
      expect(tables!['hourly']).toMatchObject({
        rows: hours,
        local_hour: 'datetime64[us, Europe/Amsterdam]',
      });
      expect(tables!['hourly_pl']?.rows).toBe(hours);
      expect(tables!['hourly_pl']?.local_hour).toContain("time_zone='Europe/Amsterdam'");
      // geopandas: the current state, and the signs of a box around Utrecht.
      expect(gis!['signs']?.rows).toBe(
        await count(output, 'SELECT count(*) FROM signs_current_state'),
      );
      const inBox = await count(
        output,
        'SELECT count(*) FROM signs_current_state WHERE location_wgs84_longitude BETWEEN 5.0 AND 5.2 AND location_wgs84_latitude BETWEEN 52.03 AND 52.15',
      );
      expect(inBox).toBeGreaterThan(0);
      expect(gis!['utrecht_signs']?.rows).toBe(inBox);
      expect(gis!['locations']?.rows).toBe(
        await count(output, 'SELECT count(*) FROM bicycle_locations'),
      );
      expect(gis!['utrecht']?.rows).toBe(
        await count(
          output,
          'SELECT count(*) FROM signs_live WHERE longitude BETWEEN 5.0 AND 5.2 AND latitude BETWEEN 52.03 AND 52.15',
        ),
      );
    },
    120_000,
  );
});

describe('the reading recipes of the other pages', () => {
  it('run against the demo output as written: output.md, quality.md, pipelines.md', async () => {
    const { output } = await copyOfDemo();
    const cwd = dirname(output);
    const outcomes: { line: string; printed: boolean }[] = [];
    let python = 0;
    for (const page of ['output.md', 'quality.md', 'pipelines.md']) {
      const blocks = codeBlocks(await readFile(join(ROOT, 'docs', page), 'utf8'));
      for (const block of blocks.filter((b) => b.language === 'sh'))
        for (const line of block.text.split('\n').filter((l) => l.trim() !== ''))
          outcomes.push({ line, printed: await runShellRecipe(line, output, cwd) });
      for (const block of blocks.filter((b) => b.language === 'python')) {
        python++;
        if (!PYTHON) continue;
        outcomes.push({
          line: block.text,
          printed: (await runPythonText(['-c', block.text], cwd)).trim() !== '',
        });
      }
    }
    expect(outcomes.filter((o) => !o.printed)).toEqual([]);
    expect(outcomes.length).toBeGreaterThanOrEqual(5);
    expect(python).toBeGreaterThan(0);
  }, 120_000);
});
