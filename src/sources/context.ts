/**
 * What a source's work is given, and where it reads its upstream: the step
 * that runs it (steps/) passes its own context, which extends these. Sources
 * define them so that they need nothing of the engine above them.
 */
import type { z } from 'zod';
import type { PartitionIndex } from '../duckdb/partitions.js';
import type { Database } from '../duckdb/database.js';
import type { HttpClient } from '../http/client.js';
import type { RequestOptions } from '../http/options.js';
import type { Dataset } from '../duckdb/datasets.js';
import { StateError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Progress } from '../progress.js';
import type { FileRecord } from '../util/fs.js';

export interface BicycleUpstream {
  url: string;
  authUrl: string;
  username: string;
  password: string;
  clientId: string;
}

export interface Upstream {
  bicycle: BicycleUpstream | undefined;
  /** The traffic-sign API: v1 and v4 at `url`, the v5 current state at `v5Url`. */
  signs: { url: string; v5Url: string } | undefined;
}

/** What may be looked at to check or plan a step's work: nothing is written. */
export interface PlanContext {
  stepId: string;
  /** Absolute output folder (may not exist yet). */
  output: string;
  /** Absolute folder of the SQL files. */
  sqlDir: string;
  /** The step's checkpoint from an earlier run, if any (read only). */
  checkpoint: Record<string, unknown> | undefined;
  /**
   * The output folder's datasets as they are now; looked for once and kept until
   * the step records a file it wrote (a run gives it; without it, look).
   */
  datasets?(): Promise<readonly Dataset[]>;
  /** The run's DuckDB over the output folder (a run gives it; without it, open one). */
  database?(): Promise<Database>;
  /** What the run knows of its datasets' partitions (a run gives it; without it, look). */
  partitions?: PartitionIndex;
  /**
   * What the steps before this one write tonight, by dataset (view name): a
   * plan made before anything runs counts those partitions as changed.
   */
  pending?: ReadonlyMap<string, readonly string[] | 'all'>;
  /** The data files the run removes before its steps (--repair), relative, with `/`. */
  repaired?: readonly string[];
}

/** Partitions of a dataset (its view name): their values, or all of them. */
export interface PartitionSet {
  dataset: string;
  partitions: readonly string[] | 'all';
}

/**
 * What a step will do to the folder, decided against it before the step runs:
 * skip, build in part or whole, and why; the partitions it writes; of every
 * dataset of the folder it reads, the partitions it reads (all, where the
 * pipeline does not narrow them). Data: `road-etl plan` prints it, the
 * manifest records it for each step.
 */
export interface StepDecision {
  decision: 'skip' | 'partial' | 'whole';
  why: string;
  builds: PartitionSet[];
  reads: PartitionSet[];
  /** Extracts it writes (paths in the folder); none for a step that writes none. */
  files?: string[];
  /**
   * The bound of what the step does beyond `builds`, where that depends on
   * what lands tonight (late data, in this step or one before it): partitions
   * it rewrites only where what lands differs from what they hold, the
   * partitions it then reads, the extracts it then writes again. A plan made
   * before the night names them (pipeline/plan.ts); the night stays within.
   */
  may_build?: PartitionSet[];
  may_read?: PartitionSet[];
  may_files?: string[];
}

/** The step's checkpoint, as the step sees it. */
export interface StepCheckpoint {
  readonly checkpoint: Record<string, unknown>;
  /** Saves a new checkpoint atomically. Call only after the data it describes is durable. */
  save(checkpoint: Record<string, unknown>): Promise<void>;
}

/**
 * Work fetched for a step ahead of its run, by a run waiting for its folder
 * (parallel backfills): `stage`, this run is that one (fetch into the staging
 * folder, land nothing); `adopt`, what such a run staged (its staging folder
 * and the checkpoint it left), for the step to take up when it is the same work.
 */
export type AheadWork =
  { mode: 'stage' } | { mode: 'adopt'; staging: string; checkpoint: Record<string, unknown> };

/** What a source's run uses of the step that runs it. */
export interface RunContext extends PlanContext {
  state: StepCheckpoint;
  /** The run's scratch folder: temporary files, renamed into place when whole. */
  scratch: string;
  /** The step's staging folder: fetched but not yet landed, kept across a crash. */
  staging: string;
  log: Logger;
  progress: Progress;
  signal: AbortSignal;
  datasets(): Promise<readonly Dataset[]>;
  /** The run's DuckDB, with a view for every dataset of the output folder as it is now. */
  database(): Promise<Database>;
  /** Records a file the step wrote (for the manifest); path absolute. */
  recordFile(path: string, sha256?: string): Promise<FileRecord>;
  /**
   * Brings the partitions a decision reads to DuckDB, before the step reads
   * them: nothing to do on a local disk; fetched, for a local copy of a
   * folder in an object store. A kind that decides as it runs calls it once
   * decided; the engine, for the others.
   */
  bring(reads: readonly PartitionSet[]): Promise<void>;
  /** An HTTP client with these request options, closed when the step ends. */
  http(options: RequestOptions): HttpClient;
  /** Work fetched ahead (kinds that stage ahead only). */
  ahead?: AheadWork | undefined;
}

/** What a run did, for the manifest. */
export interface RunOutcome {
  rowsIn: number;
  rowsOut: number;
  /** Anything else worth keeping in the manifest (gaps passed, limits learned, ...). */
  notes?: Record<string, unknown>;
  /** The decision the step carried out, where it decided it as it ran (sql steps). */
  decision?: StepDecision;
}

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
      `The checkpoint of ${context.stepId} is damaged (${issue?.message ?? 'unreadable'}${where}); restore .state/${context.stepId}.json from a copy of the folder, or start the step over with --reset ${context.stepId}, which first removes the data the step landed`,
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
