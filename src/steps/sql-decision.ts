/**
 * A sql step's decision (StepDecision) from its build (sql-build.ts): what it
 * builds of its outputs and what it reads of every dataset its file names.
 * The same function serves `road-etl plan`, made before the night runs, and
 * the run, which records the build it carried out in the manifest.
 */
import { readFile } from 'node:fs/promises';
import { datasetsRead } from './export-file.js';
import { insideFolder } from './paths.js';
import { planBuild, type BuildDefinition, type SqlBuild } from './sql-build.js';
import type { SqlStepOptions } from './sql-options.js';
import type { DecideContext, PartitionSet, StepDecision } from './step-kind.js';

/** Partition values in words: a few named, or the first and the last of many. */
function valuesInWords(values: readonly string[]): string {
  if (values.length <= 3) return values.join(', ');
  return `${values[0]!} ... ${values.at(-1)!}`;
}

/** The step's decision for `build`; `named`: the datasets its file names (view names). */
export function sqlDecision(
  build: SqlBuild,
  options: SqlStepOptions,
  named: readonly string[],
): StepDecision {
  const from = options.incremental?.from;
  const inputs = named.filter((name) => !options.outputs.includes(name));
  const all = (names: readonly string[]): PartitionSet[] =>
    names.map((dataset) => ({ dataset, partitions: 'all' }));
  if (build.mode === 'unchanged')
    return {
      decision: 'skip',
      why: `${from ?? 'its input'} has not changed since the last build`,
      builds: [],
      reads: [],
    };
  if (build.mode === 'full')
    return {
      decision: 'whole',
      why: options.incremental
        ? (build.reason ?? 'first build')
        : 'not incremental: built whole at every run',
      builds: all(options.outputs),
      reads: all(inputs),
    };
  const changed = `${build.changed.length} partition(s) of ${from ?? ''} changed (${valuesInWords(build.changed)})`;
  if (build.mode === 'fold')
    return {
      decision: 'partial',
      why: `${changed}: folded into the outputs`,
      builds: all(options.outputs),
      // The fold file reads the outputs as they were (previous_<output>), and what changed.
      reads: [
        ...inputs.map((dataset) => ({
          dataset,
          partitions: dataset === from ? build.changed : ('all' as const),
        })),
        ...all(options.outputs),
      ],
    };
  const narrowed = new Map((build.reads ?? []).map((r) => [r.source.name, r.values]));
  return {
    decision: 'partial',
    why: `${changed}: ${build.keys?.length ?? 0} partition(s) of ${options.partition_by ?? 'the outputs'} to build`,
    builds: options.outputs.map((dataset) => ({ dataset, partitions: build.keys ?? 'all' })),
    reads: inputs.map((dataset) => ({ dataset, partitions: narrowed.get(dataset) ?? 'all' })),
  };
}

/** What defines a sql step's build (sql-build.ts), from its options and files. */
export function buildDefinition(
  options: SqlStepOptions,
  text: string,
  foldText: string | undefined,
): BuildDefinition {
  return {
    text,
    foldText,
    params: options.params,
    outputs: options.outputs,
    partitionBy: options.partition_by,
    incremental: options.incremental,
  };
}

/** The text of the step's SQL file, and of its fold file. */
export async function sqlTexts(
  options: SqlStepOptions,
  sqlDir: string,
): Promise<{ text: string; foldText: string | undefined }> {
  const text = await readFile(insideFolder(sqlDir, options.file)!, 'utf8');
  const fold = options.incremental?.fold;
  const foldText =
    fold === undefined ? undefined : await readFile(insideFolder(sqlDir, fold)!, 'utf8');
  return { text, foldText };
}

/** The datasets (view names) a SQL text names: those of the folder, and those written tonight. */
export async function namedDatasets(text: string, context: DecideContext): Promise<string[]> {
  const there = (await context.datasets?.()) ?? [];
  const names = new Set([...there.map((d) => d.name), ...(context.pending?.keys() ?? [])]);
  // By name: the plan, made before the steps before it wrote, names them in the run's order.
  return datasetsRead(
    text,
    [...names].sort().map((name) => ({ name })),
  ).map((d) => d.name);
}

/** The build each decision decideSql made stands for: what the run carries out (sql-run.ts). */
const builds = new WeakMap<StepDecision, SqlBuild>();

/** The build a decision of decideSql stands for. */
export function buildOf(decision: StepDecision): SqlBuild {
  const build = builds.get(decision);
  if (!build) throw new Error('a sql step was given a decision decideSql did not make');
  return build;
}

/**
 * A sql step's decision, made just before it runs (and by `road-etl plan`):
 * what it builds and reads, on a connection of its own that it closes, so
 * that deciding leaves nothing behind; the run carries out that very build.
 */
export async function decideSql(
  options: SqlStepOptions,
  context: DecideContext,
): Promise<StepDecision> {
  const { text, foldText } = await sqlTexts(options, context.sqlDir);
  const db = await (await context.database()).fork();
  try {
    const build = await planBuild(db, buildDefinition(options, text, foldText), context);
    const source = build.mode === 'fold' ? foldText! : text;
    const decision = sqlDecision(build, options, await namedDatasets(source, context));
    builds.set(decision, build);
    return decision;
  } finally {
    db.close();
  }
}
