/**
 * Step kind `sql`: runs a file of sql/ in DuckDB over the output datasets (each a
 * view) and keeps the tables it declares as outputs, as Parquet under
 * derived/<table>/, where later steps and `road-etl query` see them as views.
 * With `partition_by`, an output is kept as partitions of that column; with
 * `incremental`, only the partitions that new input touches are rebuilt, or an
 * output kept whole is folded from its previous self and the new input
 * (sql-build.ts).
 */
import { stat } from 'node:fs/promises';
import { insideFolder } from './paths.js';
import { sqlStepOptions, type SqlStepOptions } from './sql-options.js';
import { readsOf } from './sql-reads.js';
import { decideSql } from './sql-decision.js';
import { runSqlStep } from './sql-run.js';
import { defineStepKind } from './step-kind.js';

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
  plan(options) {
    // What the inputs hold is known only once the steps before have run: the
    // build decides then which partitions to build again.
    return {
      file: options.file,
      params: Object.keys(options.params),
      outputs: options.outputs,
      partition_by: options.partition_by ?? null,
      incremental: options.incremental ?? null,
    };
  },
  describe(_plan, options) {
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
    if (incremental)
      for (const [name, sql] of readsOf(incremental))
        lines.push(`reads, of ${name}, only the partitions those read (${sql})`);
    if (incremental?.fold !== undefined)
      lines.push(
        `folds the partitions of ${incremental.from} added since the last build into its outputs with sql/${incremental.fold}`,
      );
    if (incremental && incremental.rebuild_on.length > 0)
      lines.push(`builds everything again when ${incremental.rebuild_on.join(' or ')} changed`);
    return lines;
  },
  decide: decideSql,
  threadsByReads: true,
  run: (options, context, _plan, decision) => runSqlStep(options, context, decision),
});
