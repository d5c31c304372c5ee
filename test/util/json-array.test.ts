import { describe, expect, it } from 'vitest';
import { arrayElementRanges, hasLineBreak } from '../../src/util/json-array.js';

/** The elements cut out by the ranges, as text. */
function cut(text: string): string[] {
  const bytes = Buffer.from(text);
  const ranges = arrayElementRanges(bytes);
  const out: string[] = [];
  for (let i = 0; i < ranges.length; i += 2)
    out.push(bytes.subarray(ranges[i], ranges[i + 1]).toString());
  return out;
}

describe('arrayElementRanges', () => {
  const cases: [string, string[]][] = [
    ['[]', []],
    [' [ ] ', []],
    ['[1]', ['1']],
    ['[1,-2.5e3,true,null,"x"]', ['1', '-2.5e3', 'true', 'null', '"x"']],
    [
      '[{"a":[1,{"b":"]}"}],"c":"x,y"},{"d":"quote \\" and \\\\"}]',
      ['{"a":[1,{"b":"]}"}],"c":"x,y"}', '{"d":"quote \\" and \\\\"}'],
    ],
    ['[\n  { "a" : 1 } ,\r\n\t[ 2 , 3 ]\n]\n', ['{ "a" : 1 }', '[ 2 , 3 ]']],
    ['["\\\\", "a\\\\\\"b"]', ['"\\\\"', '"a\\\\\\"b"']],
    [
      '[{"name":"Ĳssel – straße 😀","n":12345678901234567890}]',
      ['{"name":"Ĳssel – straße 😀","n":12345678901234567890}'],
    ],
  ];
  it.each(cases)('cuts %j into its elements as received', (text, expected) => {
    const elements = cut(text);
    expect(elements).toEqual(expected);
    // each piece parses to the element JSON.parse finds at that place
    expect(elements.map((e) => JSON.parse(e) as unknown)).toEqual(JSON.parse(text));
  });

  it('refuses what is not an array, or an array not closed', () => {
    expect(() => arrayElementRanges(Buffer.from('{"a":1}'))).toThrow(/not a JSON array/);
    expect(() => arrayElementRanges(Buffer.from('[{"a":"]"}'))).toThrow(/not closed/);
  });

  it('finds line breaks only where they are', () => {
    const bytes = Buffer.from('[{"a":1},\n{"b":\r2}]');
    const ranges = arrayElementRanges(bytes);
    expect(hasLineBreak(bytes, ranges[0]!, ranges[1]!)).toBe(false);
    expect(hasLineBreak(bytes, ranges[2]!, ranges[3]!)).toBe(true);
  });
});
