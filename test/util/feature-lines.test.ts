import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compactFeatureLines } from '../../src/util/feature-lines.js';

const dir = await mkdtemp(join(tmpdir(), 'road-etl-feature-lines-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function cut(text: string): Promise<{ lines: string[]; count: number | undefined }> {
  const source = join(dir, 'in.geojson');
  const target = join(dir, 'out.jsonl');
  await rm(target, { force: true });
  await writeFile(source, text);
  const count = await compactFeatureLines(source, target);
  const out = await readFile(target, 'utf8').catch(() => '');
  return { lines: out === '' ? [] : out.replace(/\n$/, '').split('\n'), count };
}

const feature = (i: number) => ({
  type: 'Feature',
  id: `f${i}`,
  geometry: { type: 'Point', coordinates: [4.9 + i / 1e5, 52.37] },
  // text of every length, so that the boundaries fall across the 1 MB chunks at every offset
  properties: { text: `x\\"},{"type":"Feature"`.repeat(i % 97), n: i, list: [{ a: '}' }] },
});

describe('the features of a compact FeatureCollection, cut where each begins', () => {
  it('gives each feature on its line, across the chunks of a large file', async () => {
    const features = Array.from({ length: 20000 }, (_, i) => feature(i));
    const { lines, count } = await cut(JSON.stringify({ type: 'FeatureCollection', features }));
    expect(count).toBe(20000);
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual(features);
  });

  it('gives no lines for an empty collection', async () => {
    expect(await cut('{"type":"FeatureCollection","features":[]}\n')).toEqual({
      lines: [],
      count: 0,
    });
  });

  it('declines a collection laid out otherwise (the exact cut is then used)', async () => {
    const features = [feature(1), feature(2)];
    for (const text of [
      JSON.stringify({ features, type: 'FeatureCollection' }),
      JSON.stringify({ type: 'FeatureCollection', bbox: [1, 2, 3, 4], features }),
      JSON.stringify({ type: 'FeatureCollection', features, totalCount: 2 }),
      '[]',
    ])
      expect((await cut(text)).count).toBeUndefined();
  });

  it('cuts a feature nested in a property in the wrong place: no line is a whole value then', async () => {
    const nested = { ...feature(1), properties: { related: [feature(2), feature(3)] } };
    const { lines } = await cut(
      JSON.stringify({ type: 'FeatureCollection', features: [feature(0), nested] }),
    );
    expect(lines.length).toBe(3);
    expect(lines.filter((line) => parses(line))).toEqual([JSON.stringify(feature(0))]);
  });
});

function parses(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}
