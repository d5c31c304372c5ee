/**
 * Step kind `sql`: runs a file of sql/ in DuckDB over the output datasets (each a
 * view) and keeps the tables it declares as outputs, as Parquet under
 * derived/<table>/, where later steps and `road-etl query` see them as views.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { DERIVED_FOLDER, discoverDatasets, readDatasetSql } from '../duckdb/datasets.js';
import { runSqlScript, SqlScriptError } from '../duckdb/script.js';
import { RunError } from '../errors.js';
import { writeParquet } from './plumbing.js';
import { defineStepKind, type StepContext, type StepOutcome } from './step-kind.js';
import { insideFolder } from './paths.js';

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const sqlStepOptions = z.strictObject({
  file: z
    .string()
    .regex(/\.sql$/, 'must name a .sql file')
    .describe('SQL file, relative to the sql folder'),
  params: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), scalar)
    .default({})
    .describe('Values bound to $name in the SQL'),
  outputs: z
    .array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be lower snake_case'))
    .min(1, 'name at least one table the file creates')
    .describe('Tables (or views) the file creates that are kept (as derived/<name>/data.parquet)'),
});

export type SqlStepOptions = z.output<typeof sqlStepOptions>;

export const sqlStep = defineStepKind<SqlStepOptions>({
  kind: 'sql',
  description: 'Run a SQL file in DuckDB over the datasets and keep the tables it creates',
  options: sqlStepOptions,
  outputs: (options) => options.outputs.map((t) => `${DERIVED_FOLDER}/${t}`),
  async check(options, context) {
    const file = insideFolder(context.sqlDir, options.file);
    if (!file) return [[['file'], `must be a file inside ${context.sqlDir}`]];
    const info = await stat(file).catch(() => undefined);
    return info?.isFile() ? [] : [[['file'], `${file} does not exist`]];
  },
  describe(options) {
    const params = Object.keys(options.params);
    return [
      `runs sql/${options.file}${params.length ? ` with ${params.map((p) => `$${p}`).join(', ')}` : ''}`,
      `keeps tables ${options.outputs.join(', ')}`,
    ];
  },
  async run(options, context) {
    const file = insideFolder(context.sqlDir, options.file)!;
    const text = await readFile(file, 'utf8');
    // A connection of its own: the file's temporary tables go with it when the step ends.
    const db = await (await context.database()).fork();
    try {
      return await runFile(db, text, options, context);
    } finally {
      db.close();
    }
  },
});

async function runFile(
  db: Database,
  text: string,
  options: SqlStepOptions,
  context: StepContext,
): Promise<StepOutcome> {
  for (const table of options.outputs) {
    // An earlier run's result is a view of the same name: make room for the new table.
    await db.run(`DROP VIEW IF EXISTS ${quotedIdentifier(table)}`);
  }
  const datasets = await discoverDatasets(context.output);
  let rowsIn = 0;
  for (const dataset of datasets) {
    if (new RegExp(`\\b${dataset.name}\\b`).test(text) && !options.outputs.includes(dataset.name)) {
      rowsIn += Number(
        (await db.all(`SELECT count(*) AS n FROM ${quotedIdentifier(dataset.name)}`))[0]?.['n'] ??
          0,
      );
    }
  }
  try {
    await runSqlScript(db, text, options.params);
  } catch (error) {
    if (error instanceof SqlScriptError) {
      throw new RunError(`sql/${options.file}, statement ${error.statement}: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
  // An output may be a table or a view: a view is streamed into Parquet, never held in memory.
  const created = new Map<string, 'TABLE' | 'VIEW'>();
  for (const row of await db.all(
    `SELECT table_name AS name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main'`,
  )) {
    created.set(String(row['name']), 'TABLE');
  }
  for (const row of await db.all(
    `SELECT view_name AS name FROM duckdb_views() WHERE NOT internal AND NOT temporary AND schema_name = 'main'`,
  )) {
    if (options.outputs.includes(String(row['name']))) created.set(String(row['name']), 'VIEW');
  }

  const missing = options.outputs.filter((t) => !created.has(t));
  if (missing.length > 0) {
    throw new RunError(
      `sql/${options.file} did not create ${missing.join(', ')} (declared in outputs)`,
    );
  }
  let rowsOut = 0;
  for (const table of options.outputs) {
    context.signal.throwIfAborted();
    const folder = join(context.output, DERIVED_FOLDER, table);
    rowsOut += await writeParquet(
      context,
      db,
      quotedIdentifier(table),
      join(folder, 'data.parquet'),
    );
    await db.run(`DROP ${created.get(table) ?? 'TABLE'} ${quotedIdentifier(table)}`);
    await db.run(
      `CREATE VIEW ${quotedIdentifier(table)} AS SELECT * FROM ${readDatasetSql(folder)}`,
    );
  }
  return { rowsIn, rowsOut };
}
