/**
 * Reads a definition: YAML with line numbers, checked against the schema, params
 * resolved from defaults and --param values. Every problem is collected as
 * `file:line: path: message`; the caller throws them all at once.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, isMap, isNode, isPair, isScalar, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { checkParamValue, parseParamText, type ParamValue } from './params.js';
import {
  definitionSchema,
  identifierPattern,
  paramSpecSchema,
  stepSchema,
  type Definition,
} from './schema.js';

/** The most a definition may be: the shipped ones are under 20 KB. */
const MAX_DEFINITION_CHARS = 1_000_000;
/** The most alias nodes a definition may expand (yaml's own guard against alias bombs). */
const MAX_ALIAS_COUNT = 100;

export type Path = readonly (string | number)[];

/** Where a path of the definition is, as `file:line` (the nearest existing parent if it is missing). */
export type Locate = (path: Path) => string;

export interface LoadedDefinition {
  file: string;
  definition: Definition;
  params: Record<string, ParamValue>;
  locate: Locate;
  /** What was left out of `definition` because it does not fit the schema. */
  broken: Broken;
}

export function formatPath(path: Path): string {
  return path.reduce<string>(
    (out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${key}` : key),
    '',
  );
}

export function problemAt(locate: Locate, path: Path, message: string): string {
  const where = formatPath(path);
  return `${locate(path)}: ${where ? `${where}: ` : ''}${message}`;
}

function locator(file: string, doc: Document, lines: LineCounter): Locate {
  return (path) => {
    for (let depth = path.length; depth >= 0; depth--) {
      const parentPath = path.slice(0, depth);
      const node = parentPath.length === 0 ? doc.contents : doc.getIn(parentPath, true);
      if (isNode(node) && node.range) {
        return `${file}:${lines.linePos(node.range[0]).line}`;
      }
      // A key whose value is null has no node: point at the key itself.
      if (depth > 0) {
        const parent = depth === 1 ? doc.contents : doc.getIn(path.slice(0, depth - 1), true);
        if (isMap(parent)) {
          const pair = parent.items.find(
            (p) => isPair(p) && isScalar(p.key) && p.key.value === path[depth - 1],
          );
          if (pair && isScalar(pair.key) && pair.key.range)
            return `${file}:${lines.linePos(pair.key.range[0]).line}`;
        }
      }
    }
    return file;
  };
}

function zodProblems(error: z.ZodError, locate: Locate): string[] {
  const problems: string[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push(problemAt(locate, [...path, key], 'unknown key'));
    } else {
      problems.push(problemAt(locate, path, issue.message));
    }
  }
  return problems;
}

/**
 * The definition's YAML as JavaScript values, with the locator of its paths;
 * or the problems that keep it from being read (unreadable, too large, not
 * YAML, aliases past sane bounds).
 */
async function readYaml(
  file: string,
): Promise<{ raw: unknown; locate: Locate } | { problems: string[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return {
      problems: [
        `${file}: cannot read the definition: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      ],
    };
  }
  if (text.length > MAX_DEFINITION_CHARS)
    return {
      problems: [
        `${file}: a definition of ${text.length} characters is past what road-etl reads (${MAX_DEFINITION_CHARS}); is this the pipeline's YAML?`,
      ],
    };
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map(
        (e) => `${file}:${lines.linePos(e.pos[0]).line}: invalid YAML: ${e.message.split('\n')[0]}`,
      ),
    };
  }
  const locate = locator(file, doc, lines);
  let raw: unknown;
  try {
    // An alias that expands past sane bounds (a "billion laughs") is refused by yaml itself.
    raw = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    return {
      problems: [
        `${file}: invalid YAML: its aliases expand beyond what a definition needs (${(error as Error).message}); write the repeated parts out, or use fewer aliases of aliases`,
      ],
    };
  }
  return { raw, locate };
}

/**
 * Loads and checks a definition. Returns the problems instead of throwing, so
 * that the caller can add its own (kinds, options, needs) and report all at once.
 */
