/**
 * The output folder as readers other than road-etl open it: Arrow's Parquet
 * reader (as pyarrow, polars and Spark type columns), plain DuckDB with the
 * folder's views.sql, the CSV extracts.
 */
import { createHash } from 'node:crypto';
import { cp, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeDataset } from '../../src/pipeline/dataset-description.js';
import { arrowSchema, arrowTable } from '../helpers/arrow.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { sharedDemo } from '../helpers/demo.js';
import { runDefinition } from '../helpers/pipeline.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';

const live = await useSimulator({ seed: 37, signs: { signs: 300 }, bicycle: { locations: 5 } });

/** Every Parquet file of the folder that users read (.state apart). */
async function parquetFiles(root: string): Promise<string[]> {
  return (await readdir(root, { recursive: true }))
    .map(String)
    .filter((f) => f.endsWith('.parquet') && !f.split('/').some((p) => p.startsWith('.')))
    .sort()
    .map((f) => join(root, f));
}

/** The rows of a CSV extract as objects, by header. */
async function csvRows(file: string): Promise<Record<string, string>[]> {
  const [header, ...records] = parseRfc4180(await readFile(file, 'utf8'));
  return records.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

/** The columns road-etl writes as JSON text, by dataset folder. */
const JSON_COLUMNS: Record<string, string[]> = {
  'bicycle/locations': ['properties'],
  'bicycle/measurements': ['measured_values_full', 'extra_fields'],
  'derived/bicycle_location_summary': ['totals'],
  'derived/signs_current_state': ['raw_event'],
  'signs/events': ['raw_event'],
  'signs/snapshot': ['raw_event'],
  'signs/live_snapshots': ['properties'],
};

/** JSON columns NULL on a usual night: the typed columns hold the whole answer (docs/pipelines.md). */
const USUALLY_NULL = new Set(['signs/live_snapshots']);

describe('the demo folder read by Arrow (pyarrow, polars, Spark)', () => {
  it('has no column read as bytes but the WKB geometry: ids and JSON are text', async () => {
    const { output } = await sharedDemo();
    const files = await parquetFiles(output);
    expect(files.length).toBeGreaterThan(100);
    // The first and last file of each dataset (a dataset's files share their columns).
    const byDataset = new Map<string, string[]>();
    for (const file of files) {
      const dataset = file.replace(/\/[^/=]+=[^/]*\/[^/]+$|\/[^/]+$/, '');
      byDataset.set(dataset, [...(byDataset.get(dataset) ?? []), file]);
    }
    expect(byDataset.size).toBeGreaterThan(12);
    const bytes: string[] = [];
    for (const group of byDataset.values())
      for (const file of new Set([group[0]!, group.at(-1)!]))
        for (const [name, type] of (await arrowSchema(file)).fields)
          if (/Binary/i.test(type) && name !== 'geometry') bytes.push(`${file}: ${name} ${type}`);
    expect(bytes).toEqual([]);

    for (const [dataset, columns] of Object.entries(JSON_COLUMNS)) {
      const file = files.find((f) => f.startsWith(join(output, dataset) + '/'));
      expect(file, dataset).toBeDefined();
      const table = await arrowTable(file!);
      const texts: unknown[] = [];
      for (const column of columns) {
        expect(String(table.schema.fields.find((f) => f.name === column)?.type), column).toBe(
          'Utf8',
        );
        texts.push(...(table.getChild(column)!.toArray() as unknown[]).filter((v) => v !== null));
      }
      // Text that parses as JSON (a column may be empty in this file: not all of them).
      expect(USUALLY_NULL.has(dataset) || texts.length > 0, dataset).toBe(true);
      for (const text of texts) {
        expect(typeof text, dataset).toBe('string');
        expect(() => JSON.parse(text as string) as unknown, dataset).not.toThrow();
      }
    }
  });

  it("gives sign ids that join the CSV extract's ids, every one", async () => {
    const { output } = await sharedDemo();
    const [snapshot] = await parquetFiles(join(output, 'signs', 'live_snapshots'));
    const table = await arrowTable(snapshot!);
    expect(String(table.schema.fields.find((f) => f.name === 'sign_id')?.type)).toBe('Utf8');
    const ids = new Set(table.getChild('sign_id')!.toArray() as string[]);
    const csv = await csvRows(join(output, 'exports', 'signs_live.csv'));
    expect(csv.length).toBeGreaterThan(1000);
    expect(ids.size).toBe(csv.length);
    expect(csv.filter((r) => ids.has(r['sign_id']!)).length).toBe(csv.length);
  });
});

/** The partitioned datasets of a folder: dataset folder -> its partition column and values (as in the folder names). */
async function partitionedDatasets(
  root: string,
): Promise<Map<string, { column: string; values: string[] }>> {
  const found = new Map<string, { column: string; values: string[] }>();
  for (const file of await parquetFiles(root)) {
    const m = /^(.*)\/([^/=]+)=([^/]*)\/[^/]+$/.exec(file);
    if (!m) continue;
    const entry = found.get(m[1]!) ?? { column: m[2]!, values: [] };
    expect(entry.column, m[1]).toBe(m[2]);
    entry.values.push(m[3]!);
    found.set(m[1]!, entry);
  }
  return found;
}

describe('partitions, as plain readers type them', () => {
  it('are dates in ISO 8601, which plain DuckDB (hive_partitioning alone), polars and pyarrow (date32 partitioning) read as dates', async () => {
    const { output } = await sharedDemo();
    const datasets = await partitionedDatasets(output);
    expect([...datasets.keys()].map((d) => d.slice(output.length + 1)).sort()).toEqual(
      expect.arrayContaining([
        'bicycle/measurements',
        'derived/bicycle_daily',
        'derived/signs_live_changes',
        'signs/events',
        'signs/live_snapshots',
      ]),
    );
    // A dataset without rows too (signs_live_changes of a demo's one night): its one empty
    // file lies in a partition named by a date, which every reader types as the others.
    const entries = [...datasets];
    for (const [folder, { column, values }] of entries)
      for (const value of values)
        expect(value, `${folder}: ${column}=${value}`).toMatch(/^\d{4}-\d\d-\d\d$/);
    // No hive_types: the types plain DuckDB finds by itself.
    const described = await plainDuckDb(
      output,
      entries.map(
        ([folder, { column }]) =>
          `SELECT column_type FROM (DESCRIBE SELECT * FROM read_parquet('${folder.slice(output.length + 1)}/*/*.parquet', hive_partitioning = true, union_by_name = true)) WHERE column_name = '${column}'`,
      ),
      { views: false },
    );
    expect(described.map((rows) => rows[0]?.['column_type'])).toEqual(entries.map(() => 'DATE'));
    // The moments of the snapshots and of the changes are columns of their files: instants in UTC.
    for (const [folder, column] of [
      ['signs/live_snapshots', 'snapshot'],
      ['derived/signs_live_changes', 'to_moment'],
    ] as const) {
      const [file] = await parquetFiles(join(output, folder));
      const type = (await arrowSchema(file!)).fields.get(column);
      expect(type, `${folder}: ${column}`).toMatch(/^Timestamp<.*UTC>$/);
    }
  });
});

describe("the demo's daily bicycle counts", () => {
  it('say how many hours of a local day lie inside the landed period (1 of 1 November)', async () => {
    const { output } = await sharedDemo();
    // The demo lands October 2026 in UTC: 1 November (CET, UTC+1) has one hour of it,
    // 1 October (CEST, UTC+2) 22, every other day all of its own.
    const november = await csvRows(join(output, 'exports', 'bicycle_daily', '2026-11.csv'));
    expect(november.length).toBeGreaterThan(0);
    for (const row of november) {
      expect(row['local_date']).toBe('2026-11-01');
      expect([row['hours_in_day'], row['hours_in_period']]).toEqual(['24', '1']);
      expect(Number(row['completeness'])).toBeCloseTo(Number(row['hours_present']), 4);
    }
    const october = await csvRows(join(output, 'exports', 'bicycle_daily', '2026-10.csv'));
    const period = new Map(october.map((r) => [r['local_date']!, r['hours_in_period']!]));
    expect(period.get('2026-10-01')).toBe('22');
    expect(period.get('2026-10-25')).toBe('25');
    expect(period.get('2026-10-31')).toBe('24');
  });
});

/** What plain DuckDB (Node) gives for `sql` after running views.sql in `folder`, as JSON rows. */
async function plainViews(folder: string, sql: string): Promise<Record<string, unknown>[]> {
  const [rows] = await plainDuckDb(folder, [sql], { views: true });
  return rows!;
}

/**
 * The rows `road-etl query --format jsonl` prints for `sql` over `output`:
 * the lines holding `column` (the summary line apart).
 */
async function queryRows(
  output: string,
  sql: string,
  column: string,
): Promise<Record<string, unknown>[]> {
  const result = await runCli(['query', '--output', output, '--format', 'jsonl', sql], { env: {} });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => column in l);
}

