import { createHash } from 'node:crypto';
import { open, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RecordLookup } from '../../src/sinks/record-index.js';
import { RecordScanner } from '../../src/sinks/record-scan.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { NO_GDAL, OGRINFO, ogrFeatures } from '../helpers/gdal.js';
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

/** Columns of types Parquet does not give back as they were (some keys of the order), and one nested. */
const TYPED = `SELECT id, name, longitude, latitude,
    (id % 3)::HUGEINT * ('1' || repeat('0', 20))::HUGEINT + id AS huge, to_microseconds(id % 4) AS span,
    ('11:00:00+0' || (id % 3)::VARCHAR)::TIMETZ AS local, (id % 7)::VARCHAR::ENUM('0', '1', '2', '3', '4', '5', '6') AS kind,
    ('POINT (' || longitude || ' ' || latitude || ')')::GEOMETRY AS shape FROM things`;
const TYPED_PIPELINE = `name: p
steps:
  - { id: csv, kind: export, options: { query: "${TYPED.replace(/\n */g, ' ')} ORDER BY huge DESC, span, local", path: exports/things.csv } }
  - { id: geojson, kind: export, options: { query: "SELECT *, [huge] AS huges FROM (${TYPED.replace(/\n */g, ' ')}) ORDER BY huges DESC, kind, id", path: exports/things.geojson, geometry: { id: id } } }
  - { id: fgb, kind: export, options: { query: "${TYPED.replace(/\n */g, ' ')}", path: exports/things.fgb } }
`;

/** A folder holding `night`'s rows, on which the export steps ran (after `before`, its earlier runs). */
async function night(
  dir: string,
  n: number,
  pipeline = PIPELINE,
): Promise<{ reused: Record<string, unknown> }> {
  await writeParquet(join(dir, 'output', 'things', 'part-0.parquet'), things(n));
  const run = await runDefinition(dir, pipeline);
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
    if (!OGRINFO) {
      console.warn(`test/sinks/record-reuse.test.ts: ${NO_GDAL}`);
      return;
    }
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
  it('are written whole after a night that changed most rows, and the next from that one', async () => {
    const nightly = await testDir();
    const once = await testDir();
    await night(nightly, 1);
    // Every name changed: more than a twentieth, the file is written whole.
    expect((await night(nightly, 3)).reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    await night(once, 3);
    expect(await extracts(nightly)).toEqual(await extracts(once));
    // So is the next, back to the first names; the one after is written from it.
    expect((await night(nightly, 1)).reused).toEqual({ csv: 0, geojson: 0, fgb: 0 });
    expect((await night(nightly, 2)).reused).toEqual({ csv: 1994, geojson: 1994, fgb: 1994 });
    await night(once, 2);
    expect(await extracts(nightly)).toEqual(await extracts(once));
  });

  it('count the features without a valid position from the plan the CSV kept, and read the changed rows by their key', async () => {
    const placed = `name: p
steps:
  - { id: csv, kind: export, options: { query: "SELECT * FROM spots ORDER BY id", path: exports/spots.csv } }
  - { id: geojson, kind: export, options: { query: "SELECT * FROM spots ORDER BY id", path: exports/spots.geojson, geometry: { id: id } } }
`;
    // A tenth of the rows out of WGS 84, and a row without a key; on the second night that row and one other renamed.
    const spots = (
      n: number,
    ) => `SELECT i AS id, 'name ' || i || ${n === 2 ? "CASE WHEN i = 4 THEN '!' ELSE '' END" : "''"} AS name,
        CASE WHEN i % 10 = 3 THEN 200.0 ELSE 4.0 + i / 1000 END AS longitude, 52.0 + i / 1000 AS latitude,
        ('POINT (' || (4.0 + i / 1000) || ' ' || (52.0 + i / 1000) || ')')::GEOMETRY AS geometry
      FROM range(100) t(i)
      UNION ALL SELECT NULL, 'nameless${n === 2 ? '!' : ''}', 4.5, 52.5, 'POINT (4.5 52.5)'::GEOMETRY`;
    const runNight = async (dir: string, n: number) => {
      await writeParquet(join(dir, 'output', 'spots', 'part-0.parquet'), spots(n));
      const run = await runDefinition(dir, placed);
      expect(run.failure?.message).toBeUndefined();
      const { manifest } = await readManifest(run.output);
      const steps = manifest.pipelines['p']!.steps;
      const warnings = run.logger.events.filter((e) => e.event === 'export.no_geometry');
      return {
        reused: Object.fromEntries(steps.map((s) => [s.id, s.notes?.['records_reused']])),
        warnings: warnings.map((e) => e.message),
      };
    };
    const nightly = await testDir();
    const want = [
      '10 of 101 features in exports/spots.geojson have no valid position (geometry null)',
    ];
    expect(await runNight(nightly, 1)).toEqual({ reused: { csv: 0, geojson: 0 }, warnings: want });
    // Written from the last night's files: the changed rows read by their keys (the one
    // without a key too), the positions counted from the plan the CSV set apart.
    expect(await runNight(nightly, 2)).toEqual({
      reused: { csv: 99, geojson: 99 },
      warnings: want,
    });
    const once = await testDir();
    await runNight(once, 2);
    for (const file of ['spots.csv', 'spots.geojson'])
      expect(await sha256(join(nightly, 'output/exports', file))).toBe(
        await sha256(join(once, 'output/exports', file)),
      );
  });

  it('pass columns that Parquet would change (HUGEINT, INTERVAL, TIMETZ, ENUM, GEOMETRY) through unchanged, nested ones too', async () => {
    const nightly = await testDir();
    const once = await testDir();
    await night(nightly, 1, TYPED_PIPELINE);
    // Of these columns only the name of 7 changed; the three twins and the new row are made too.
    expect((await night(nightly, 2, TYPED_PIPELINE)).reused).toEqual({
      csv: 1998,
      geojson: 1998,
      fgb: 1998,
    });
    await night(once, 2, TYPED_PIPELINE);
    expect(await extracts(nightly)).toEqual(await extracts(once));
    const csv = await readFile(join(nightly, 'output/exports/things.csv'), 'utf8');
    expect(csv).toContain('200000000000000000005'); // a HUGEINT as it is, not as a DOUBLE
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

  it('are found as a map finds them in a full table, thrice-shared fingerprints included', () => {
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const count = 50_000;
    const hi = new Uint32Array(count);
    const lo = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const j = i % 97 === 5 ? i - 3 : i % 89 === 1 ? i - 1 : -1; // copies of an earlier record
      hi[i] = j >= 0 ? hi[j]! : next() & 0xff; // few high halves: many probes
      lo[i] = j >= 0 ? lo[j]! : next();
    }
    const truth = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const key = `${hi[i]}:${lo[i]}`;
      truth.set(key, truth.has(key) ? -1 : i);
    }
    const lookup = new RecordLookup({ hi, lo });
    for (let i = 0; i < count; i++)
      expect(lookup.find(hi[i]!, lo[i]!)).toBe(truth.get(`${hi[i]}:${lo[i]}`));
    for (let i = 0; i < 1000; i++) expect(lookup.find(next() & 0xff, next())).toBe(-1);
    expect([...truth.values()].filter((v) => v === -1).length).toBeGreaterThan(1000);
  });
});
