/**
 * The recipes of docs/reading.md, run as they are written against the demo's
 * output, from the folder that holds `output/`: road-etl query, plain DuckDB
 * (with views.sql, and over the files), GDAL. The Python recipes (pandas,
 * polars, pyarrow, geopandas: not installable here) are parsed by Python and
 * checked for the paths and columns they name.
 */
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { copyOfDemo } from '../helpers/demo.js';
import { NO_GDAL, OGRINFO } from '../helpers/gdal.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { duck } from '../helpers/tmp.js';

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

/** Column names of every dataset and CSV extract of the folder. */
async function columnsOf(output: string): Promise<Set<string>> {
  const rows = await duck(
    `SELECT DISTINCT name FROM parquet_schema('${output}/**/*.parquet') WHERE file_name NOT LIKE '%/.state/%'`,
  );
  const names = new Set(rows.map((r) => r['name'] as string));
  for (const file of await readdir(join(output, 'exports'), { recursive: true }))
    if (file.endsWith('.csv')) {
      const [header] = parseRfc4180(await readFile(join(output, 'exports', file), 'utf8'));
      for (const name of header!) names.add(name);
    }
  // Partition columns, from the folder names.
  for (const file of await readdir(output, { recursive: true }))
    for (const part of file.split('/'))
      if (part.includes('=')) names.add(part.slice(0, part.indexOf('=')));
  return names;
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

/** Whether Python parses the text (its syntax only: no package is imported). */
function pythonParses(text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = execFile(
      'python3',
      ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'],
      (e) => {
        resolve(e === null);
      },
    );
    child.stdin!.end(text);
  });
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

  it('its Python recipes are Python, and name paths and columns the demo output has', async () => {
    const { output } = await copyOfDemo();
    const cwd = dirname(output);
    const columns = await columnsOf(output);
    const python = blocks.filter((b) => b.language === 'python');
    expect(python.length).toBeGreaterThan(1);
    const named: string[] = [];
    const missing: string[] = [];
    for (const { text } of python) {
      expect(await pythonParses(text), text).toBe(true);
      // Paths: each exists (a glob: its folder does).
      for (const [, path] of text.matchAll(/"(output\/[^"]+)"/g)) {
        const at = path!.includes('*') ? path!.slice(0, path!.indexOf('*')) : path!;
        const names = await readdir(join(cwd, dirname(at))).catch(() => [] as string[]);
        if (!names.includes(at.split('/').at(-1) || '') && !at.endsWith('/')) missing.push(path!);
      }
      // Columns: those of pl.col, ds.field, on=, [["a", "b"]] selections and partition schemas.
      named.push(
        ...[...text.matchAll(/(?:pl\.col|ds\.field)\("(\w+)"\)/g)].map((m) => m[1]!),
        ...[...text.matchAll(/on="(\w+)"/g)].map((m) => m[1]!),
        ...[...text.matchAll(/\[\[([^\]]+)\]\]/g)].flatMap((m) =>
          [...m[1]!.matchAll(/"(\w+)"/g)].map((c) => c[1]!),
        ),
        ...[...text.matchAll(/\[\("(\w+)", pa\./g)].map((m) => m[1]!),
      );
    }
    expect(missing).toEqual([]);
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((c) => !columns.has(c))).toEqual([]);
  });
});