describe('views.sql', () => {
  it('opens a copy of the folder elsewhere in plain DuckDB with every view road-etl query has, with the same rows', async () => {
    const { output } = await sharedDemo();
    const copy = join(await testDir(), 'published');
    await cp(output, copy, { recursive: true });

    const listing = 'SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name';
    const plainNames = (await plainViews(copy, listing)).map((r) => String(r['view_name']));
    const roadEtlViews = (await queryRows(output, listing, 'view_name')).map((l) =>
      String(l['view_name']),
    );
    expect(roadEtlViews.length).toBeGreaterThan(10);
    expect(plainNames).toEqual(roadEtlViews);

    // Each view's rows: their number and the sum of the rows' hashes.
    const rows = roadEtlViews
      .map(
        (v) =>
          `SELECT '${v}' AS view, count(*) AS n, sum(hash(t)::HUGEINT)::VARCHAR AS h FROM "${v}" t`,
      )
      .join(' UNION ALL ');
    const sql = `SELECT * FROM (${rows}) ORDER BY view`;
    const plain = await plainViews(copy, sql);
    const expected = (await queryRows(output, sql, 'view')).map((l) => ({
      ...l,
      n: String(l['n']),
    }));
    expect(plain.map((l) => ({ ...l, n: String(l['n']) }))).toEqual(expected);
    expect(expected.filter((l) => Number(l['n']) > 0).length).toBeGreaterThan(10);
  }, 60_000);
});

