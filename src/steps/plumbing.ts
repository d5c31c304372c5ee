/**
 * What step kinds share: their checkpoint read against a schema and written
 * one save at a time, and "write a Parquet file under a temporary name, put it
 * in place, record it".
 */
import { z } from 'zod';
import { PARQUET_FORMAT, quotedString, type Database } from '../duckdb/database.js';
import { StateError } from '../errors.js';
import { writeThrough } from '../util/fs.js';
import type { PlanContext, StepCheckpoint, StepContext } from './step-kind.js';

/**
 * The step's checkpoint from an earlier run, read against its schema; `empty`
 * when there is none. A checkpoint that does not fit is a StateError that says
 * how to start over, with the schema's complaint as its cause.
 */
export function readCheckpoint<T>(context: PlanContext, schema: z.ZodType<T>, empty: () => T): T {
  const raw = context.checkpoint;
  if (!raw || Object.keys(raw).length === 0) return empty();
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new StateError(
      `The checkpoint of ${context.stepId} is damaged (${issue?.message ?? 'unreadable'}${where}); start the step over with --reset ${context.stepId}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * Saves checkpoints one at a time, in the order asked: each save takes a copy
 * of the value as it is when asked, so later changes wait for the next save.
 */
export class CheckpointWriter<T> {
  readonly #state: StepCheckpoint;
  #saving: Promise<void> = Promise.resolve();

  constructor(state: StepCheckpoint) {
    this.#state = state;
  }

  /** Saves `value` after the saves asked before; resolves when it is written. */
  save(value: T): Promise<void> {
    const snapshot = structuredClone(value) as unknown as Record<string, unknown>;
    this.#saving = this.#saving.then(() => this.#state.save(snapshot));
    return this.#saving;
  }

  /** Resolves when every save asked so far is written (rejects with a failed one). */
  settled(): Promise<void> {
    return this.#saving;
  }
}

/**
 * Writes a query's rows to `target` as Parquet: under a temporary name in the
 * run's scratch folder, then fsynced and renamed into place, and recorded for
 * the manifest. Resolves to the number of rows.
 */
export async function writeParquet(
  context: Pick<StepContext, 'scratch' | 'recordFile'>,
  db: Database,
  query: string,
  target: string,
): Promise<number> {
  const rows = await writeThrough(target, context.scratch, (temporary) =>
    db.copy(`COPY ${query} TO ${quotedString(temporary)} (${PARQUET_FORMAT})`),
  );
  await context.recordFile(target);
  return rows;
}
