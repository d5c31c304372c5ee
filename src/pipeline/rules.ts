/**
 * The checks of a definition that do not depend on a step's kind, one rule
 * each: a rule looks at the loaded definition and returns its problems, each
 * at its place in the file. buildPipeline runs them all, so that every problem
 * is reported at once.
 */
import { problemAt, type LoadedDefinition } from '../config/load.js';
import type { Definition } from '../config/schema.js';
import { STEP_KINDS } from '../steps/registry.js';

export type Rule = (loaded: LoadedDefinition) => string[];

/** Step ids are unique. */
const uniqueStepIds: Rule = ({ definition, locate }) => {
  const seen = new Set<string>();
  return definition.steps.flatMap((step, i) => {
    const repeated = seen.has(step.id);
    seen.add(step.id);
    return repeated
      ? [problemAt(locate, ['steps', i, 'id'], `duplicate step id "${step.id}"`)]
      : [];
  });
};

/** A step needs only other steps of the pipeline (one left out as broken is reported as such). */
const needsNameSteps: Rule = ({ definition, locate, broken }) =>
  definition.steps.flatMap((step, i) =>
    step.needs.flatMap((need, j) => {
      const at = ['steps', i, 'needs', j];
      if (need === step.id) return [problemAt(locate, at, 'a step cannot need itself')];
      if (definition.steps.some((s) => s.id === need) || broken.steps.includes(need)) return [];
      return [problemAt(locate, at, `needs "${need}", which is not a step of this pipeline`)];
    }),
  );

/** Needs form no cycle. */
const needsFormNoCycle: Rule = ({ definition, locate }) => {
  const problems: string[] = [];
  visitInOrder(definition.steps, (cycle) => {
    const index = definition.steps.findIndex((s) => s.id === cycle[0]);
    problems.push(
      problemAt(locate, ['steps', index, 'needs'], `needs form a cycle: ${cycle.join(' -> ')}`),
    );
  });
  return problems;
};

/** A kind whose datasets hold one history (signs.live) has one step at most. */
const singleKindsOnce: Rule = ({ definition, locate }) => {
  const first = new Map<string, string>();
  return definition.steps.flatMap((step, i) => {
    if (!STEP_KINDS.get(step.kind)?.single) return [];
    const earlier = first.get(step.kind);
    if (earlier === undefined) {
      first.set(step.kind, step.id);
      return [];
    }
    return [
      problemAt(
        locate,
        ['steps', i, 'kind'],
        `a pipeline has one ${step.kind} step at most (${earlier} is one): its snapshots are one history`,
      ),
    ];
  });
};

export const RULES: readonly Rule[] = [
  uniqueStepIds,
  needsNameSteps,
  needsFormNoCycle,
  singleKindsOnce,
];

/** Step ids in the order they run: each after all it needs, otherwise as written. */
export function stepOrder(steps: Definition['steps']): string[] {
  return visitInOrder(steps, () => undefined);
}

function visitInOrder(steps: Definition['steps'], onCycle: (cycle: string[]) => void): string[] {
  const index = new Map(steps.map((s, i) => [s.id, i]));
  const state = new Map<string, 'visiting' | 'done'>();
  const ordered: string[] = [];
  const visit = (id: string, trail: string[]): void => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') {
      onCycle([...trail.slice(trail.indexOf(id)), id]);
      return;
    }
    state.set(id, 'visiting');
    for (const need of steps[index.get(id)!]!.needs)
      if (index.has(need)) visit(need, [...trail, id]);
    state.set(id, 'done');
    ordered.push(id);
  };
  for (const step of steps) visit(step.id, []);
  return ordered;
}