/**
 * Checks exports/dataset.jsonld of a folder against its files: a DCAT dataset
 * with a distribution for every CSV, GeoJSON and FlatGeobuf extract, with the
 * file's size, SHA-256 and media type, and nothing else.
 */
async function expectDescribesExtracts(output: string): Promise<void> {
  const exports = join(output, 'exports');
  const description = JSON.parse(await readFile(join(exports, 'dataset.jsonld'), 'utf8')) as {
    '@type': string;
    'dct:title': { '@value': string };
    'dct:license': { '@id': string };
    'dct:spatial': { 'dcat:bbox': { '@value': string } };
    'dct:temporal': { 'dcat:startDate': { '@value': string } };
    'dcat:distribution': {
      'dcat:downloadURL': { '@id': string };
      'dcat:mediaType': { '@id': string };
      'dcat:byteSize': { '@value': string };
      'spdx:checksum': { 'spdx:checksumValue': { '@value': string } };
    }[];
  };
  expect(description['@type']).toBe('dcat:Dataset');
  expect(description['dct:title']['@value']).not.toBe('');
  expect(description['dct:license']['@id']).toMatch(/creativecommons\.org\/publicdomain\/zero/);
  expect(description['dct:spatial']['dcat:bbox']['@value']).toMatch(/^POLYGON\(\(3\.\d+ 5/);
  // The extracts: every CSV, GeoJSON and FlatGeobuf file under exports/, and nothing else.
  const files = (await readdir(exports, { recursive: true }))
    .map(String)
    .filter((f) => /\.(csv|geojson|fgb)$/.test(f))
    .sort();
  expect(files.length).toBeGreaterThan(8);
  const distributions = description['dcat:distribution'];
  expect(distributions.map((d) => d['dcat:downloadURL']['@id']).sort()).toEqual(files);
  const media: Record<string, string> = {
    csv: 'text/csv',
    geojson: 'application/geo+json',
    fgb: 'application/vnd.flatgeobuf',
  };
  for (const d of distributions) {
    const path = join(exports, d['dcat:downloadURL']['@id']);
    const bytes = await readFile(path);
    expect(Number(d['dcat:byteSize']['@value']), path).toBe(bytes.length);
    expect(d['spdx:checksum']['spdx:checksumValue']['@value'], path).toBe(
      createHash('sha256').update(bytes).digest('hex'),
    );
    expect(d['dcat:mediaType']['@id']).toBe(
      `https://www.iana.org/assignments/media-types/${media[path.split('.').at(-1)!]}`,
    );
  }
}

describe('exports/dataset.jsonld', () => {
  it('describes every extract of the demo as a DCAT distribution with its size and SHA-256', async () => {
    const { output } = await sharedDemo();
    await expectDescribesExtracts(output);
    // The manifest lists it as it is on disk, beside the extracts it describes.
    const manifest = JSON.parse(await readFile(join(output, 'manifest.json'), 'utf8')) as {
      exports: { path: string; sha256: string; format: string }[];
    };
    const listed = manifest.exports.find((e) => e.path === 'exports/dataset.jsonld');
    expect(listed?.format).toBe('jsonld');
    expect(listed?.sha256).toBe(
      createHash('sha256')
        .update(await readFile(join(output, 'exports', 'dataset.jsonld')))
        .digest('hex'),
    );
  });
});

describe('the publication settings', () => {
  it('name the publisher and contact, and make download URLs from base_url', () => {
    const description = describeDataset(
      {
        title: 'Verkeersborden',
        publisher: 'Gemeente Utrecht',
        publisher_uri: 'https://identifier.overheid.nl/tooi/id/gemeente/gm0344',
        contact_email: 'data@example.org',
        license: 'http://creativecommons.org/publicdomain/zero/1.0/deed.nl',
        base_url: 'https://example.org/road-data',
      },
      { title: 'fallback', description: 'fallback' },
      [{ path: 'exports/signs_live.csv', bytes: 10, sha256: 'ab', format: 'csv', rows: 1 }],
      { start: undefined, end: undefined, box: undefined },
    ) as Record<string, Record<string, unknown> & { [k: string]: unknown }>;
    expect(description['@id']).toBe('https://example.org/road-data/dataset.jsonld');
    expect(description['dct:title']).toEqual({ '@value': 'Verkeersborden', '@language': 'en' });
    expect(description['dct:publisher']).toEqual({
      '@id': 'https://identifier.overheid.nl/tooi/id/gemeente/gm0344',
      '@type': 'foaf:Agent',
      'foaf:name': 'Gemeente Utrecht',
    });
    expect(description['dcat:contactPoint']).toMatchObject({
      'vcard:hasEmail': { '@id': 'mailto:data@example.org' },
    });
    const [only] = description['dcat:distribution'] as unknown as Record<string, unknown>[];
    expect(only!['dcat:downloadURL']).toEqual({
      '@id': 'https://example.org/road-data/signs_live.csv',
    });
    expect(description).not.toHaveProperty('dct:temporal');
  });

  it('are asked for by validate while they are the shipped placeholders, and not once set', async () => {
    const shipped = await runCli(['validate', join(ROOT, 'pipelines', 'demo.yaml')], { env: {} });
    expect(shipped.code, shipped.stderr).toBe(0);
    const warnings = shipped.stderr.split('\n').filter((l) => l.startsWith('warning: '));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain(
      'publication.publisher is still the placeholder "Your organisation"',
    );
    expect(warnings[1]).toContain(
      'publication.contact_email is still the placeholder data@example.org',
    );
    // Filled in: no warning, and the description names them.
    const dir = await testDir();
    const definition = (publication: string) => `name: published
source:
  signs: { url: "http://127.0.0.1:9/" }
${publication}
steps:
  - { id: events, kind: signs.events }
  - id: export
    kind: export
    needs: [events]
    options: { query: "SELECT id FROM signs_events", path: exports/ids.csv }
`;
    await writeFile(
      join(dir, 'filled.yaml'),
      definition(
        'publication: { publisher: Gemeente Utrecht, contact_email: opendata@utrecht.nl }',
      ),
    );
    const filled = await runCli(['validate', join(dir, 'filled.yaml')], { env: {} });
    expect(filled.code, filled.stderr).toBe(0);
    expect(filled.stderr).not.toContain('warning:');
    // Not set at all: asked for too.
    await writeFile(join(dir, 'unset.yaml'), definition(''));
    const unset = await runCli(['validate', join(dir, 'unset.yaml')], { env: {} });
    expect(unset.code, unset.stderr).toBe(0);
    expect(unset.stderr).toContain('warning: publication.publisher is not set');
    expect(unset.stderr).toContain('warning: publication.contact_email is not set');
  });

  it('take an identifier the operator sets', () => {
    const description = describeDataset(
      {
        license: 'http://creativecommons.org/publicdomain/zero/1.0/deed.nl',
        identifier: 'https://data.example.nl/id/dataset/verkeersborden',
      },
      { title: 'fallback', description: 'fallback', identifier: 'urn:uuid:kept' },
      [],
      { start: undefined, end: undefined, box: undefined },
    );
    expect(description['@id']).toBe('https://data.example.nl/id/dataset/verkeersborden');
    expect(description['dct:identifier']).toBe('https://data.example.nl/id/dataset/verkeersborden');
  });
});

describe("the demo's extracts", () => {
  it('mark every mis-encoded name in typing_issues, beside the text as received', async () => {
    const { output } = await sharedDemo();
    // UTF-8 read as Latin-1 and encoded again: Ã or Â before a byte 0x80..0xBF.
    const misEncoded = /[ÃÂ][\u0080-\u00bf]/;
    let marked = 0;
    for (const name of ['signs_current_state.csv', 'signs_live.csv']) {
      const rows = await csvRows(join(output, 'exports', name));
      for (const row of rows) {
        const issues =
          row['typing_issues'] === '' ? [] : (JSON.parse(row['typing_issues']!) as string[]);
        for (const [column, value] of Object.entries(row)) {
          if (column === 'typing_issues' || !misEncoded.test(value)) continue;
          expect(issues, `${name}: ${column} ${value}`).toContain(
            `${column}: mis-encoded UTF-8 (${value})`,
          );
          marked++;
        }
      }
    }
    expect(marked).toBeGreaterThan(0);
    // The bicycle locations' names too, by the same rule, in the catalog and its extracts.
    const geojson = JSON.parse(
      await readFile(join(output, 'exports', 'bicycle_locations.geojson'), 'utf8'),
    ) as { features: { properties: Record<string, unknown> }[] };
    let locations = 0;
    for (const { properties } of geojson.features)
      for (const column of ['name', 'authority', 'contractor']) {
        const value = properties[column];
        if (typeof value !== 'string' || !misEncoded.test(value)) continue;
        expect(properties['typing_issues'], `${column} ${value}`).toContain(
          `${column}: mis-encoded UTF-8 (${value})`,
        );
        locations++;
      }
    expect(locations).toBeGreaterThan(0);
    const catalog = await duck(
      `SELECT count(*) AS n FROM read_parquet('${output}/bicycle/locations/*.parquet') WHERE len(typing_issues) > 0`,
    );
    expect(Number(catalog[0]?.['n'])).toBe(locations);
  });
});

describe('a two-day live folder', () => {
  it('has signs_live_changes in its final layout from the first day, empty: GeoParquet, to_moment typed; the first change replaces it', async () => {
    const dir = await testDir();
    const yaml = await readFile(join(ROOT, 'pipelines', 'traffic-signs-live.yaml'), 'utf8');
    const sql = {
      'signs_live_changes.sql': await readFile(join(ROOT, 'sql', 'signs_live_changes.sql'), 'utf8'),
    };
    const start = live.world.now;
    const folders = (output: string) =>
      readdir(join(output, 'derived', 'signs_live_changes')).then((names) => names.sort());
    let output: string | undefined;
    try {
      const first = await runDefinition(dir, yaml, sql, { env: { ...live.env } });
      expect(first.summary.status, first.failure?.message).toBe('succeeded');
      output = first.output;
      // One day: no pair of snapshots, no change; the layout is that of every later day, its
      // one file without rows in a partition named by a date (this month's first day).
      const month = new Date().toISOString().slice(0, 7);
      expect(await folders(output)).toEqual([`to_date=${month}-01`]);
      expect(
        await readdir(join(output, 'derived', 'signs_live_changes', `to_date=${month}-01`)),
      ).toEqual([expect.stringMatching(/^empty\.v[\w-]+\.parquet$/)]);
      const [empty] = await parquetFiles(join(output, 'derived', 'signs_live_changes'));
      const { fields, metadata } = await arrowSchema(empty!);
      expect((await arrowTable(empty!)).numRows).toBe(0);
      const geo = JSON.parse(metadata.get('geo')!) as { primary_column: string };
      expect(geo.primary_column).toBe('geometry');
      expect(fields.get('sign_id')).toBe('Utf8');
      // As plain DuckDB reads it with views.sql: to_date a date, to_moment an instant, no rows.
      const described = await plainViews(
        output,
        `SELECT column_name, column_type FROM (DESCRIBE signs_live_changes) WHERE column_name IN ('to_date', 'to_moment', 'geometry') ORDER BY 1`,
      );
      expect(described.map((r) => String(r['column_type']))).toEqual([
        expect.stringMatching(/^GEOMETRY/),
        'DATE',
        'TIMESTAMP WITH TIME ZONE',
      ]);

      live.world.setNow(new Date(start + 86_400_000).toISOString());
      const second = await runDefinition(dir, yaml, sql, { env: { ...live.env } });
      expect(second.summary.status, second.failure?.message).toBe('succeeded');
    } finally {
      live.world.setNow(new Date(start).toISOString());
    }
    const secondDay = await folders(output!);
    expect(secondDay).toHaveLength(1);
    expect(secondDay[0]).toMatch(/^to_date=\d{4}-\d\d-\d\d$/);
    const [changes] = await parquetFiles(join(output!, 'derived', 'signs_live_changes'));
    const table = await arrowTable(changes!);
    expect(table.numRows).toBeGreaterThan(0);
    expect(JSON.parse((await arrowSchema(changes!)).metadata.get('geo')!)).toMatchObject({
      primary_column: 'geometry',
    });
  }, 120_000);
});

describe('the positioned datasets read by Arrow', () => {
  it('are GeoParquet 1.1: a bbox covering column equal to each row’s point, named in the geo metadata', async () => {
    const { output } = await sharedDemo();
    const positioned: Record<string, [string, string]> = {
      'bicycle/locations': ['longitude', 'latitude'],
      'derived/bicycle_location_summary': ['longitude', 'latitude'],
      'derived/signs_current_state': ['location_wgs84_longitude', 'location_wgs84_latitude'],
      'signs/events': ['location_wgs84_longitude', 'location_wgs84_latitude'],
      'signs/snapshot': ['location_wgs84_longitude', 'location_wgs84_latitude'],
      'signs/live_snapshots': ['longitude', 'latitude'],
    };
    let rows = 0;
    for (const [dataset, [lon, lat]] of Object.entries(positioned)) {
      const files = await parquetFiles(join(output, dataset));
      for (const file of new Set([files[0]!, files.at(-1)!])) {
        const { metadata } = await arrowSchema(file);
        const geo = JSON.parse(metadata.get('geo') ?? 'null') as {
          version: string;
          columns: { geometry: { covering: { bbox: Record<string, string[]> } } };
        };
        expect(geo.version, file).toBe('1.1.0');
        expect(geo.columns.geometry.covering.bbox.xmin).toEqual(['bbox', 'xmin']);
        const table = await arrowTable(file);
        const boxes = table.getChild('bbox')!;
        const [x, y] = [table.getChild(lon)!, table.getChild(lat)!];
        for (let i = 0; i < table.numRows; i++) {
          const box = boxes.get(i) as { toJSON(): Record<string, number> } | null;
          const point = [x.get(i) as number | null, y.get(i) as number | null];
          const expected =
            point[0] === null || point[1] === null
              ? null
              : { xmin: point[0], ymin: point[1], xmax: point[0], ymax: point[1] };
          expect(box?.toJSON() ?? null, `${file} row ${i}`).toEqual(expected);
          rows++;
        }
      }
    }
    expect(rows).toBeGreaterThan(1000);
  });
});
