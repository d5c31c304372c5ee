import { createHash } from 'node:crypto';
import { open, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RecordLookup } from '../../src/sinks/record-index.js';
import { RecordScanner } from '../../src/sinks/record-scan.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { ogrFeatures } from '../helpers/gdal.js';
import { readManifest, runDefinition } from '../helpers/pipeline.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

const EXTRACTS = ['things.csv', 'things.geojson', 'things.fgb'] as const;

const PIPELINE = `name: p
steps:
  - { id: csv, kind: export, options: { query: "SELECT * FROM things ORDER BY k DESC, id NULLS FIRST", path: exports/things.csv } }
  - { id: geojson, kind: export, options: { query: "SELECT * FROM things ORDER BY k, id", path: exports/things.geojson, geometry: { id: id } } }
  - { id: fgb, kind: export, options: { table: things, path: exports/things.fgb } }
`;

/**
 * Rows a fingerprint could take for one another: lists whose items move to
 * the next list, an empty list and NULL, -0.0 and 0.0, text with quotes and
 * line breaks (a CSV record over several lines), rows equal in every
 * column, keys shared by several rows, rows at one spot.
 */
function things(night: number): string {
  const moved = night === 2;
  return `SELECT i AS id, i % 7 AS k,
      CASE WHEN i % 5 = 0 THEN 'say "hi"' || chr(13) || chr(10) || 'twice ' || i ELSE '=cmd ' || i END AS text,
      CASE WHEN i = 3 AND ${moved} THEN [1] WHEN i = 3 THEN [1, 2] ELSE [i] END AS a,
      CASE WHEN i = 3 AND ${moved} THEN [2, 3] WHEN i = 3 THEN [3] ELSE [] END AS b,
      CASE WHEN i = 4 AND ${moved} THEN NULL ELSE []::INTEGER[] END AS c,
      CASE WHEN i = 5 AND ${moved} THEN '-0.0'::DOUBLE WHEN i = 5 THEN 0.0 ELSE i / 10 END AS amount,
      CASE WHEN i = 6 AND ${moved} THEN {'x': [[1], [2]]} ELSE {'x': [[1, 2]]} END AS nested,
      CASE WHEN i = 7 AND ${moved} THEN 'seven' ELSE '${night === 3 ? 'other ' : 'name '}' || i END AS name,
      3.3 + (hash(i, 'x') % 1000) / 1000 * 3.9 AS longitude,
      CASE WHEN i % 50 = 0 THEN 52.0 ELSE 50.7 + (hash(i, 'y') % 1000) / 1000 * 2.9 END AS latitude
    FROM range(2000) t(i)
    WHERE NOT (${moved} AND i = 11)
    UNION ALL SELECT t.* FROM (SELECT 9000 AS id, 1 AS k, 'twin' AS text, [9] AS a, [] AS b, [] AS c, 0.5 AS amount,
      {'x': [[9]]} AS nested, 'twin' AS name, 5.1 AS longitude, 52.1 AS latitude) t, range(3)
    ${moved ? `UNION ALL SELECT 5000, 2, 'new', [5], [], [], 1.5, {'x': [[5]]}, 'new', 4.9, 51.9` : ''}`;
}

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

/** A folder holding `night`'s rows, on which the export steps ran (after `before`, its earlier runs). */
async function night(dir: string, n: number): Promise<{ reused: Record<string, unknown> }> {
  await writeParquet(join(dir, 'output', 'things', 'part-0.parquet'), things(n));
  const run = await runDefinition(dir, PIPELINE);
  expect(run.failure?.message).toBeUndefined();
  const { manifest } = await readManifest(run.output);
  const steps = manifest.pipelines['p']!.steps;
  return { reused: Object.fromEntries(steps.map((s) => [s.id, s.notes?.['records_reused']])) };
}

/** The extracts of a folder, by name, as their SHA-256. */
async function extracts(dir: string): Promise<Record<string, string>> {
  const files = EXTRACTS.map((f) => join(dir, 'output', 'exports', f));
  const hashes = await Promise.all(files.map((f) => sha256(f)));
  return Object.fromEntries(hashes.map((h, i) => [EXTRACTS[i]!, h]));
}

