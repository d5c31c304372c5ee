import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { arrayMemberToLines } from '../../src/util/json-lines.js';

const dir = await mkdtemp(join(tmpdir(), 'road-etl-json-lines-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function lines(
  text: string,
): Promise<{ values: unknown[]; elements: number; found: boolean }> {
  const source = join(dir, 'in.json');
  const target = join(dir, 'out.jsonl');
  await writeFile(source, text);
  const result = await arrayMemberToLines(source, target, 'features');
  const out = await readFile(target, 'utf8');
  const rows = out === '' ? [] : out.replace(/\n$/, '').split('\n');
  return { values: rows.map((row) => JSON.parse(row) as unknown), ...result };
}

const tricky = [
  { type: 'Feature', id: 'a', properties: { text: 'braces { [ and ] } "quoted" \\ back', n: 1 } },
  { type: 'Feature', id: 'b', properties: { list: [1, [2, { x: '}' }]], empty: {} } },
  { type: 'Feature', id: 'c', geometry: null, properties: { features: [{ not: 'these' }] } },
];

describe('the elements of a JSON object’s array member, as lines', () => {
  it('finds the member among others, whatever comes before and after it', async () => {
    const text = JSON.stringify({
      type: 'FeatureCollection',
      bbox: [1, 2, 3, 4],
      crs: { type: 'name', properties: { name: 'x', features: [9] } },
      features: tricky,
      count: 3,
    });
    expect(await lines(text)).toEqual({ values: tricky, elements: 3, found: true });
  });

  it('takes pretty-printed JSON: each element on one line, line breaks made spaces', async () => {
    const result = await lines(
      JSON.stringify({ features: tricky }, null, 2).replaceAll('\n', '\r\n'),
    );
    expect(result.values).toEqual(tricky);
  });

  it('keeps elements whole across the chunks of a large file', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => ({
      type: 'Feature',
      id: `f${i}`,
      properties: { text: 'x'.repeat(i % 700), nested: { deep: [i, { s: '"]}' }] } },
    }));
    const result = await lines(JSON.stringify({ type: 'FeatureCollection', features: many }));
    expect(result.elements).toBe(5000);
    expect(result.values).toEqual(many);
  });

  it('gives no lines for an empty array or an object without the member', async () => {
    expect(await lines('{"type":"FeatureCollection","features":[]}')).toEqual({
      values: [],
      elements: 0,
      found: true,
    });
    expect(await lines('{"type":"FeatureCollection"}')).toEqual({
      values: [],
      elements: 0,
      found: false,
    });
  });
});
