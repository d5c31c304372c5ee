import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compactFeatureLines, compactFeatureLinesInPlace } from '../../src/util/feature-lines.js';

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

describe('the same cut made in the file itself', () => {
  const inPlace = async (text: string) => {
    const file = join(dir, 'in-place.geojson');
    await writeFile(file, text);
    const cut = await compactFeatureLinesInPlace(file);
    const out = await readFile(file, 'utf8');
    return { file, cut, out };
  };

  it('gives the lines of the cut into a file of its own, and undone, the collection as it was', async () => {
    const features = Array.from({ length: 20000 }, (_, i) => feature(i));
    const text = JSON.stringify({ type: 'FeatureCollection', features });
    const apart = await cut(text);
    const { file, cut: made, out } = await inPlace(text);
    expect(out.length).toBe(text.length);
    expect(made?.lines).toBe(apart.count);
    const lines = out.replace(/\n$/, '').split('\n');
    expect(lines.map((line) => line.trim())).toEqual(apart.lines);
    await made!.undo();
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('undone, a collection with line breaks between its tokens and a feature nested in a property is the same JSON', async () => {
    const nested = { ...feature(1), properties: { related: [feature(2), feature(3)] } };
    const collection = { type: 'FeatureCollection', features: [feature(0), nested, feature(4)] };
    const text = JSON.stringify(collection, null, 1).replace(/\n\s*/g, '\n') + '\n';
    const { file, cut: made } = await inPlace(JSON.stringify(collection));
    expect(made?.lines).toBe(4); // one cut inside the nested feature
    await made!.undo();
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(collection);
    // Line breaks between tokens become spaces: the JSON is the same.
    const broken = await inPlace(text);
    await broken.cut!.undo();
    expect(JSON.parse(await readFile(broken.file, 'utf8'))).toEqual(collection);
  });

  it('leaves a collection laid out otherwise as it is', async () => {
    const text = JSON.stringify({ features: [feature(1)], type: 'FeatureCollection' });
    const { cut: made, out } = await inPlace(text);
    expect(made).toBeUndefined();
    expect(out).toBe(text);
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
