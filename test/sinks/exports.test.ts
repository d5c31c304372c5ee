import { committed } from '../helpers/committed.js';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { withHilbert } from '../../src/duckdb/hilbert.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { runDefinition } from '../helpers/pipeline.js';
import { NO_GDAL, OGRINFO, ogrFeatures, ogrSummary, type Box } from '../helpers/gdal.js';
import { duck, writeParquet } from '../helpers/tmp.js';

/** The first characters that make a spreadsheet read a cell as a formula (OWASP CSV injection). */
const FORMULA_PREFIXES = ['=', '+', '-', '@', '\t', '\r'];

/** A table with every kind of awkward value an export meets. */
const FIXTURE = `SELECT * FROM (VALUES
  (1, 'plain', 4.9, 52.37, TIMESTAMPTZ '2020-07-28 11:30:19.833+00', DATE '2024-03-31', ['a', 'b'], -5, true, NULL),
  (2, 'comma, "quote"', 5.1, 52.1, TIMESTAMPTZ '2024-10-27 02:30:00.000251+00', DATE '2024-10-27', [], 0, false, 'x'),
  (3, '=SUM(A1:A2)', 6.5, 53.2, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', ['=1'], 7, NULL, 'y'),
  (4, '+31 6 1234', 3.6, 51.5, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, -1, true, NULL),
  (5, '-minus', 5.0, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (6, '@home', 5.0, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (7, chr(9) || 'tab first', 5.0, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (8, 'line' || chr(10) || 'break' || chr(13) || chr(10) || 'crlf', 5.0, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (9, '', NULL, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (10, 'café ☕ Ã©', 200.0, 52.0, TIMESTAMPTZ '2024-01-01 00:00:00+00', DATE '2024-01-01', NULL, 1, true, NULL),
  (11, NULL, 4.0, -91.0, NULL, NULL, NULL, NULL, NULL, NULL)
) t(id, text, longitude, latitude, ts, day, tags, amount, flag, note)`;

/** The fixture's timestamps as every export writes them: ISO 8601 UTC, full precision (by id). */
const ISO_TS: Record<number, string | null> = {
  1: '2020-07-28T11:30:19.833Z',
  2: '2024-10-27T02:30:00.000251Z',
  3: '2024-01-01T00:00:00.000Z',
  4: '2024-01-01T00:00:00.000Z',
  5: '2024-01-01T00:00:00.000Z',
  6: '2024-01-01T00:00:00.000Z',
  7: '2024-01-01T00:00:00.000Z',
  8: '2024-01-01T00:00:00.000Z',
  9: '2024-01-01T00:00:00.000Z',
  10: '2024-01-01T00:00:00.000Z',
  11: null,
};

const PIPELINE = `name: exports
steps:
  - { id: csv, kind: export, options: { table: things, path: exports/things.csv } }
  - { id: geojson, kind: export, options: { table: things, path: exports/things.geojson, geometry: { id: id } } }
  - { id: parquet, kind: export, options: { table: things, path: exports/things.parquet } }
  - { id: flatgeobuf, kind: export, options: { table: things, path: exports/things.fgb } }
  - { id: points, kind: export, options: { table: points, path: exports/points.fgb } }
  - id: shuffled
    kind: export
    options: { query: "SELECT * FROM points ORDER BY hash(id, 'shuffle')", path: exports/shuffled/points.fgb }
  - id: empty_flatgeobuf
    kind: export
    options: { query: "SELECT * FROM things WHERE id < 0", path: exports/empty.fgb }
  - id: subset
    kind: export
    options: { query: "SELECT id, text FROM things WHERE id >= $min", params: { min: 9 }, path: exports/subset.csv }
  - id: empty_geojson
    kind: export
    options: { query: "SELECT * FROM things WHERE id < 0", path: exports/empty.geojson }
  - id: clocks
    kind: export
    options: { query: "SELECT TIMESTAMP '2026-10-25 02:00:00' AS wall_clock, TIMESTAMPTZ '2026-10-25 01:00:00+00' AS instant", path: exports/clocks.csv }
  - id: hostile
    kind: export
    options: { query: "SELECT * FROM hostile ORDER BY id", path: exports/hostile.csv }
  - id: exact
    kind: export
    options: { query: "SELECT * FROM hostile ORDER BY id", path: exports/exact.csv, formula_guard: false }
  - id: control_geojson
    kind: export
    options: { query: "SELECT id, longitude, latitude, chr(1) || chr(2) || '\\",' || chr(10) AS text FROM things WHERE id <= 2", path: exports/control.geojson }
`;

