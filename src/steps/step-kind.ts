/**
 * The seam between the engine and what a step does. A kind validates its own
 * options (a zod schema), plans the work it would do as data (validate and
 * --dry-run print the plan), and carries that plan out (run). Kinds never call
 * each other; the engine wires them.
 */
import type { z } from 'zod';
import { RunError } from '../errors.js';
import type { HttpClient } from '../http/client.js';
import type { RequestOptions } from '../http/options.js';
import type { Logger } from '../log.js';
import type { Database } from '../duckdb/database.js';
import type {
  PlanContext,
  RunContext,
  RunOutcome,
  StepDecision,
  Upstream,
} from '../sources/context.js';
import type { FileRecord } from '../util/fs.js';

export type {
  AheadWork,
  BicycleUpstream,
  PartitionSet,
  PlanContext,
  StepCheckpoint,
  StepDecision,
  Upstream,
} from '../sources/context.js';

/** What a step's decision may look at: the folder (through DuckDB), and what runs before it tonight. */
export interface DecideContext extends PlanContext {
  database(): Promise<Database>;
}

/** A step's context: what its source's run uses, and the upstreams configured. */
export interface StepContext extends RunContext {
  upstream: Upstream;
}

/** The upstream of this source a step needs; a run without one configured fails the step. */
export function upstreamOf<Source extends keyof Upstream>(
  context: { upstream: Upstream },
  source: Source,
  kind: string,
): NonNullable<Upstream[Source]> {
  const upstream = context.upstream[source];
  if (!upstream) throw new RunError(`${kind}: no ${source} upstream configured`);
  return upstream;
}

/** What identifies the data an upstream serves (recorded in the step's state), and where it was read. */
export type UpstreamIdentity = { url: string } & Record<string, unknown>;

/** What a kind may use to ask the upstream, before the run takes the output folder. */
export interface UpstreamCheckContext extends PlanContext {
  upstream: Upstream;
  log: Logger;
  signal: AbortSignal;
  /** Runs `probe` once for the whole check: steps that ask the same share one request. */
  once<T>(key: string, probe: () => Promise<T>): Promise<T>;
  /** An HTTP client with these request options, closed when the check ends. */
  http(options: RequestOptions): HttpClient;
}

/**
 * How a kind knows its upstream: after a run, `identify` says what identifies
 * the upstream's data (from what the step landed, or a small request); before
 * the next run, `check` asks the upstream now configured whether it still
 * serves the data so identified, and says why not when it does not. The same
 * upstream at another address (a port of localhost) passes: the data decides.
 */
export interface UpstreamIdentityHooks<Options> {
  /** `accepted`: the user said this upstream is the data's (--accept-upstream): identify it by what it serves. */
  identify(
    options: Options,
    context: StepContext,
    accepted: boolean,
  ): Promise<UpstreamIdentity | undefined>;
  check(
    options: Options,
    context: UpstreamCheckContext,
    stored: UpstreamIdentity,
  ): Promise<string | undefined>;
}

export interface ExportRecord extends FileRecord {
  format: string;
  rows: number;
}

export interface StepOutcome extends RunOutcome {
  /** Exports written by the step (listed apart in the manifest). */
  exports?: ExportRecord[];
}

/**
 * What a step will do, as data (JSON): what it will request and from where it
 * starts. `validate` prints it, and a run carries out the very same object.
 */
export type KindPlan = object;

export interface StepKind<Options = unknown, Plan extends KindPlan = KindPlan> {
  kind: string;
  description: string;
  options: z.ZodType<Options>;
  /** At most one step of this kind per pipeline (its datasets hold one history). */
  single?: boolean;
  /** The upstream the kind talks to, if any. */
  source?: 'bicycle' | 'signs';
  /** Whether a step with these options asks its source at all (default: yes); a definition names the source only then. */
  asksUpstream?(options: Options): boolean;
  /** Option names holding SQL text: ${...} is refused there (use $name and params). */
  sqlOptions?: readonly string[];
  /**
   * Views (name -> columns and DuckDB types) of the datasets the kind writes, so
   * that SQL can name them before the first extraction: empty until there is data.
   */
  views?: Readonly<Record<string, readonly (readonly [string, string])[]>>;
  /** Static checks beyond the schema: [option path, message] pairs. */
  check?(
    options: Options,
    context: Pick<PlanContext, 'stepId' | 'output' | 'sqlDir'>,
  ): Promise<[string[], string][]> | [string[], string][];
  /**
   * Bad input that only the folder can tell (a run told to go on where data
   * ends, on a folder without any): an InputError before the run takes the
   * folder (exit 2, nothing written).
   */
  checkFolder?(options: Options, context: PlanContext): void;
  /** What the step would do now, from its options and the folder's state; touches nothing. */
  plan(options: Options, context: PlanContext): Promise<Plan> | Plan;
  /** The plan in words. */
  describe(plan: Plan, options: Options): string[];
  /**
   * Whether the kind can fetch its work without landing it (`context.ahead`):
   * a run waiting for its folder then fetches meanwhile, and the run that
   * follows takes that work up.
   */
  stagesAhead?: boolean;
  /**
   * What the step will do to the folder (StepDecision), against the folder as
   * it is and what the steps before it write tonight (`context.pending`).
   */
  decide(
    options: Options,
    context: DecideContext,
    plan: Plan,
  ): Promise<StepDecision> | StepDecision;
  /**
   * Whether the kind runs on as many DuckDB threads as what it reads keeps
   * busy (threadsFor), rather than on those configured.
   */
  threadsByReads?: boolean;
  /**
   * Carries out the plan as `decision` (made by `decide` just before, its reads
   * fetched) says: the step decides nothing again.
   */
  run(
    options: Options,
    context: StepContext,
    plan: Plan,
    decision: StepDecision,
  ): Promise<StepOutcome>;
  /** How the kind knows that the upstream is the one whose data the folder holds. */
  upstreamIdentity?: UpstreamIdentityHooks<Options>;
  /**
   * The period (the pipeline's `start` and `end`) that fetches a partition
   * of the step's dataset again, by its value: what a printed repair gives.
   */
  repairPeriod?(partition: string): { start: string; end: string } | undefined;
  /**
   * What a repair of one of its files (in the partition of this value, if
   * any) loses for good, in words, where the upstream no longer serves it:
   * said before the file is removed. Undefined where the step fetches or
   * builds again what the file held.
   */
  repairLoses?(partition: string | undefined): string | undefined;
  /** Forgets the step's work (--reset): its checkpoint is removed by the engine, its data here. */
  reset?(options: Options, context: StepContext): Promise<void>;
}

/** Identity helper that types a step kind's declaration. */
export function defineStepKind<Options, Plan extends KindPlan = KindPlan>(
  kind: StepKind<Options, Plan>,
): StepKind<Options, Plan> {
  return kind;
}