export async function loadDefinition(
  file: string,
  givenParams: Record<string, string>,
): Promise<{ loaded: LoadedDefinition | undefined; problems: string[] }> {
  const read = await readYaml(file);
  if ('problems' in read) return { loaded: undefined, problems: read.problems };
  const { raw, locate } = read;
  const parsed = definitionSchema.safeParse(raw);
  const problems: string[] = [];
  let definition: Definition;
  let broken: Broken = { steps: [], params: [] };
  if (parsed.success) definition = parsed.data;
  else {
    // The parts that are fine are still checked, so that every problem is reported at once.
    problems.push(...zodProblems(parsed.error, locate));
    const salvaged = salvage(raw);
    if (!salvaged) return { loaded: undefined, problems };
    ({ definition, broken } = salvaged);
  }

  const params: Record<string, ParamValue> = {};
  for (const [name, spec] of Object.entries(definition.params)) {
    if (name in givenParams) {
      const result = allowed(spec.values, parseParamText(spec.type, givenParams[name]!));
      if ('error' in result) problems.push(`--param ${name}: ${result.error}`);
      else params[name] = result.value;
      continue;
    }
    if (spec.default !== undefined) {
      const result = allowed(spec.values, checkParamValue(spec.type, spec.default));
      if ('error' in result)
        problems.push(problemAt(locate, ['params', name, 'default'], result.error));
      else params[name] = result.value;
    } else if (spec.required) {
      problems.push(
        `${locate(['params', name])}: params.${name}: required param is missing: give it with --param ${name}=...`,
      );
    } else {
      params[name] = null;
    }
  }
  for (const name of Object.keys(givenParams)) {
    if (!(name in definition.params) && !broken.params.includes(name)) {
      const known = Object.keys(definition.params);
      problems.push(
        `--param ${name}: the pipeline has no such param${known.length ? ` (it has: ${known.join(', ')})` : ''}`,
      );
    }
  }
  return { loaded: { file, definition, params, locate, broken }, problems };
}

/** Parts of a definition left out because they do not fit the schema (their problems are reported). */
export interface Broken {
  /** Ids of the steps left out, so that a step needing one is not also reported. */
  steps: string[];
  /** Names of the params left out, so that options using one are not also reported. */
  params: string[];
}

/**
 * The parts of a definition that fit the schema, for the checks that follow
 * (kinds, options, needs): each top-level field that does not fit is replaced
 * by its default, and each step and param that does not fit is left out.
 * Undefined when the file is no mapping at all.
 */
function salvage(raw: unknown): { definition: Definition; broken: Broken } | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const fields = raw as Record<string, unknown>;
  const shape = definitionSchema.shape;
  const kept: Record<string, unknown> = {};
  for (const key of Object.keys(shape) as (keyof typeof shape)[]) {
    if (key === 'steps' || key === 'params' || !(key in fields)) continue;
    if (shape[key].safeParse(fields[key]).success) kept[key] = fields[key];
  }
  if (typeof kept['name'] !== 'string') kept['name'] = 'unnamed';
  const broken: Broken = { steps: [], params: [] };
  const params: Record<string, unknown> = {};
  if (fields['params'] && typeof fields['params'] === 'object') {
    for (const [name, spec] of Object.entries(fields['params'] as Record<string, unknown>)) {
      if (identifierPattern.test(name) && paramSpecSchema.safeParse(spec).success)
        params[name] = spec;
      else broken.params.push(name);
    }
  }
  kept['params'] = params;
  const steps: unknown[] = [];
  for (const step of Array.isArray(fields['steps']) ? (fields['steps'] as unknown[]) : []) {
    if (stepSchema.safeParse(step).success) steps.push(step);
    else if (step && typeof step === 'object' && typeof (step as { id?: unknown }).id === 'string')
      broken.steps.push((step as { id: string }).id);
  }
  kept['steps'] = steps;
  const again = definitionSchema.safeParse(kept);
  if (again.success) return { definition: again.data, broken };
  // No step fits: the remaining checks have nothing to look at.
  return undefined;
}

/** A param value checked against the values its spec allows, if it names any. */
function allowed(
  values: readonly string[] | undefined,
  result: { value: ParamValue } | { error: string },
): { value: ParamValue } | { error: string } {
  if (!values || 'error' in result || result.value === null) return result;
  const given = Array.isArray(result.value) ? result.value : [result.value];
  const wrong = given.find((v) => !values.includes(String(v)));
  return wrong === undefined
    ? result
    : { error: `must be one of ${values.join(', ')}, got "${String(wrong)}"` };
}