const dir = await (async () => {
  const { mkdtemp } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  return mkdtemp(join(tmpdir(), 'road-etl-exports-'));
})();
afterAll(() => rm(dir, { recursive: true, force: true }));
await writeParquet(join(dir, 'output', 'things', 'part-0.parquet'), FIXTURE);
/** 20,000 points over the Netherlands, spread by a hash (the same every run), some on the same spot. */
await writeParquet(
  join(dir, 'output', 'points', 'part-0.parquet'),
  `SELECT i AS id, 3.3 + (hash(i, 'x') % 1000003) / 1000003 * 3.9 AS longitude,
     50.7 + (hash(i, 'y') % 1000003) / 1000003 * 2.9 AS latitude, 'point ' || i AS name
   FROM range(19990) t(i)
   UNION ALL SELECT 19990 + i, 5.25, 52.25, 'same spot' FROM range(10) t(i)`,
);
/** Text a spreadsheet guard must not make ambiguous: formulas, real apostrophes, phone numbers. */
const HOSTILE = [
  '=1',
  "'=1",
  "'s-Gravenhage",
  "''",
  "'",
  '+31 20 123 4567',
  '-',
  '@x',
  'plain',
  '',
];
await writeParquet(
  join(dir, 'output', 'hostile', 'part-0.parquet'),
  `SELECT * FROM (VALUES ${HOSTILE.map((t, i) => `(${i}, '${t.replaceAll("'", "''")}', '1.0', DATE '2026-11-01', TIMESTAMPTZ '2026-11-01 12:00:00+00', ${i % 2 === 0})`).join(', ')})
     t(id, name, schema_version, day, seen_at, flag)`,
);
const run = await runDefinition(dir, PIPELINE);
const source = await duck(
  `SELECT * FROM read_parquet('${committed(join(dir, 'output'), 'things/part-0.parquet')}') ORDER BY id`,
);

describe('export to CSV', () => {
  const file = join(dir, 'output', 'exports', 'things.csv');

  it('writes RFC 4180: a header, CRLF records, quoted fields with doubled quotes; text as in the table but formulas neutralised', async () => {
    expect(run.failure).toBeUndefined();
    const records = parseRfc4180(await readFile(file, 'utf8'));
    expect(records[0]).toEqual([
      'id',
      'text',
      'longitude',
      'latitude',
      'ts',
      'day',
      'tags',
      'amount',
      'flag',
      'note',
    ]);
    expect(records).toHaveLength(source.length + 1);
    records.slice(1).forEach((record, i) => {
      expect(record).toHaveLength(10);
      const text = source[i]!['text'] as string | null;
      const expected =
        text === null ? '' : FORMULA_PREFIXES.some((p) => text.startsWith(p)) ? `'${text}` : text;
      expect(record[1]).toBe(expected);
    });
  });

  it('round-trips through DuckDB, with formula cells neutralised and nothing else changed', async () => {
    const back = await duck(
      `SELECT * FROM read_csv('${file}', header = true, all_varchar = true, allow_quoted_nulls = false) ORDER BY id::INTEGER`,
    );
    expect(back).toHaveLength(source.length);
    back.forEach((row, i) => {
      const original = source[i]!;
      const text = original['text'] as string | null;
      const expected =
        text !== null && FORMULA_PREFIXES.some((p) => text.startsWith(p)) ? `'${text}` : text;
      expect(row['text']).toBe(expected);
      expect(row['amount']).toBe(
        original['amount'] === null ? null : String(original['amount'] as number),
      );
      expect(row['ts']).toBe(ISO_TS[Number(row['id'])]);
      expect(row['note']).toBe(original['note']);
      expect(row['tags']).toBe(original['tags'] === null ? null : JSON.stringify(original['tags']));
    });
    const neutralised = back
      .filter((r) => String(r['text']).startsWith("'"))
      .map((r) => Number(r['id']));
    expect(neutralised).toEqual([3, 4, 5, 6, 7]);
  });

  it('writes timestamps as ISO 8601 UTC with their milliseconds, which DuckDB reads back as the same instant', async () => {
    const back = await duck(
      `SELECT c.ts::TIMESTAMPTZ = o.ts AS same FROM read_csv('${file}', header = true, all_varchar = true) c
       JOIN read_parquet('${committed(join(dir, 'output'), 'things/part-0.parquet')}') o ON c.id::INTEGER = o.id WHERE o.ts IS NOT NULL ORDER BY o.id`,
    );
    expect(back.map((r) => r['same'])).toEqual(Array(10).fill(true));
    expect(await readFile(file, 'utf8')).toContain(',2020-07-28T11:30:19.833Z,');
  });

  it('keeps the empty string apart from NULL', async () => {
    const text = await readFile(file, 'utf8');
    expect(text).toContain('\r\n9,"",');
    expect(text).toMatch(/\r\n11,,/);
  });

  it('writes an instant in UTC with Z, and a timestamp without time zone (a wall-clock time) without a zone', async () => {
    const text = await readFile(join(dir, 'output', 'exports', 'clocks.csv'), 'utf8');
    expect(text).toBe('wall_clock,instant\r\n2026-10-25T02:00:00.000,2026-10-25T01:00:00.000Z\r\n');
  });

  it('binds query params instead of pasting them', async () => {
    const back = await duck(
      `SELECT id FROM read_csv('${join(dir, 'output', 'exports', 'subset.csv')}', header = true) ORDER BY id`,
    );
    expect(back.map((r) => Number(r['id']))).toEqual([9, 10, 11]);
  });
});

