import { describe, expect, it } from 'vitest';
import { buildPipeline } from '../../src/pipeline/build.js';
import { InputError } from '../../src/errors.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { testDir, writeFiles } from '../helpers/tmp.js';

const GOOD_SQL = 'CREATE TABLE t AS SELECT 1 AS x;\n';

async function problemsOf(
  yaml: string,
  params: Record<string, string> = {},
  env: Record<string, string> = {},
): Promise<string[]> {
  const dir = await testDir();
  await writeFiles(dir, { 'pipelines/p.yaml': yaml, 'sql/ok.sql': GOOD_SQL });
  try {
    await buildPipeline(join(dir, 'pipelines/p.yaml'), {
      params,
      env,
      output: join(dir, 'output'),
    });
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as InputError).problems.map((p) =>
      p.replace(join(dir, 'pipelines/p.yaml'), 'p.yaml'),
    );
  }
  return [];
}

const step = (extra = '') =>
  `steps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql, outputs: [t] }\n${extra}`;

describe('pipeline definitions', () => {
  it('accepts a good definition', async () => {
    expect(await problemsOf(`name: p\n${step()}`)).toEqual([]);
  });

  it.each([
    ['malformed YAML', 'name: p\nsteps: [\n', /^p\.yaml:\d+: invalid YAML/],
    ['a list instead of a mapping', '- a\n- b\n', /^p\.yaml:1: .*expected object/i],
    ['a missing name', step(), /^p\.yaml:1: name: .*expected string/i],
    [
      'an unknown top-level key',
      `name: p\nstepz: []\n${step()}`,
      /^p\.yaml:2: stepz: unknown key$/,
    ],
    [
      'an unknown key in a step',
      `name: p\n${step('    option: 1\n')}`,
      /^p\.yaml:6: steps\[0\]\.option: unknown key$/,
    ],
    [
      'an unknown step kind',
      `name: p\nsteps:\n  - id: s\n    kind: sqll\n`,
      /^p\.yaml:4: steps\[0\]\.kind: unknown step kind "sqll" \(known: .*\bsql\b.*\bexport\b/,
    ],
    [
      'an upper-case step id',
      `name: p\nsteps:\n  - id: Step1\n    kind: sql\n    options: { file: ok.sql, outputs: [t] }\n`,
      /^p\.yaml:3: steps\[0\]\.id: must be lower snake_case/,
    ],
    ['no steps', 'name: p\nsteps: []\n', /steps: a pipeline needs at least one step/],
    [
      'a simulator clock that is no timestamp',
      `name: p\nsource:\n  simulator: { now: 'yesterday' }\n${step()}`,
      /^p\.yaml:3: source\.simulator\.now: must be a UTC ISO timestamp/,
    ],
    [
      'a report tile URL that is no template',
      `name: p\nreport: { tiles: 'https://tiles.example/map.png' }\n${step()}`,
      /^p\.yaml:2: report\.tiles: the URL template names no \{z\}, \{x\}, \{y\}$/,
    ],
    [
      'a report setting it does not know',
      `name: p\nreport: { map: 5 }\n${step()}`,
      /^p\.yaml:2: report.*map/,
    ],
    [
      'a required param that is missing',
      `name: p\nparams:\n  start: { type: timestamp, required: true }\n${step()}`,
      /^p\.yaml:3: params\.start: required param is missing: give it with --param start=\.\.\.$/,
    ],
    [
      'a default of the wrong type',
      `name: p\nparams:\n  n: { type: integer, default: "many" }\n${step()}`,
      /^p\.yaml:3: params\.n\.default: must be a whole number/,
    ],
    [
      'an unknown param type',
      `name: p\nparams:\n  n: { type: float }\n${step()}`,
      /^p\.yaml:3: params\.n\.type: /,
    ],
    [
      'a reference to an unknown param',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: "\${params.nope}", outputs: [t] }\n`,
      /^p\.yaml:5: steps\[0\]\.options\.file: \$\{params\.nope\} names no param of this pipeline$/,
    ],
    [
      'an unset environment variable',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: "\${env.ROAD_ETL_NOT_SET}", outputs: [t] }\n`,
      /environment variable ROAD_ETL_NOT_SET is not set/,
    ],
    [
      'a reference that is not one',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: "\${params}", outputs: [t] }\n`,
      /is not a reference: use \$\{params\.NAME\} or \$\{env\.NAME\}/,
    ],
    [
      'a cycle in needs',
      `name: p\nsteps:\n  - { id: a, kind: sql, needs: [b], options: { file: ok.sql, outputs: [t] } }\n  - { id: b, kind: sql, needs: [a], options: { file: ok.sql, outputs: [u] } }\n`,
      /needs form a cycle: a -> b -> a/,
    ],
    [
      'a step that needs itself',
      `name: p\nsteps:\n  - { id: a, kind: sql, needs: [a], options: { file: ok.sql, outputs: [t] } }\n`,
      /steps\[0\]\.needs\[0\]: a step cannot need itself/,
    ],
    [
      'a need that is no step',
      `name: p\nsteps:\n  - { id: a, kind: sql, needs: [ghost], options: { file: ok.sql, outputs: [t] } }\n`,
      /^p\.yaml:3: steps\[0\]\.needs\[0\]: needs "ghost", which is not a step/,
    ],
    [
      'two steps with one id',
      `name: p\nsteps:\n  - { id: a, kind: sql, options: { file: ok.sql, outputs: [t] } }\n  - { id: a, kind: sql, options: { file: ok.sql, outputs: [u] } }\n`,
      /^p\.yaml:4: steps\[1\]\.id: duplicate step id "a"/,
    ],
    [
      'an unknown option of a kind',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { fil: ok.sql, file: ok.sql, outputs: [t] }\n`,
      /steps\[0\]\.options\.fil: unknown option/,
    ],
    [
      'a SQL file that does not exist',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: missing.sql, outputs: [t] }\n`,
      /^p\.yaml:5: steps\[0\]\.options\.file: .*missing\.sql does not exist/,
    ],
    [
      'a SQL file outside the sql folder',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ../pipelines/evil.sql, outputs: [t] }\n`,
      /steps\[0\]\.options\.file: must be a file inside/,
    ],
    [
      'a sql step without outputs',
      `name: p\nsteps:\n  - id: s\n    kind: sql\n    options: { file: ok.sql }\n`,
      /steps\[0\]\.options\.outputs: /,
    ],
    [
      'an export path that leaves the output folder',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: ../../etc/x.csv }\n`,
      /steps\[0\]\.options\.path: must be a relative path inside the output folder/,
    ],
    [
      'an absolute export path',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: /tmp/x.csv }\n`,
      /steps\[0\]\.options\.path: must be a relative path inside the output folder/,
    ],
    [
      'an export into .state',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: .state/x.csv }\n`,
      /must not write into a hidden folder/,
    ],
    [
      'an export whose extension does not match',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: exports/x.csv, format: geojson }\n`,
      /a geojson export must end in \.geojson or \.json/,
    ],
    [
      'an export of an unknown format',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, path: exports/x.xlsx }\n`,
      /cannot tell the format from "\.xlsx"/,
    ],
    [
      'an export with both table and query',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: t, query: "SELECT 1", path: exports/x.csv }\n`,
      /give exactly one of table and query/,
    ],
    [
      'an export table name that is not an identifier',
      `name: p\nsteps:\n  - id: e\n    kind: export\n    options: { table: "t; DROP TABLE x", path: exports/x.csv }\n`,
      /steps\[0\]\.options\.table: must be a table or dataset name/,
    ],
    [
      'two signs.live steps (their snapshots are one history)',
      `name: p\nsteps:\n  - { id: a, kind: signs.live }\n  - { id: b, kind: signs.live, options: { api: v4 } }\n`,
      /steps\[1\]\.kind: a pipeline has one signs\.live step at most \(a is one\)/,
    ],
    [
      'a param substituted into SQL text',
      `name: p\nparams:\n  x: { type: string, default: a }\nsteps:\n  - id: e\n    kind: export\n    options: { query: "SELECT '\${params.x}'", path: exports/x.csv }\n`,
      /SQL text takes no \$\{\.\.\.\}/,
    ],
  ])('refuses %s', async (_case, yaml, message) => {
    const problems = await problemsOf(yaml);
    expect(
      problems.some((p) => message.test(p)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('reports every problem at once, also when the name or a step does not fit the schema', async () => {
    const problems = await problemsOf(
      `name: Bad-Name
params:
  n: { type: float }
steps:
  - { id: a, kind: unknown-kind }
  - { id: b, kind: sql, needs: [c], options: { fil: ok.sql, outputs: [t] } }
  - { id: c, kind: sql, extra: 1 }
  - { id: d, kind: export, options: { table: "\${params.n}", path: x.txt } }
`,
      { n: '1' },
    );
    expect(problems).toEqual([
      'p.yaml:1: name: must be lower snake_case (a-z, 0-9, _), starting with a letter',
      expect.stringMatching(/^p\.yaml:3: params\.n\.type: /),
      'p.yaml:7: steps[2].extra: unknown key',
      expect.stringMatching(/^p\.yaml:5: steps\[0\]\.kind: unknown step kind "unknown-kind"/),
      'p.yaml:6: steps[1].options.file: missing required option `file`',
      'p.yaml:6: steps[1].options.fil: unknown option',
    ]);
  });

  it.each([
    ['sql', 'file', '{ outputs: [t] }'],
    ['export', 'path', '{ table: t }'],
  ])('names a missing required option of a %s step: %s', async (kind, option, options) => {
    const problems = await problemsOf(
      `name: p\nsteps:\n  - { id: s, kind: ${kind}, options: ${options} }\n`,
    );
    expect(problems).toContain(
      `p.yaml:3: steps[0].options.${option}: missing required option \`${option}\``,
    );
  });

  it.each([
    [
      'a timestamp in local time',
      { start: '2024-03-01T00:00:00' },
      /--param start: must be in UTC with a Z/,
    ],
    [
      'a timestamp with an offset',
      { start: '2024-03-01T00:00:00+01:00' },
      /--param start: must be in UTC with a Z/,
    ],
    [
      'a date instead of a timestamp',
      { start: '2024-03-01' },
      /--param start: must be a UTC timestamp YYYY-MM-DDTHH:mm:ssZ/,
    ],
    [
      'an impossible timestamp',
      { start: '2024-02-30T00:00:00Z' },
      /--param start: must be a UTC timestamp/,
    ],
    [
      'a param the pipeline does not have',
      { start: '2024-03-01T00:00:00Z', stat: 'x' },
      /--param stat: the pipeline has no such param \(it has: start, n, flag\)/,
    ],
    [
      'a non-integer',
      { start: '2024-03-01T00:00:00Z', n: '1.5' },
      /--param n: must be a whole number/,
    ],
    [
      'a non-boolean',
      { start: '2024-03-01T00:00:00Z', flag: 'yes' },
      /--param flag: must be true or false/,
    ],
  ])('refuses %s given as --param', async (_case, params, message) => {
    const yaml = `name: p\nparams:\n  start: { type: timestamp, required: true }\n  n: { type: integer, default: 1 }\n  flag: { type: boolean, default: false }\n${step()}`;
    const problems = await problemsOf(yaml, params);
    expect(
      problems.some((p) => message.test(p)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('reports every problem at once', async () => {
    const yaml = `name: p\nbogus: 1\nparams:\n  start: { type: timestamp, required: true }\nsteps:\n  - { id: a, kind: nope }\n  - { id: b, kind: sql, needs: [ghost], options: { file: missing.sql, outputs: [t] } }\n`;
    const problems = await problemsOf(yaml);
    // the unknown key does not hide the rest
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(/p\.yaml:2: bogus: unknown key/);
    const fixed = yaml.replace('bogus: 1\n', '');
    const all = await problemsOf(fixed);
    expect(all).toHaveLength(4);
    for (const expected of [
      /params\.start: required param is missing/,
      /steps\[0\]\.kind: unknown step kind "nope"/,
      /steps\[1\]\.options\.file: .*does not exist/,
      /steps\[1\]\.needs\[0\]: needs "ghost"/,
    ]) {
      expect(
        all.some((p) => expected.test(p)),
        `${String(expected)} in\n${all.join('\n')}`,
      ).toBe(true);
    }
  });

  it('reports a bad --param once, not again in every option it feeds', async () => {
    const yaml = `name: p\nparams:\n  start: { type: timestamp, required: true }\nsteps:\n  - { id: a, kind: sql, options: { file: ok.sql, outputs: [t], params: { s: '\${params.start}' } } }\n  - { id: b, kind: sql, options: { file: missing.sql, outputs: [t] } }\n`;
    const problems = await problemsOf(yaml, { start: '2026-01-01T00:00:00' });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/--param start: must be in UTC with a Z/);
    expect(problems[1]).toMatch(/steps\[1\]\.options\.file: .*does not exist/);
  });

  it('exits 2 from the CLI, names file and line, and writes nothing', async () => {
    const dir = await testDir();
    await writeFiles(dir, {
      'pipelines/p.yaml': `name: p\nsteps:\n  - id: s\n    kind: sqll\n`,
      'sql/ok.sql': GOOD_SQL,
    });
    const output = join(dir, 'out');
    for (const command of ['run', 'validate']) {
      const result = await runCli([command, join(dir, 'pipelines/p.yaml'), '--output', output]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `${join(dir, 'pipelines/p.yaml')}:4: steps[0].kind: unknown step kind "sqll"`,
      );
      expect(existsSync(output)).toBe(false);
    }
  });

  it('exits 2 for a definition file that does not exist', async () => {
    const result = await runCli(['validate', '/nonexistent/p.yaml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('/nonexistent/p.yaml: cannot read the definition: ENOENT');
  });
});
