/**
 * A night's plan against what the night did: the plan `road-etl plan
 * --format json` printed before it, and the manifest's record of each step
 * after it (its `plan`: the decision it carried out).
 */
import type { Plan } from '../../src/pipeline/plan.js';
import type { PartitionSet, StepDecision } from '../../src/steps/step-kind.js';
import type { StepReport } from '../../src/manifest.js';

/** The partitions of `sets`, as "dataset value" (or "dataset *" for all). */
export function partitions(sets: readonly PartitionSet[] | undefined): Set<string> {
  const named = new Set<string>();
  for (const { dataset, partitions: values } of sets ?? [])
    for (const value of values === 'all' ? ['*'] : values) named.add(`${dataset} ${value}`);
  return named;
}

/** Those of `done` that `bound` does not hold (a dataset's "*" holds all of it). */
export function beyond(done: Set<string>, bound: Set<string>): string[] {
  return [...done].filter((p) => !bound.has(p) && !bound.has(`${p.slice(0, p.indexOf(' '))} *`));
}

/** How a step's record of what it did parts from its plan: empty when within it. */
export function parting(planned: StepDecision, done: StepDecision): string[] {
  const exact =
    !planned.may_build?.length && !planned.may_files?.length && !planned.may_read?.length;
  // (its `why` may count more partitions changed upstream where late data landed in them)
  const did = ({ decision, builds, reads, files }: StepDecision) =>
    JSON.stringify({ decision, builds, reads, files });
  if (exact)
    return did(done) === did(planned) ? [] : [`not as planned: ${did(planned)} / ${did(done)}`];
  return [
    ...beyond(partitions(done.builds), partitions([...planned.builds, ...(planned.may_build ?? [])])),
    ...beyond(partitions(done.reads), partitions([...planned.reads, ...(planned.may_read ?? [])])),
    ...(done.files ?? []).filter(
      (f) => !planned.files?.includes(f) && !planned.may_files?.includes(f),
    ),
  ];
} // prettier-ignore

/** The dates (YYYY-MM-DD) and months a decision names. */
export function datesNamed(decision: StepDecision): string[] {
  const sets = [...decision.builds, ...(decision.may_build ?? []), ...decision.reads];
  const values = sets.flatMap((s) => (s.partitions === 'all' ? [] : s.partitions));
  const files = [...(decision.files ?? []), ...(decision.may_files ?? [])];
  return [
    ...values.filter((v) => /^\d{4}-\d\d-\d\d$/.test(v)),
    ...files.flatMap((f) => /\/(\d{4}-\d\d)\.csv$/.exec(f)?.[1] ?? []).map((m) => `${m}-01`),
  ];
}

/** Each step of `plan` whose record in `steps` parts from it, in words (empty: the night was its plan). */
export function partings(plan: Plan, steps: readonly StepReport[], night: string): string[] {
  const found: string[] = [];
  for (const step of plan.steps) {
    const done = steps.find((s) => s.id === step.id)?.plan as StepDecision | undefined;
    if (!done) {
      found.push(`${night} ${step.id}: planned, no record of what it did`);
      continue;
    }
    for (const p of parting(step.decision!, done)) found.push(`${night} ${step.id}: ${p}`);
  }
  return found;
}