describe('export to GeoJSON', () => {
  it('writes an RFC 7946 FeatureCollection of points in [longitude, latitude], properties typed as in the table', async () => {
    const collection = JSON.parse(
      await readFile(join(dir, 'output', 'exports', 'things.geojson'), 'utf8'),
    ) as {
      type: string;
      features: {
        type: string;
        id: unknown;
        geometry: { type: string; coordinates: number[] } | null;
        properties: Record<string, unknown>;
      }[];
    };
    expect(collection.type).toBe('FeatureCollection');
    expect(Object.keys(collection)).toEqual(['type', 'features']);
    expect(JSON.stringify(collection)).not.toContain('"crs"');
    expect(collection.features).toHaveLength(source.length);
    collection.features.forEach((feature, i) => {
      const row = source[i]!;
      expect(feature.type).toBe('Feature');
      expect(feature.id).toBe(row['id']);
      // DuckDB hands decimals over as text: compare as numbers.
      const lon = row['longitude'] === null ? null : Number(row['longitude'] as string);
      const lat = row['latitude'] === null ? null : Number(row['latitude'] as string);
      const valid = lon !== null && lat !== null && Math.abs(lon) <= 180 && Math.abs(lat) <= 90;
      expect(feature.geometry).toEqual(valid ? { type: 'Point', coordinates: [lon, lat] } : null);
      const expected = { ...row };
      delete expected['longitude'];
      delete expected['latitude'];
      expected['ts'] = ISO_TS[row['id'] as number];
      expected['amount'] = row['amount'] === null ? null : Number(row['amount']);
      expect(feature.properties).toEqual(expected);
    });
    expect(collection.features[2]!.properties['text']).toBe('=SUM(A1:A2)');
  });

  it('writes an empty FeatureCollection when the query has no rows', async () => {
    const text = await readFile(join(dir, 'output', 'exports', 'empty.geojson'), 'utf8');
    expect(JSON.parse(text)).toEqual({ type: 'FeatureCollection', features: [] });
  });

  it('keeps control characters, quotes, commas and line breaks of text inside the JSON strings', async () => {
    const collection = JSON.parse(
      await readFile(join(dir, 'output', 'exports', 'control.geojson'), 'utf8'),
    ) as { features: { properties: { id: number; text: string } }[] };
    expect(collection.features.map((f) => [f.properties.id, f.properties.text])).toEqual([
      [1, '\u0001\u0002",\n'],
      [2, '\u0001\u0002",\n'],
    ]);
  });

  it('counts the features without a valid position in the manifest notes', () => {
    const step = run.logger.events.find((e) => e.event === 'export.no_geometry');
    expect(step?.message).toMatch(/^3 of 11 features/);
  });
});

