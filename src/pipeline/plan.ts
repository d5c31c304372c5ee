/**
 * What a run will do, as data: the steps selected (and the earlier outputs they
 * reuse), the upstreams, and each step's own plan (the bicycle batches, the
 * feed's ranges, the downloads). `validate` prints it (as text, or as JSON for
 * CI and schedulers), --dry-run too, and a run carries out the same object.
 * Nothing is touched.
 */
import { InputError } from '../errors.js';
import type { KindPlan, PartitionSet, PlanContext, StepDecision } from '../steps/step-kind.js';
import type { Pipeline, PipelineStep } from './build.js';
import type { FolderView } from './run-folder.js';
import { describeRunReport } from './run-report.js';
import { repairLoses } from './repair.js';
import { StateStore } from './state.js';

export interface Selection {
  /** Steps that run, in order. */
  selected: PipelineStep[];
  /** Needs of selected steps that do not run: their earlier output is read. */
  reused: { step: string; need: string }[];
}

/** One step of the plan: the kind's own plan object, and the same in words. */
export interface StepPlan {
  id: string;
  kind: string;
  needs: string[];
  /** Whether the run starts the step over (--reset): its checkpoint is not read. */
  reset: boolean;
  plan: KindPlan;
  description: string[];
  /** What the step will do to the folder (`road-etl plan`); absent where not asked (validate). */
  decision?: StepDecision;
}

/**
 * Adds what a step builds to what the steps before build tonight: a later
 * step counts those partitions as changed, in a plan and in the run alike
 * (whether or not the build left rows in them), so that the run does what
 * the plan printed.
 */
export function addPending(
  pending: Map<string, readonly string[] | 'all'>,
  builds: readonly PartitionSet[],
): void {
  for (const { dataset, partitions } of builds) {
    const known = pending.get(dataset);
    pending.set(
      dataset,
      known === 'all' || partitions === 'all'
        ? 'all'
        : [...new Set([...(known ?? []), ...partitions])].sort(),
    );
  }
}

export interface Plan {
  pipeline: string;
  definition: string;
  output: string;
  params: Record<string, unknown>;
  upstreams: {
    /** The simulator the run starts in-process (its address is known once it listens). */
    simulator: { seed: number } | null;
    signs: { url: string; v5_url: string } | null;
    bicycle: { url: string; auth_url: string; client_id: string } | null;
  };
  /** Environment variables a run needs that are not set now (a run refuses without them). */
  missing_env: string[];
  steps: StepPlan[];
  /** Needs of selected steps that do not run: the output of an earlier run is read. */
  reuses: { step: string; need: string }[];
  /** The data files removed before the steps (--repair), and what each loses for good (null: nothing, its step fetches or builds it again). */
  repairs: { file: string; loses: string | null }[];
  /** The report written at the end, in words; null without one. */
  report: string | null;
}

/** Resolves --select; unknown names are bad input. */
export function selectSteps(pipeline: Pipeline, select: readonly string[] | undefined): Selection {
  if (!select || select.length === 0) return { selected: pipeline.steps, reused: [] };
  const known = new Set(pipeline.steps.map((s) => s.id));
  const unknown = select.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new InputError(
      `--select: no step named ${unknown.join(', ')} in ${pipeline.file} (steps: ${[...known].join(', ')})`,
    );
  }
  const chosen = new Set(select);
  const selected = pipeline.steps.filter((s) => chosen.has(s.id));
  const reused = selected.flatMap((s) =>
    s.needs.filter((n) => !chosen.has(n)).map((need) => ({ step: s.id, need })),
  );
  return { selected, reused };
}

function upstreamsOf(pipeline: Pipeline): Plan['upstreams'] {
  const { signs, bicycle } = pipeline.upstream;
  return {
    simulator: pipeline.simulator ? { seed: pipeline.simulator.seed } : null,
    signs: signs?.url ? { url: signs.url, v5_url: signs.v5Url } : null,
    bicycle: bicycle
      ? { url: bicycle.url, auth_url: bicycle.authUrl, client_id: bicycle.clientId }
      : null,
  };
}

