/**
 * The upstream a definition's `source` names, its values substituted (params,
 * environment): its endpoints checked, its password registered as a secret;
 * for validate, the environment variables a run will need that are not set.
 */
import { problemAt, type Locate } from '../config/load.js';
import type { ParamValue } from '../config/params.js';
import type { Definition } from '../config/schema.js';
import { substitute, type SubstitutionProblem } from '../config/substitute.js';
import { redactor } from '../log.js';
import type { Upstream } from '../steps/step-kind.js';

export function resolveUpstream(
  definition: Definition,
  needed: Map<'bicycle' | 'signs', string>,
  env: Record<string, string | undefined>,
  missingEnv: string[] | undefined,
  params: Record<string, ParamValue>,
  locate: Locate,
  problems: string[],
): Upstream {
  const upstream: Upstream = { bicycle: undefined, signs: undefined };
  const simulator = definition.source.simulator;
  for (const [group, step] of needed) {
    if (simulator !== undefined) continue;
    const spec = definition.source[group];
    if (!spec) {
      problems.push(
        problemAt(
          locate,
          ['source'],
          `source.${group} is missing: step ${step} reads the ${group} API`,
        ),
      );
      continue;
    }
    const found: SubstitutionProblem[] = [];
    const unset: string[] = [];
    const values = substitute(
      spec,
      { params, env },
      ['source', group],
      found,
      missingEnv ? unset : undefined,
    ) as Record<string, string | undefined>;
    for (const p of found) problems.push(problemAt(locate, p.path, p.message));
    if (found.length > 0) continue;
    if (unset.length > 0) {
      // validate: what is not set is what a run will need
      missingEnv?.push(...unset);
      Object.assign(upstream, upstreamOf(group, values, env));
      continue;
    }
    for (const key of ['url', 'auth_url', 'v5_url'] as const) {
      const value = values[key];
      if (value !== undefined && !/^https?:\/\/[^\s]+$/.test(value)) {
        problems.push(
          problemAt(locate, ['source', group, key], `must be an http(s) URL, got "${value}"`),
        );
      }
    }
    Object.assign(upstream, upstreamOf(group, values, env));
    if (upstream.bicycle) redactor.add(upstream.bicycle.password, upstream.bicycle.username);
  }
  return upstream;
}

/** One upstream from its substituted source values (a value not set is empty: validate only). */
function upstreamOf(
  group: 'bicycle' | 'signs',
  values: Record<string, string | undefined>,
  env: Record<string, string | undefined>,
): Partial<Upstream> {
  if (group === 'signs')
    return { signs: { url: values['url'] ?? '', v5Url: values['v5_url'] ?? values['url'] ?? '' } };
  return {
    bicycle: {
      url: values['url'] ?? '',
      authUrl: values['auth_url'] ?? '',
      username: values['username'] ?? '',
      password: values['password'] ?? '',
      clientId: values['client_id'] ?? (env['ROAD_ETL_CLIENT_ID'] || 'dexter'),
    },
  };
}
