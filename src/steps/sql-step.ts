/**
 * Step kind `sql`: runs a file of sql/ in DuckDB over the output datasets (each a
 * view) and keeps the tables it declares as outputs, as Parquet under
 * derived/<table>/, where later steps and `road-etl query` see them as views.
 * With `partition_by`, an output is kept as partitions of that column; with
 * `incremental`, only the partitions that new input touches are rebuilt, or an
 * output kept whole is folded from its previous self and the new input
 * (sql-build.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { DERIVED_FOLDER, datasetLayout, readDatasetSql } from '../duckdb/datasets.js';
import { runSqlScript, SqlScriptError } from '../duckdb/script.js';
import { RunError } from '../errors.js';
import { writePartitionedDataset, writeWholeDataset } from '../duckdb/dataset-write.js';
import { planBuild } from './sql-build.js';
import { defineStepKind, type StepContext, type StepOutcome } from './step-kind.js';
import { insideFolder } from './paths.js';

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const sqlStepOptions = z
  .strictObject({
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
      .describe(
        'Tables (or views) the file creates that are kept (as derived/<name>/data.parquet)',
      ),
    partition_by: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'must be a lower snake_case column name')
      .optional()
      .describe(
        'Keep each output as partitions of this column (derived/<name>/<column>=<value>/data.parquet)',
      ),
    incremental: z
      .strictObject({
        from: z
          .string()
          .regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name')
          .describe('The partitioned dataset whose new or rewritten partitions are built upon'),
        touches: z
          .string()
          .min(1)
          .optional()
          .describe(
            "SQL over a partition of `from` (its partition column): the list of output partitions it feeds, e.g. '[date, date + 1]' (with partition_by)",
          ),
        fold: z
          .string()
          .regex(/\.sql$/, 'must name a .sql file')
          .optional()
          .describe(
            "SQL file (in the sql folder) that makes the outputs from their previous selves (views previous_<name>) and the partitions of `from` added or rewritten since, at or after the last one built on (getvariable('partitions')); for outputs kept whole (without partition_by). Any other change builds with `file`",
          ),
        rebuild_on: z
          .array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name'))
          .default([])
          .describe('Datasets whose any change builds everything with `file`'),
      })
      .optional()
      .describe(
        "Build only what changed partitions of `from` touch: with partition_by and touches, the output partitions they feed (the file reads them as getvariable('partitions'); unset: build all); without partition_by, with fold",
      ),
  })
  .superRefine((o, ctx) => {
    const incremental = o.incremental;
    if (!incremental) return;
    if (o.partition_by !== undefined && incremental.touches === undefined)
      ctx.addIssue({
        code: 'custom',
        message:
          'with partition_by, incremental needs touches: the output partitions a changed partition feeds',
        path: ['incremental', 'touches'],
      });
    if (o.partition_by === undefined && incremental.fold === undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'incremental needs partition_by (and touches) or, for outputs kept whole, fold',
        path: ['incremental'],
      });
    if (o.partition_by !== undefined && incremental.fold !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'fold is for outputs kept whole: not with partition_by',
        path: ['incremental', 'fold'],
      });
  });

export type SqlStepOptions = z.output<typeof sqlStepOptions>;

export const sqlStep = defineStepKind<SqlStepOptions>({
  kind: 'sql',
  description: 'Run a SQL file in DuckDB over the datasets and keep the tables it creates',
  options: sqlStepOptions,
  async check(options, context) {
    const files: [string[], string][] = [[['file'], options.file]];
    if (options.incremental?.fold !== undefined)
      files.push([['incremental', 'fold'], options.incremental.fold]);
    const problems: [string[], string][] = [];
    for (const [path, name] of files) {
      const file = insideFolder(context.sqlDir, name);
      if (!file) {
        problems.push([path, `must be a file inside ${context.sqlDir}`]);
        continue;
      }
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) problems.push([path, `${file} does not exist`]);
    }
    return problems;
  },
  describe(options) {
    const params = Object.keys(options.params);
    const lines = [
      `runs sql/${options.file}${params.length ? ` with ${params.map((p) => `$${p}`).join(', ')}` : ''}`,
      `keeps tables ${options.outputs.join(', ')}${options.partition_by ? `, partitioned by ${options.partition_by}` : ''}`,
    ];
    const incremental = options.incremental;
    if (incremental?.touches !== undefined)
      lines.push(
        `rebuilds only the partitions that new or rewritten partitions of ${incremental.from} touch (${incremental.touches})`,
      );
    if (incremental?.fold !== undefined)
      lines.push(
        `folds the partitions of ${incremental.from} added since the last build into its outputs with sql/${incremental.fold}`,
      );
    if (incremental && incremental.rebuild_on.length > 0)
      lines.push(`builds everything again when ${incremental.rebuild_on.join(' or ')} changed`);
    return lines;
  },
  async run(options, context) {
    const file = insideFolder(context.sqlDir, options.file)!;
    const text = await readFile(file, 'utf8');
    const foldFile = options.incremental?.fold;
    const foldText =
      foldFile === undefined
        ? undefined
        : await readFile(insideFolder(context.sqlDir, foldFile)!, 'utf8');
    // A connection of its own: the file's temporary tables go with it when the step ends.
    const db = await (await context.database()).fork();
    try {
      const build = await planBuild(
        db,
        {
          text,
          foldText,
          params: options.params,
          outputs: options.outputs,
          partitionBy: options.partition_by,
          incremental: options.incremental,
        },
        context,
      );
      if (build.mode === 'unchanged') {
        context.log.log(
          'info',
          'sql.unchanged',
          `${context.stepId}: ${options.incremental?.from ?? 'its input'} has not changed since the last build; ${options.outputs.join(', ')} kept`,
          { step: context.stepId },
        );
        await context.state.save(build.checkpoint);
        return { rowsIn: 0, rowsOut: 0, notes: { unchanged: true } };
      }
      if (options.incremental)
        context.log.log(
          'info',
          'sql.build',
          build.mode === 'partial'
            ? `${context.stepId}: ${build.changed.length} partition(s) of ${options.incremental.from} changed: rebuilding ${build.keys?.length ?? 0} partition(s) of ${options.outputs.join(', ')}`
            : build.mode === 'fold'
              ? `${context.stepId}: folding ${build.changed.length} new or rewritten partition(s) of ${options.incremental.from} into ${options.outputs.join(', ')}`
              : `${context.stepId}: building everything (${build.reason ?? 'first build'})`,
          {
            step: context.stepId,
            mode: build.mode,
            changed: build.changed.length,
            partitions: build.keys?.length ?? null,
          },
        );
      if (build.mode === 'fold') {
        // The outputs as they are, for the fold file: read before they are replaced.
        for (const table of options.outputs) {
          const folder = join(context.output, DERIVED_FOLDER, table);
          await db.run(
            `CREATE OR REPLACE TEMP VIEW ${quotedIdentifier(`previous_${table}`)} AS SELECT * FROM ${readDatasetSql(await datasetLayout(folder))}`,
          );
        }
      }
      const outcome = await runFile(
        db,
        build.mode === 'fold' ? foldText! : text,
        { ...options, file: build.mode === 'fold' ? foldFile! : options.file },
        context,
        build.keys,
      );
      if (build.checkpoint) await context.state.save(build.checkpoint);
      return {
        ...outcome,
        ...(options.partition_by !== undefined || options.incremental
          ? {
              notes: {
                build: build.mode,
                ...(build.keys ? { partitions: build.keys.length } : {}),
                ...(build.mode === 'fold' ? { partitions_folded: build.changed.length } : {}),
              },
            }
          : {}),
      };
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
  keys: readonly string[] | undefined,
): Promise<StepOutcome> {
  for (const table of options.outputs) {
    // An earlier run's result is a view of the same name: make room for the new table.
    await db.run(`DROP VIEW IF EXISTS ${quotedIdentifier(table)}`);
  }
  let rowsIn = 0;
  // The rows of the datasets the file names (an incremental build reads only some of them).
  if (keys === undefined) {
    for (const dataset of await context.datasets()) {
      if (
        new RegExp(`\\b${dataset.name}\\b`).test(text) &&
        !options.outputs.includes(dataset.name)
      ) {
        rowsIn += Number(
          (await db.all(`SELECT count(*) AS n FROM ${quotedIdentifier(dataset.name)}`))[0]?.['n'] ??
            0,
        );
      }
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
    const write = { source: quotedIdentifier(table), folder, scratch: context.scratch };
    let written;
    try {
      written = options.partition_by
        ? await writePartitionedDataset(db, { ...write, column: options.partition_by, keys })
        : await writeWholeDataset(db, write);
    } catch (error) {
      if (error instanceof RunError)
        throw new RunError(`sql/${options.file}, output ${table}: ${error.message}`, {
          cause: error,
        });
      throw error;
    }
    for (const path of written.files) await context.recordFile(path);
    rowsOut += written.rows;
    await db.run(`DROP ${created.get(table) ?? 'TABLE'} ${quotedIdentifier(table)}`);
    await db.run(
      `CREATE VIEW ${quotedIdentifier(table)} AS SELECT * FROM ${readDatasetSql(await datasetLayout(folder))}`,
    );
  }
  return { rowsIn, rowsOut };
}