/** Plans one step (what it reads of the folder is as it is now). Touches nothing. */
export async function planStep(step: PipelineStep, context: PlanContext): Promise<StepPlan> {
  const plan = await step.kind.plan(step.options, context);
  return {
    id: step.id,
    kind: step.kind.kind,
    needs: step.needs,
    reset: false,
    plan,
    description: step.kind.describe(plan, step.options),
  };
}

/**
 * What a run of `selection` would do now, step by step. Steps in `resets` are
 * planned as if they had never run. Touches nothing.
 */
export async function planRun(
  pipeline: Pipeline,
  output: string,
  { selected, reused }: Selection,
  resets: ReadonlySet<string> = new Set(),
  /** With the folder: each step's decision too, each seeing what the steps before build. */
  folder?: FolderView,
  /** The data files the run removes first (--repair), relative. */
  repaired: readonly string[] = [],
): Promise<Plan> {
  const store = new StateStore(output);
  const steps: StepPlan[] = [];
  // What the steps before write tonight for certain, and what they may write (late data).
  const pending = new Map<string, readonly string[] | 'all'>();
  const maybe = new Map<string, readonly string[] | 'all'>();
  for (const step of selected) {
    const reset = resets.has(step.id);
    // A damaged state file fails the plan as it fails the run.
    const checkpoint = reset ? undefined : (await store.read(step.id))?.checkpoint;
    const context: PlanContext = {
      stepId: step.id,
      output,
      sqlDir: pipeline.sqlDir,
      checkpoint,
      repaired,
      // The folder's files as its listing has them (a copy's: fetched when read).
      ...(folder ? { partitions: folder.partitions } : {}),
    };
    const planned = await planStep(step, context);
    if (!folder) {
      steps.push({ ...planned, reset });
      continue;
    }
    const decide = (written: ReadonlyMap<string, readonly string[] | 'all'>) =>
      step.kind.decide(
        step.options,
        { ...context, ...folder, pending: new Map(written) },
        planned.plan,
      );
    let decision = await decide(pending);
    // What the step does if all that the steps before may write lands: its bound.
    if (maybe.size > 0) {
      const all = new Map(pending);
      addPending(
        all,
        [...maybe].map(([dataset, partitions]) => ({ dataset, partitions })),
      );
      decision = withBound(decision, await decide(all));
    }
    addPending(pending, decision.builds);
    addPending(maybe, decision.may_build ?? []);
    steps.push({ ...planned, reset, decision });
  }
  return {
    pipeline: pipeline.name,
    definition: pipeline.file,
    output,
    params: pipeline.params,
    upstreams: upstreamsOf(pipeline),
    missing_env: pipeline.missingEnv,
    steps,
    reuses: reused,
    repairs: repaired.map((file) => ({ file, loses: repairLoses(pipeline, file) ?? null })),
    report: pipeline.report ? describeRunReport(pipeline.report, output) : null,
  };
}

/** The partitions of `sets` that `known` does not hold, by dataset. */
function beyond(sets: readonly PartitionSet[], known: readonly PartitionSet[]): PartitionSet[] {
  const held = new Map<string, readonly string[] | 'all'>();
  addPending(held, known);
  return sets.flatMap(({ dataset, partitions }): PartitionSet[] => {
    const there = held.get(dataset);
    if (there === 'all') return [];
    if (partitions === 'all') return [{ dataset, partitions }];
    const more = partitions.filter((value) => !there?.includes(value));
    return more.length > 0 ? [{ dataset, partitions: more }] : [];
  });
}

/**
 * `decision` with the bound that `bound` (the step's decision were all that
 * the steps before may write to land) sets beyond it: what it may build,
 * read and write besides what it does for certain.
 */
function withBound(decision: StepDecision, bound: StepDecision): StepDecision {
  const mayBuild = beyond(bound.builds, [...decision.builds, ...(decision.may_build ?? [])]);
  const mayRead = beyond(bound.reads, decision.reads);
  const mayFiles = (bound.files ?? []).filter((file) => !decision.files?.includes(file));
  return {
    ...decision,
    ...(mayBuild.length > 0 ? { may_build: [...(decision.may_build ?? []), ...mayBuild] } : {}),
    ...(mayRead.length > 0 ? { may_read: mayRead } : {}),
    ...(mayFiles.length > 0 ? { may_files: mayFiles } : {}),
  };
}

