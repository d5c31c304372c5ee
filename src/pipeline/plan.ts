/**
 * What a run would do: the steps selected (and the earlier outputs they reuse),
 * each described by its kind. validate and --dry-run print it; nothing is touched.
 */
import { InputError } from '../errors.js';
import { describeRunReport } from './run-report.js';
import type { Pipeline, PipelineStep } from './build.js';
import { StateStore } from './state.js';
import type { PlanContext } from '../steps/step-kind.js';

export interface Selection {
  /** Steps that run, in order. */
  selected: PipelineStep[];
  /** Needs of selected steps that do not run: their earlier output is read. */
  reused: { step: string; need: string }[];
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

/** What a run would do, step by step: for validate and --dry-run. Touches nothing. */
export async function describePlan(
  pipeline: Pipeline,
  output: string,
  select?: readonly string[],
): Promise<string[]> {
  const { selected, reused } = selectSteps(pipeline, select);
  const store = new StateStore(output);
  const lines = [`Pipeline ${pipeline.name} (${pipeline.file})`];
  const params = Object.entries(pipeline.params).map(
    ([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`,
  );
  if (params.length > 0) lines.push(`Params: ${params.join(' ')}`);
  lines.push(`Output: ${output}`);
  if (pipeline.simulator)
    lines.push(`Upstream: embedded simulator (seed ${pipeline.simulator.seed})`);
  const { signs, bicycle } = pipeline.upstream;
  if (signs?.url)
    lines.push(
      `Upstream: traffic signs at ${signs.url}${signs.v5Url && signs.v5Url !== signs.url ? ` (v5 current state at ${signs.v5Url})` : ''}`,
    );
  if (bicycle)
    lines.push(
      `Upstream: bicycle data at ${bicycle.url}, token from ${bicycle.authUrl} (client ${bicycle.clientId})`,
    );
  if (pipeline.missingEnv.length > 0)
    lines.push(
      `A run needs ${pipeline.missingEnv.join(', ')} in the environment (not set now; a run refuses without them).`,
    );
  lines.push('Steps, in order:');
  for (const [i, step] of selected.entries()) {
    const context: PlanContext = {
      stepId: step.id,
      output,
      sqlDir: pipeline.sqlDir,
      checkpoint: (await store.read(step.id).catch(() => undefined))?.checkpoint,
    };
    const needs = step.needs.length > 0 ? ` (after ${step.needs.join(', ')})` : '';
    lines.push(`  ${i + 1}. ${step.id} [${step.kind.kind}]${needs}`);
    for (const line of await step.kind.describe(step.options, context))
      lines.push(`       ${line}`);
  }
  for (const { step, need } of reused)
    lines.push(`Reuses the output of ${need} from an earlier run (needed by ${step}).`);
  if (pipeline.report) lines.push(describeRunReport(pipeline.report, output));
  return lines;
}