describe('export to Parquet', () => {
  it('writes the table unchanged, zstd-compressed', async () => {
    const path = join(dir, 'output', 'exports', 'things.parquet');
    const diff = await duck(
      `SELECT count(*) AS n FROM ((SELECT * FROM read_parquet('${path}') EXCEPT ALL SELECT * FROM read_parquet('${committed(join(dir, 'output'), 'things/part-0.parquet')}'))
       UNION ALL (SELECT * FROM read_parquet('${committed(join(dir, 'output'), 'things/part-0.parquet')}') EXCEPT ALL SELECT * FROM read_parquet('${path}')))`,
    );
    expect(Number(diff[0]!['n'])).toBe(0);
    const codecs = await duck(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`);
    expect(codecs.map((c) => c['compression'])).toEqual(['ZSTD']);
  });
});

if (!OGRINFO) console.warn(`test/sinks/exports.test.ts: ${NO_GDAL}`);

describe.skipIf(!OGRINFO)('export to FlatGeobuf, read by GDAL', () => {
  const file = (name: string) => join(dir, 'output', 'exports', name);

  it('declares WGS 84, the extent of the valid points and each column with its type', async () => {
    const summary = await ogrSummary(file('things.fgb'));
    expect(summary.name).toBe('things');
    expect(summary.count).toBe(source.length);
    expect(summary.crs).toBe('EPSG:4326');
    // The valid positions (ids 1-8): longitude 3.6 to 6.5, latitude 51.5 to 53.2.
    expect(summary.extent).toEqual([3.6, 51.5, 6.5, 53.2]);
    expect(summary.fields).toEqual({
      id: 'Integer',
      text: 'String',
      ts: 'DateTime',
      day: 'DateTime',
      tags: 'String',
      amount: 'Integer',
      flag: 'Integer(Boolean)',
      note: 'String',
    });
  });

  it('holds every row with its values, a point where the position is valid and none where it is not', async () => {
    const features = await ogrFeatures(file('things.fgb'));
    expect(features).toHaveLength(source.length);
    const byId = new Map(features.map((f) => [f.properties['id'], f]));
    for (const row of source) {
      const feature = byId.get(row['id'])!;
      const lon = row['longitude'] === null ? null : Number(row['longitude'] as string);
      const lat = row['latitude'] === null ? null : Number(row['latitude'] as string);
      const valid = lon !== null && lat !== null && Math.abs(lon) <= 180 && Math.abs(lat) <= 90;
      expect(feature.geometry).toEqual(valid ? { type: 'Point', coordinates: [lon, lat] } : null);
      const p = feature.properties;
      expect(p['text'] ?? null).toBe(row['text']);
      expect(p['note'] ?? null).toBe(row['note']);
      expect(p['amount'] ?? null).toBe(row['amount'] === null ? null : Number(row['amount']));
      expect(p['flag'] ?? null).toBe(row['flag']);
      expect(p['tags'] ?? null).toEqual(row['tags']);
      // GDAL keeps milliseconds; the date is a DateTime at midnight, without a zone.
      const ts = ISO_TS[row['id'] as number];
      expect(typeof p['ts'] === 'string' ? Date.parse(p['ts']) : null).toBe(
        ts ? Math.floor(Date.parse(ts)) : null,
      );
      expect(p['day'] ?? null).toBe(
        row['day'] === null ? null : `${row['day'] as string}T00:00:00`,
      );
    }
  });

  it('has a spatial index that finds exactly the points in a box', async () => {
    const all = await ogrSummary(file('points.fgb'));
    expect(all.count).toBe(20_000);
    const boxes: Box[] = [
      [4, 51, 4.5, 51.5],
      [5.2, 52.2, 5.3, 52.3],
      [6.9, 53, 7.4, 53.7],
      [3, 50, 8, 54],
      [0, 0, 1, 1],
    ];
    for (const box of boxes) {
      const [w, s, e, n] = box;
      const truth = await duck(
        `SELECT id FROM read_parquet('${committed(join(dir, 'output'), 'points/part-0.parquet')}')
         WHERE longitude BETWEEN ${w} AND ${e} AND latitude BETWEEN ${s} AND ${n} ORDER BY id`,
      );
      const found = await ogrFeatures(file('points.fgb'), box);
      expect(
        found.map((f) => Number(f.properties['id'])).sort((a, b) => a - b),
        box.join(','),
      ).toEqual(truth.map((r) => Number(r['id'])));
      expect((await ogrSummary(file('points.fgb'), box)).count, box.join(',')).toBe(truth.length);
    }
  });

  it('stores the features along the Hilbert curve of their extent, in the order of the index', async () => {
    // 20,000 features: more than one range of the writer (16,384), so the ranges are ordered and joined.
    const points = committed(join(dir, 'output'), 'points/part-0.parquet');
    const [extent] = await duck(
      `SELECT min(longitude) AS w, min(latitude) AS s, max(longitude) AS e, max(latitude) AS n FROM read_parquet('${points}')`,
    );
    const [w, s, e, n] = ['w', 's', 'e', 'n'].map((k) => Number(extent![k]));
    const values = await duck(
      withHilbert(
        `SELECT id, longitude, latitude FROM read_parquet('${points}')`,
        'longitude',
        'latitude',
        {
          minX: w!,
          minY: s!,
          width: e! - w!,
          height: n! - s!,
        },
      ),
    );
    const hilbertOf = new Map(values.map((r) => [Number(r['id']), Number(r['hilbert'])]));
    const stored = (await ogrFeatures(file('points.fgb'))).map((f) =>
      hilbertOf.get(Number(f.properties['id'])),
    );
    expect(stored).toHaveLength(20_000);
    expect(new Set(stored).size).toBeGreaterThan(10_000);
    expect(stored).toEqual([...stored].sort((a, b) => a! - b!));
  });

  it('writes the same bytes whatever the order the rows come in, points on one spot included', async () => {
    const bytes = await readFile(file('points.fgb'));
    expect(bytes.length).toBeGreaterThan(20_000);
    expect((await readFile(file('shuffled/points.fgb'))).equals(bytes)).toBe(true);
  });

  it('writes a file GDAL opens when the query has no rows', async () => {
    const summary = await ogrSummary(file('empty.fgb'));
    expect(summary.count).toBe(0);
    expect(summary.crs).toBe('EPSG:4326');
  });
});

describe('the CSV dialect', () => {
  const file = (name: string) => join(dir, 'output', 'exports', name);
  const names = async (name: string) =>
    parseRfc4180(await readFile(file(name), 'utf8'))
      .slice(1)
      .map((r) => r[1]!);

  it("guards formulas without ambiguity: dropping the first character of a text cell that begins with ' gives the value back", async () => {
    expect(run.failure).toBeUndefined();
    const cells = await names('hostile.csv');
    expect(cells).toHaveLength(HOSTILE.length);
    // No cell a spreadsheet would run, and every value read back exactly.
    for (const cell of cells) expect(FORMULA_PREFIXES.some((p) => cell.startsWith(p))).toBe(false);
    expect(cells.map((c) => (c.startsWith("'") ? c.slice(1) : c))).toEqual(HOSTILE);
    // =1 and '=1 are two values, written as two cells.
    expect(cells[0]).toBe("'=1");
    expect(cells[1]).toBe("''=1");
    expect(cells[2]).toBe("''s-Gravenhage");
  });

  it('writes text exactly with formula_guard: false', async () => {
    expect(await names('exact.csv')).toEqual(HOSTILE);
  });

  it('describes every CSV in CSVW metadata beside it: the dialect and each column with its datatype', async () => {
    const metadata = JSON.parse(await readFile(file('hostile.csv-metadata.json'), 'utf8')) as {
      '@context': unknown[];
      url: string;
      'dc:title': string;
      'dc:description'?: string;
      dialect: Record<string, unknown>;
      tableSchema: { columns: { name: string; datatype: unknown }[] };
    };
    expect(metadata['@context'][0]).toBe('http://www.w3.org/ns/csvw');
    expect(metadata.url).toBe('hostile.csv');
    expect(metadata.dialect).toMatchObject({
      header: true,
      delimiter: ',',
      lineTerminators: ['\r\n'],
    });
    const header = parseRfc4180(await readFile(file('hostile.csv'), 'utf8'))[0];
    expect(metadata.tableSchema.columns.map((c) => c.name)).toEqual(header);
    expect(
      Object.fromEntries(metadata.tableSchema.columns.map((c) => [c.name, c.datatype])),
    ).toEqual({
      id: 'integer',
      name: 'string',
      schema_version: 'string',
      day: 'date',
      seen_at: 'dateTimeStamp',
      flag: 'boolean',
    });
    // Titled by its name, described by what it holds and, guarded, how to read its text.
    expect(metadata['dc:title']).toBe('hostile');
    expect(metadata['dc:description']).toMatch(/^The rows of a query, written by road-etl/);
    expect(metadata['dc:description']).toMatch(/drop the first character/);
    const exact = JSON.parse(await readFile(file('exact.csv-metadata.json'), 'utf8')) as Record<
      string,
      string
    >;
    expect(exact['dc:title']).toBe('exact');
    expect(exact['dc:description']).not.toMatch(/drop the first character/);
    // The richer fixture: numbers, nested values as JSON, instants.
    const things = JSON.parse(await readFile(file('things.csv-metadata.json'), 'utf8')) as {
      tableSchema: { columns: { name: string; datatype: unknown }[] };
    };
    expect(Object.fromEntries(things.tableSchema.columns.map((c) => [c.name, c.datatype]))).toEqual(
      {
        id: 'integer',
        text: 'string',
        // (the fixture's literals are DECIMAL)
        longitude: 'decimal',
        latitude: 'decimal',
        ts: 'dateTimeStamp',
        day: 'date',
        tags: 'json',
        amount: 'integer',
        flag: 'boolean',
        note: 'string',
      },
    );
  });

  it('types the columns for GDAL (and QGIS) with a CSVT beside it: "1.0" stays text, a date a date', async () => {
    if (!OGRINFO) {
      console.warn(`test/sinks/exports.test.ts: ${NO_GDAL}`);
      return;
    }
    const { stdout } = await promisify(execFile)(OGRINFO, [
      '-ro',
      '-so',
      '-al',
      file('hostile.csv'),
    ]);
    expect(stdout).toContain(`Feature Count: ${HOSTILE.length}`);
    const fields = Object.fromEntries(
      [...stdout.matchAll(/^(\w+): ([\w()]+) \(/gm)].map((m) => [m[1]!, m[2]!] as const),
    );
    expect(fields).toMatchObject({
      id: 'Integer',
      name: 'String',
      schema_version: 'String',
      day: 'Date',
      seen_at: 'DateTime',
      flag: 'Integer(Boolean)',
    });
  });
});
