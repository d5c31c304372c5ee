import { describe, expect, it } from 'vitest';
import { hasReference, substitute, type SubstitutionProblem } from '../../src/config/substitute.js';

const context = {
  params: { start: '2024-03-01T00:00:00Z', n: 7, ids: ['a', 'b'], off: false, none: null },
  env: { HOST: 'example.org', EMPTY: '' },
};

function sub(value: unknown): { value: unknown; problems: SubstitutionProblem[] } {
  const problems: SubstitutionProblem[] = [];
  return { value: substitute(value, context, [], problems), problems };
}

describe('substitute', () => {
  it.each([
    ['${params.n}', 7],
    ['${params.ids}', ['a', 'b']],
    ['${params.off}', false],
    ['${params.none}', null],
    ['${ params.n }', 7],
    ['from ${params.start} on', 'from 2024-03-01T00:00:00Z on'],
    ['${params.ids}/${params.n}', 'a,b/7'],
    ['https://${env.HOST}/api', 'https://example.org/api'],
    ['cost: $${params.n}', 'cost: ${params.n}'],
    ['$5 and ${params.n}', '$5 and 7'],
    ['no references', 'no references'],
  ])('turns %j into %j', (input, expected) => {
    const { value, problems } = sub(input);
    expect(problems).toEqual([]);
    expect(value).toEqual(expected);
  });

  it('walks objects and arrays, keeping paths for problems', () => {
    const { value, problems } = sub({
      a: ['${params.n}', { b: '${params.nope}' }],
      c: '${env.MISSING}',
      d: '${env.EMPTY}',
    });
    expect(value).toEqual({ a: [7, { b: undefined }], c: undefined, d: undefined });
    expect(problems).toEqual([
      { path: ['a', 1, 'b'], message: '${params.nope} names no param of this pipeline' },
      { path: ['c'], message: '${env.MISSING}: environment variable MISSING is not set' },
      { path: ['d'], message: '${env.EMPTY}: environment variable EMPTY is not set' },
    ]);
  });

  it('takes the default of ${env.NAME:-default} when the variable is not set or empty, and the variable when it is', () => {
    expect(sub('${env.MISSING:-https://data.ndw.nu}')).toEqual({
      value: 'https://data.ndw.nu',
      problems: [],
    });
    expect(sub('${env.EMPTY:-x}').value).toBe('x');
    expect(sub('${env.HOST:-x}').value).toBe('example.org');
    expect(sub('${env.MISSING:-}').value).toBe('');
    expect(sub('${params.n:-3}').problems[0]!.message).toMatch(/is not a reference/);
  });

  it('leaves variables that are not set out of the problems when asked for what a run will need', () => {
    const problems: SubstitutionProblem[] = [];
    const missing: string[] = [];
    substitute(
      { a: '${env.MISSING}', b: 'x ${env.OTHER} y', c: '${params.nope}' },
      context,
      [],
      problems,
      missing,
    );
    expect(missing).toEqual(['MISSING', 'OTHER']);
    expect(problems).toEqual([
      { path: ['c'], message: '${params.nope} names no param of this pipeline' },
    ]);
  });

  it('evaluates nothing: an expression is refused, not run', () => {
    const { problems } = sub('${process.exit(1)}');
    expect(problems[0]!.message).toMatch(/is not a reference/);
  });

  it('tells whether a value holds references', () => {
    expect(hasReference({ q: ['SELECT ${params.x}'] })).toBe(true);
    expect(hasReference('SELECT $x, $${literal}')).toBe(false);
  });
});
