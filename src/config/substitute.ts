/**
 * ${params.name} and ${env.NAME} in definition values; ${env.NAME:-default}
 * takes the default when the variable is not set or empty. A value that is
 * exactly one reference takes the referenced value with its type (a list stays
 * a list); inside longer text the reference is written as text. $${ stands for
 * a literal ${. Nothing else is evaluated.
 */
import type { ParamValue } from './params.js';

const REFERENCE = /\$\$\{|\$\{([^}]*)\}/g;
const WHOLE = /^\$\{([^}]*)\}$/;

export interface SubstitutionContext {
  params: Record<string, ParamValue>;
  env: Record<string, string | undefined>;
}

export interface SubstitutionProblem {
  path: (string | number)[];
  message: string;
}

function resolve(
  reference: string,
  context: SubstitutionContext,
): { value: ParamValue } | { error: string; env?: string } {
  const match = /^(params|env)\.([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(reference.trim());
  if (!match || (match[1] === 'params' && match[3] !== undefined))
    return {
      error: `\${${reference}} is not a reference: use \${params.NAME} or \${env.NAME} (with a default: \${env.NAME:-default})`,
    };
  const [, scope, name, fallback] = match as unknown as [
    string,
    'params' | 'env',
    string,
    string | undefined,
  ];
  if (scope === 'params') {
    if (!(name in context.params))
      return { error: `\${params.${name}} names no param of this pipeline` };
    return { value: context.params[name] ?? null };
  }
  const value = context.env[name];
  if (value === undefined || value === '') {
    if (fallback !== undefined) return { value: fallback };
    return { error: `\${env.${name}}: environment variable ${name} is not set`, env: name };
  }
  return { value };
}

function text(value: ParamValue): string {
  if (value === null) return '';
  return Array.isArray(value) ? value.join(',') : String(value);
}

/**
 * Substitutes references in a JSON-like value; collects every problem with its
 * path. With `missing`, an environment variable that is not set is no problem:
 * its name goes there (validate says what a run will need).
 */
export function substitute(
  value: unknown,
  context: SubstitutionContext,
  path: (string | number)[] = [],
  problems: SubstitutionProblem[] = [],
  missing?: string[],
): unknown {
  const report = (resolved: { error: string; env?: string }): void => {
    if (missing && resolved.env !== undefined) missing.push(resolved.env);
    else problems.push({ path, message: resolved.error });
  };
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) {
      const resolved = resolve(whole[1]!, context);
      if ('error' in resolved) report(resolved);
      return 'value' in resolved ? resolved.value : undefined;
    }
    return value.replace(REFERENCE, (all, reference: string | undefined) => {
      if (reference === undefined) return '${';
      const resolved = resolve(reference, context);
      if ('error' in resolved) {
        report(resolved);
        return all;
      }
      return text(resolved.value);
    });
  }
  if (Array.isArray(value))
    return value.map((item, i) => substitute(item, context, [...path, i], problems, missing));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        substitute(v, context, [...path, k], problems, missing),
      ]),
    );
  }
  return value;
}

/** True when a value holds any ${...} reference (used to refuse them in SQL text). */
export function hasReference(value: unknown): boolean {
  if (typeof value === 'string') return /(?<!\$)\$\{/.test(value);
  if (Array.isArray(value)) return value.some(hasReference);
  if (value && typeof value === 'object') return Object.values(value).some(hasReference);
  return false;
}
