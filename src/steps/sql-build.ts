/**
 * What an incremental `sql` step rebuilds: the partitions of `incremental.from`
 * that changed since the last build (input-changes.ts) are given to
 * `incremental.touches`, which names the output partitions each feeds; those
 * are rebuilt, whole. With `incremental.fold` instead, an output kept whole
 * (a state, such as each sign's latest record) is made by a second file from
 * the previous outputs and the changed partitions, as long as only the last
 * partition and later ones changed (an append). Anything else rebuilds
 * everything, as does any change to a dataset of `incremental.rebuild_on`.
 */
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { partitionKeySql, partitionListSql } from '../duckdb/partitions.js';
import { goneOutput, outputsPresent } from './sql-outputs.js';
import { RunError } from '../errors.js';
import { definitionHash, inputChanges, type BuildCheckpoint } from './input-changes.js';
import type { PlanContext } from './step-kind.js';
import {
  PARTITIONS_VARIABLE,
  partialReads,
  partitionColumnType,
  type IncrementalOptions,
  type InputRead,
  type PartialChanges,
} from './sql-reads.js';

import { folderFilesOf } from '../duckdb/folder-files.js';

/**
 * The DuckDB variable that holds the partition values of `incremental.from` as
 * they are now (a list), so that a file need not read the dataset to know them.
 */
const INPUTS_VARIABLE = 'inputs';

/** The partition values of the dataset read (`inputs`), typed as its view types them. */
async function inputsOf(db: Database, input: PartialChanges['input']): Promise<TypedList> {
  return { values: input.current, type: await partitionColumnType(db, input.source, input.column) };
}

export interface BuildDefinition {
  text: string;
  /** The text of the fold file (incremental.fold). */
  foldText?: string | undefined;
  params: Record<string, unknown>;
  outputs: readonly string[];
  partitionBy: string | undefined;
  incremental: IncrementalOptions | undefined;
}

export type SqlBuild =
  | { mode: 'unchanged'; checkpoint: BuildCheckpoint }
  | {
      /** partial: the output partitions `keys`; fold: the fold file over the previous outputs. */
      mode: 'full' | 'partial' | 'fold';
      /** The output partitions to build, as their folder values; undefined: all. */
      keys: readonly string[] | undefined;
      /** Input partitions that changed (partial and fold builds). */
      changed: readonly string[];
      /** What to save once the outputs are written. */
      checkpoint: BuildCheckpoint | undefined;
      /** Why everything is built (for the log). */
      reason?: string;
      /** The partitions of each dataset the file reads (partial builds with `incremental.reads`). */
      reads?: readonly InputRead[];
      /** The DuckDB variables the file reads (`inputs`, `partitions`), as typed lists: applyBuild sets them. */
      variables?: Record<string, TypedList>;
    };

/** A list of partition values and the DuckDB type of its elements. */
interface TypedList {
  values: readonly string[];
  type: string;
}

/**
 * Sets on `db` the DuckDB variables a build's file reads: `inputs` (the
 * partition values of `incremental.from` as they are now) and, for a partial
 * or folded build, `partitions` (those to build, or those added). A full build
 * leaves `partitions` unset (getvariable gives NULL).
 */
export async function applyBuild(db: Database, build: SqlBuild): Promise<void> {
  if (build.mode === 'unchanged') return;
  for (const [name, { values, type }] of Object.entries(build.variables ?? {}))
    await db.run(`SET VARIABLE ${name} = ${partitionListSql(values, type)}`);
}

/**
 * Decides what to build, and with what DuckDB variables (applyBuild): for a
 * partial build, `partitions` lists the output partitions (typed as `touches`
 * gives them). `db` is a connection of the decision's own: `touches` is
 * evaluated there, on a temporary table and variable it leaves behind.
 */
export async function planBuild(
  db: Database,
  definition: BuildDefinition,
  context: PlanContext,
): Promise<SqlBuild> {
  const { incremental } = definition;
  if (!incremental) return { mode: 'full', keys: undefined, changed: [], checkpoint: undefined };
  const hash = definitionHash([
    definition.text,
    ...(definition.foldText !== undefined ? [definition.foldText] : []),
    definition.params,
    definition.outputs,
    definition.partitionBy ?? null,
    // As written: an option left at its default does not change what was built.
    {
      ...incremental,
      rebuild_on: incremental.rebuild_on?.length ? incremental.rebuild_on : undefined,
    },
  ]);
  const changes = await inputChanges(
    context,
    incremental.from,
    hash,
    () => outputsPresent(folderFilesOf(context), context.output, definition.outputs),
    incremental.rebuild_on ?? [],
  );
  if (changes.mode === 'full')
    return {
      mode: 'full',
      keys: undefined,
      changed: [],
      checkpoint: changes.checkpoint,
      reason: changes.reason,
      ...(changes.input
        ? { variables: { [INPUTS_VARIABLE]: await inputsOf(db, changes.input) } }
        : {}),
    };
  // A partition that is gone (a --repair removed it) would stay so: the table is built anew.
  const gone = goneOutput(context, definition.outputs, changes.whole);
  if (gone !== undefined)
    return {
      mode: 'full',
      keys: undefined,
      changed: [],
      checkpoint: changes.checkpoint,
      reason: `the partition ${gone} is gone: the table is built anew from its sources`,
      ...(changes.mode === 'partial'
        ? { variables: { [INPUTS_VARIABLE]: await inputsOf(db, changes.input) } }
        : {}),
    };
  if (changes.mode === 'unchanged') return changes;

  return incremental.fold !== undefined
    ? planFold(db, changes, incremental)
    : planPartial(db, changes, incremental, definition.partitionBy, context);
}