/** The plan in words: for validate and --dry-run. */
export function planLines(plan: Plan, { verbose = true }: { verbose?: boolean } = {}): string[] {
  const lines = [`Pipeline ${plan.pipeline} (${plan.definition})`];
  const params = Object.entries(plan.params).map(
    ([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`,
  );
  if (params.length > 0) lines.push(`Params: ${params.join(' ')}`);
  lines.push(`Output: ${plan.output}`);
  const { simulator, signs, bicycle } = plan.upstreams;
  if (simulator) lines.push(`Upstream: embedded simulator (seed ${simulator.seed})`);
  if (signs)
    lines.push(
      `Upstream: traffic signs at ${signs.url}${signs.v5_url && signs.v5_url !== signs.url ? ` (v5 current state at ${signs.v5_url})` : ''}`,
    );
  if (bicycle)
    lines.push(
      `Upstream: bicycle data at ${bicycle.url}, token from ${bicycle.auth_url} (client ${bicycle.client_id})`,
    );
  if (plan.missing_env.length > 0)
    lines.push(
      `A run needs ${plan.missing_env.join(', ')} in the environment (not set now; a run refuses without them).`,
    );
  for (const { file, loses } of plan.repairs)
    lines.push(
      loses
        ? `Removes ${file} first (--repair): it removes ${loses}; no step can fetch it again.`
        : `Removes ${file} first (--repair); its step fetches or builds again what it held.`,
    );
  lines.push('Steps, in order:');
  for (const [i, step] of plan.steps.entries()) {
    const needs = step.needs.length > 0 ? ` (after ${step.needs.join(', ')})` : '';
    if (!verbose && step.decision) {
      // One or two lines a step: what it does tonight and why, then what it writes.
      const { decision } = step;
      lines.push(
        `  ${i + 1}. ${step.id} [${step.kind}]${needs}: ${decision.decision} (${decision.why})`,
      );
      const writes = decision.files?.length
        ? `writes ${decision.files.join(', ')}`
        : decision.builds.length > 0
          ? `builds ${decision.builds.map(partitionsInWords).join('; ')}`
          : undefined;
      if (writes) lines.push(`       ${writes}`);
      continue;
    }
    lines.push(`  ${i + 1}. ${step.id} [${step.kind}]${needs}`);
    if (step.reset)
      lines.push('       starts over (--reset): its checkpoint and data are forgotten');
    for (const line of step.description) lines.push(`       ${line}`);
    if (step.decision) lines.push(...decisionLines(step.decision).map((l) => `       ${l}`));
  }
  for (const { step, need } of plan.reuses)
    lines.push(`Reuses the output of ${need} from an earlier run (needed by ${step}).`);
  if (plan.report) lines.push(plan.report);
  return lines;
}

/** Partition values in words: how many, and the first and last. */
function partitionsInWords({ dataset, partitions }: PartitionSet): string {
  if (partitions === 'all') return `${dataset}: all`;
  if (partitions.length === 0) return `${dataset}: none`;
  const span =
    partitions.length === 1 ? partitions[0]! : `${partitions[0]!} ... ${partitions.at(-1)!}`;
  return `${dataset}: ${partitions.length} partition(s) (${span})`;
}

/** A step's decision in words. */
export function decisionLines(decision: StepDecision): string[] {
  const lines = [`tonight: ${decision.decision} (${decision.why})`];
  if (decision.builds.length > 0)
    lines.push(`  builds ${decision.builds.map(partitionsInWords).join('; ')}`);
  if (decision.may_build?.length)
    lines.push(
      `  rewrites where late data lands ${decision.may_build.map(partitionsInWords).join('; ')}`,
    );
  if (decision.may_files?.length)
    lines.push(`  writes again where late data lands ${decision.may_files.join(', ')}`);
  if (decision.may_read?.length)
    lines.push(`  then reads ${decision.may_read.map(partitionsInWords).join('; ')}`);
  if (decision.files?.length) lines.push(`  writes ${decision.files.join(', ')}`);
  if (decision.reads.length > 0)
    lines.push(`  reads ${decision.reads.map(partitionsInWords).join('; ')}`);
  return lines;
}
