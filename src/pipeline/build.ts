/**
 * From a definition file to a checked pipeline: params resolved, references
 * substituted, every step's options validated by its kind, needs checked for
 * unknown names and cycles, steps ordered. Every problem is reported at once
 * (exit 2), before anything is written.
 */
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import {
  formatPath,
  loadDefinition,
  problemAt,
  type LoadedDefinition,
  type Locate,
  type Path,
} from '../config/load.js';
import type { ParamValue } from '../config/params.js';
import {
  reportSchema,
  type Definition,
  type Publication,
  type ReportSpec,
  type SimulatorSource,
} from '../config/schema.js';
import { hasReference, substitute } from '../config/substitute.js';
import { InputError } from '../errors.js';
import { STEP_KINDS } from '../steps/registry.js';
import type { StepKind, Upstream } from '../steps/step-kind.js';
import { RULES, stepOrder } from './rules.js';
import { resolveUpstream } from './source-upstream.js';

export interface PipelineStep {
  id: string;
  kind: StepKind;
  options: unknown;
  needs: string[];
  description: string | undefined;
}

export interface Pipeline {
  file: string;
  name: string;
  description: string | undefined;
  params: Record<string, ParamValue>;
  /** Steps in the order they run: each after all it needs, otherwise as written. */
  steps: PipelineStep[];
  sqlDir: string;
  duckdb: Definition['duckdb'];
  /** The report written at the end of the run, if the definition asks for one. */
  report: ReportSpec | undefined;
  /** What exports/dataset.jsonld says of the extracts. */
  publication: Publication;
  /** Set when the run starts the simulator in-process. */
  simulator: SimulatorSource | undefined;
  /** Upstream endpoints and credentials (empty for an embedded simulator until it starts). */
  upstream: Upstream;
  /** For validate: environment variables the upstream needs that are not set (a run refuses without them). */
  missingEnv: string[];
}

export interface BuildOptions {
  params?: Record<string, string>;
  env?: Record<string, string | undefined>;
  /** Output folder: kinds check paths against it. */
  output: string;
  /**
   * validate: environment variables of the upstream that are not set are not
   * problems, only what a run will need (`Pipeline.missingEnv`).
   */
  purpose?: 'run' | 'validate';
}

/** The problems of a step's options (`given`, as parsed), each at its place in the definition. */
function issuesOf(error: z.ZodError, locate: Locate, base: Path, given: unknown): string[] {
  return error.issues.flatMap((issue) => {
    const inner = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    const path = [...base, ...inner];
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => problemAt(locate, [...path, key], 'unknown option'));
    const name = inner.at(-1);
    if (issue.code === 'invalid_type' && name !== undefined && valueAt(given, inner) === undefined)
      return [problemAt(locate, path, `missing required option \`${name}\``)];
    return [problemAt(locate, path, issue.message)];
  });
}

function valueAt(value: unknown, path: Path): unknown {
  return path.reduce<unknown>(
    (at, key) =>
      at !== null && typeof at === 'object'
        ? (at as Record<string | number, unknown>)[key]
        : undefined,
    value,
  );
}

/** Loads, checks and orders a pipeline; throws InputError listing every problem. */
export async function buildPipeline(file: string, options: BuildOptions): Promise<Pipeline> {
  const env = options.env ?? process.env;
  const { loaded, problems } = await loadDefinition(file, options.params ?? {});
  if (!loaded) throw new InputError(problems);
  const { definition, params, locate } = loaded;
  const sqlDir = resolve(dirname(file), definition.sql_dir);

  problems.push(...RULES.flatMap((rule) => rule(loaded)));

  const built = new Map<string, PipelineStep>();
  const needed = new Map<'bicycle' | 'signs', string>();
  for (const [i, step] of definition.steps.entries()) {
    const one = await buildStep(loaded, i, { env, output: options.output, sqlDir }, problems);
    if (!one) continue;
    const asks = one.kind.source && (one.kind.asksUpstream?.(one.options) ?? true);
    if (asks && !needed.has(one.kind.source!)) needed.set(one.kind.source!, step.id);
    built.set(step.id, one);
  }
  const ids = stepOrder(definition.steps);
  const missingEnv: string[] = [];
  const upstream = resolveUpstream(
    definition,
    needed,
    env,
    options.purpose === 'validate' ? missingEnv : undefined,
    params,
    locate,
    problems,
  );
  if (problems.length > 0) throw new InputError(problems);

  const simulator = definition.source.simulator;
  return {
    file,
    name: definition.name,
    description: definition.description,
    params,
    steps: ids.map((id) => built.get(id)!),
    sqlDir,
    duckdb: definition.duckdb,
    report:
      definition.report === false
        ? undefined
        : definition.report === true
          ? reportSchema.parse({})
          : definition.report,
    publication: definition.publication,
    simulator: simulator === 'embedded' ? { seed: 1, scale: 'default' } : simulator,
    upstream,
    missingEnv: [...new Set(missingEnv)],
  };
}

/** One step of the definition, its options substituted and checked; undefined (and problems) when it cannot be. */
async function buildStep(
  loaded: LoadedDefinition,
  i: number,
  scope: {
    env: Record<string, string | undefined>;
    output: string;
    sqlDir: string;
  },
  problems: string[],
): Promise<PipelineStep | undefined> {
  const { definition, params, locate, broken } = loaded;
  const step = definition.steps[i]!;
  const kind = STEP_KINDS.get(step.kind);
  if (!kind) {
    problems.push(
      problemAt(
        locate,
        ['steps', i, 'kind'],
        `unknown step kind "${step.kind}" (known: ${[...STEP_KINDS.keys()].join(', ')})`,
      ),
    );
    return undefined;
  }
  const base = ['steps', i, 'options'];
  for (const name of kind.sqlOptions ?? []) {
    if (hasReference(step.options[name])) {
      problems.push(
        problemAt(
          locate,
          [...base, name],
          'SQL text takes no ${...}: write $name in the SQL and give the value under params',
        ),
      );
    }
  }
  // Options fed by a param that has a problem would only repeat it: that param's problem is reported alone.
  if (
    [...Object.keys(definition.params), ...broken.params].some(
      (name) => !(name in params) && referencesParam(step.options, name),
    )
  )
    return undefined;
  const found: { path: (string | number)[]; message: string }[] = [];
  const substituted = substitute(step.options, { params, env: scope.env }, base, found);
  for (const p of found) problems.push(problemAt(locate, p.path, p.message));
  const given = dropUndefined(substituted);
  const parsed = kind.options.safeParse(given);
  if (!parsed.success) {
    problems.push(...issuesOf(parsed.error, locate, base, given));
    return undefined;
  }
  const context = { stepId: step.id, output: scope.output, sqlDir: scope.sqlDir };
  for (const [path, message] of (await kind.check?.(parsed.data, context)) ?? []) {
    problems.push(problemAt(locate, [...base, ...path], message));
  }
  return {
    id: step.id,
    kind,
    options: parsed.data,
    needs: step.needs,
    description: step.description,
  };
}

function referencesParam(value: unknown, name: string): boolean {
  return new RegExp(`\\$\\{\\s*params\\.${name}\\s*\\}`).test(JSON.stringify(value));
}

/** An option whose substituted value is null (an unset optional param) is left out, as if not written. */
function dropUndefined(value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
}

export { formatPath };