/** A fold adds to what was built: only partitions from the last one built on may have changed. */
async function planFold(
  db: Database,
  changes: PartialChanges,
  incremental: IncrementalOptions,
): Promise<SqlBuild> {
  const last = changes.previous.at(-1);
  const now = new Set(changes.input.current);
  const earlier = changes.changed.find((v) => !now.has(v) || (last !== undefined && v < last));
  const inputs = await inputsOf(db, changes.input);
  if (earlier !== undefined)
    return {
      mode: 'full',
      keys: undefined,
      changed: [],
      checkpoint: changes.checkpoint,
      reason: `partition ${earlier} of ${incremental.from}, before the last one built on, changed or went`,
      variables: { [INPUTS_VARIABLE]: inputs },
    };
  return {
    mode: 'fold',
    keys: undefined,
    changed: changes.changed,
    checkpoint: changes.checkpoint,
    variables: {
      [INPUTS_VARIABLE]: inputs,
      [PARTITIONS_VARIABLE]: { values: changes.changed, type: inputs.type },
    },
  };
}

/** The output partitions that `touches` says the changed input partitions feed. */
async function planPartial(
  db: Database,
  changes: PartialChanges,
  incremental: IncrementalOptions,
  partitionBy: string | undefined,
  context: PlanContext,
): Promise<SqlBuild> {
  const { column } = changes.input;
  const inputs = await inputsOf(db, changes.input);
  const type = inputs.type;
  // (on the decision's own connection: what `touches` reads)
  await db.run(`SET VARIABLE ${INPUTS_VARIABLE} = ${partitionListSql(inputs.values, type)}`);
  // Every partition known before or now, so that `touches` may look at its neighbours (lead,
  // lag): those there are from `inputs`, a few hundred values not parsed again.
  const now = new Set(changes.input.current);
  const gone = changes.known.filter((v) => !now.has(v));
  const list = (values: readonly string[]) => partitionListSql(values, type);
  try {
    await db.run(
      `CREATE OR REPLACE TEMP TABLE road_etl_input_partitions AS
       SELECT v AS ${quotedIdentifier(column)}, list_contains(${list(changes.changed)}, v) AS changed
       FROM (SELECT unnest(getvariable('${INPUTS_VARIABLE}')) AS v${gone.length > 0 ? ` UNION ALL SELECT unnest(${list(gone)})` : ''})`,
    );
    await db.run(
      `SET VARIABLE ${PARTITIONS_VARIABLE} = (
         SELECT list(DISTINCT k ORDER BY k) FILTER (WHERE k IS NOT NULL)
         FROM (SELECT unnest(touches) AS k FROM (
           SELECT changed, (${incremental.touches ?? 'NULL'}) AS touches FROM road_etl_input_partitions
         ) WHERE changed))`,
    );
  } catch (error) {
    throw new RunError(
      `incremental.touches (${incremental.touches}) over the partitions of ${incremental.from} (${column}): ${(error as Error).message.split('\n')[0]!}`,
      { cause: error },
    );
  }
  const [typed] = await db.all(`SELECT typeof(getvariable('${PARTITIONS_VARIABLE}')) AS type`);
  const listType = (typed?.['type'] as string | undefined) ?? '';
  if (!listType.endsWith('[]'))
    throw new RunError(
      `incremental.touches (${incremental.touches}) must give a list of partition values, not ${listType}`,
    );
  // Partitions of the input's own column past the last the input has (the data's end) hold
  // nothing to build: neither built nor named. (An output partitioned by another column, a
  // local date from a UTC date, may reach past it.)
  const element = listType.slice(0, -2);
  const withinData =
    element === type && partitionBy === column
      ? ` WHERE k <= (SELECT max(${quotedIdentifier(column)}) FROM road_etl_input_partitions)`
      : '';
  if (withinData)
    await db.run(
      `SET VARIABLE ${PARTITIONS_VARIABLE} = (SELECT coalesce(list(k ORDER BY k), CAST([] AS ${listType})) FROM (SELECT unnest(getvariable('${PARTITIONS_VARIABLE}')) AS k)${withinData})`,
    );
  const keyed = await db.all(
    `SELECT ${partitionKeySql('k', element)} AS key FROM (SELECT unnest(getvariable('${PARTITIONS_VARIABLE}')) AS k)`,
  );
  // Changes that feed no partition (the last of a sequence, say) leave nothing to build.
  if (keyed.length === 0) return { mode: 'unchanged', checkpoint: changes.checkpoint };
  const reads =
    partitionBy === undefined
      ? []
      : await partialReads(db, changes, incremental, partitionBy, listType.slice(0, -2), context);
  const keys = keyed.map((r) => String(r['key']));
  return {
    mode: 'partial',
    keys,
    changed: changes.changed,
    checkpoint: changes.checkpoint,
    ...(reads.length > 0 ? { reads } : {}),
    variables: {
      [INPUTS_VARIABLE]: inputs,
      // (the keys are the values' text: cast back to the type `touches` gave)
      [PARTITIONS_VARIABLE]: { values: keys, type: element },
    },
  };
}