describe('extracts written from the last night', () => {
  it('copy the records of unchanged rows and equal, byte for byte, the files one run writes', async () => {
    const nightly = await testDir();
    const first = await night(nightly, 1);
    // A first night has no file to copy from: every record made.
    expect(first.reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    const second = await night(nightly, 2);
    const once = await testDir();
    await night(once, 2);
    expect(await extracts(nightly)).toEqual(await extracts(once));
    // Rows changed (ids 3 to 7), one gone (11), one new, three equal in every column (made every time): 2003 rows, 9 made.
    expect(second.reused).toEqual({ csv: 1994, geojson: 1994, fgb: 1994 });
    const records = parseRfc4180(
      await readFile(join(nightly, 'output/exports/things.csv'), 'utf8'),
    );
    expect(records.filter((r) => r[2]?.includes('\r\n')).length).toBe(400);
    // GDAL reads the FlatGeobuf put together from two files.
    const features = await ogrFeatures(join(nightly, 'output/exports/things.fgb'));
    expect(features.length).toBe(2003);
    expect(features.find((f) => f.properties['id'] === 7)?.properties['name']).toBe('seven');
  });

  it('are written whole when the file in place is not the one the index describes, or the index is damaged', async () => {
    const nightly = await testDir();
    await night(nightly, 1);
    // A byte changed in place (same file, same size), an index cut short.
    const csv = await open(join(nightly, 'output/exports/things.csv'), 'r+');
    await csv.write('X', 40);
    await csv.close();
    await truncate(join(nightly, 'output/.state/extracts/exports/things.geojson.idx'), 100);
    const second = await night(nightly, 2);
    expect(second.reused).toEqual({ csv: 0, geojson: 0, fgb: 1994 });
    const once = await testDir();
    await night(once, 2);
    expect(await extracts(nightly)).toEqual(await extracts(once));
    // Without its index, a file is written whole and indexed again.
    await rm(join(nightly, 'output/.state/extracts'), { recursive: true });
    expect((await night(nightly, 2)).reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    expect((await night(nightly, 2)).reused).toEqual({ csv: 2000, geojson: 2000, fgb: 2000 });
    expect(await extracts(nightly)).toEqual(await extracts(once));
  });
  it('after a night that changed most rows, the next is still written from it, by a second read of the rows that changed', async () => {
    const nightly = await testDir();
    const once = await testDir();
    await night(nightly, 1);
    // Every name changed: the rows set apart with the fingerprints are all of them.
    expect((await night(nightly, 3)).reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    await night(once, 3);
    expect(await extracts(nightly)).toEqual(await extracts(once));
    // The next nights read the rows that changed again rather than set them all apart.
    expect((await night(nightly, 1)).reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    expect((await night(nightly, 2)).reused).toEqual({ csv: 1994, geojson: 1994, fgb: 1994 });
    await night(once, 2);
    expect(await extracts(nightly)).toEqual(await extracts(once));
  });
});

describe('the records of a file', () => {
  it('are found in pieces of any size: CSV lines whose quotes hold line breaks, JSON array lines', () => {
    const csv = Buffer.from('a,b\r\n1,"x\r\ny"\r\n2,"""q"""\r\n');
    const json = Buffer.from('[\n\t{"a":1},\n\t{"a":"x,"},\n\t{"a":3}\n]\n');
    for (const size of [1, 2, 3, 7, 100]) {
      const pieces = (bytes: Buffer) =>
        Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) =>
          bytes.subarray(i * size, (i + 1) * size),
        );
      const c = new RecordScanner('csv');
      for (const piece of pieces(csv)) c.feed(piece);
      expect([...c.lengths.done()]).toEqual([5, 10, 11]);
      const j = new RecordScanner('json-array');
      for (const piece of pieces(json)) j.feed(piece);
      expect([...j.lengths.done()]).toEqual([1, 8, 11, 8, 1]);
    }
  });

  it('are found by fingerprint, and a fingerprint two records share finds none', () => {
    const hi = Uint32Array.from([1, 2, 3, 2, 0xffffffff]);
    const lo = Uint32Array.from([5, 6, 7, 6, 0]);
    const lookup = new RecordLookup({ hi, lo });
    expect([lookup.find(1, 5), lookup.find(3, 7), lookup.find(0xffffffff, 0)]).toEqual([0, 2, 4]);
    expect([lookup.find(2, 6), lookup.find(1, 6), lookup.find(9, 9)]).toEqual([-1, -1, -1]);
  });
});
