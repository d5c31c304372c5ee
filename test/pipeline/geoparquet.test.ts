import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { NO_GDAL, OGRINFO, ogrFeatures, ogrSummary } from '../helpers/gdal.js';
import { duck, testDir } from '../helpers/tmp.js';
import { HILBERT_EXTENT } from '../../src/duckdb/geoparquet.js';
import { withHilbert } from '../../src/duckdb/hilbert.js';

const simulator = await useSimulator({
  seed: 31,
  signs: { signs: 400, feedStart: '2026-01-01T00:00:00.000Z' },
  bicycle: { locations: 30 },
});
const DAY = 86_400_000;

async function sqlFiles(names: string[]): Promise<Record<string, string>> {
  return Object.fromEntries(
    await Promise.all(names.map(async (f) => [f, await readFile(join(ROOT, 'sql', f), 'utf8')])),
  ) as Record<string, string>;
}

const V1_SQL = ['signs_current_state.sql', 'signs_current_state_fold.sql', 'signs_reconcile.sql'];
const LIVE_SQL = ['signs_live_changes.sql'];
const LOCATIONS = `name: locations
source:
  bicycle:
    url: '\${env.ROAD_ETL_BICYCLE_URL}'
    auth_url: '\${env.ROAD_ETL_AUTH_URL}'
    username: '\${env.ROAD_ETL_USERNAME}'
    password: '\${env.ROAD_ETL_PASSWORD}'
    client_id: '\${env.ROAD_ETL_CLIENT_ID}'
steps:
  - { id: bicycle_locations, kind: bicycle.locations }
  - id: export_locations
    kind: export
    needs: [bicycle_locations]
    options: { table: bicycle_locations, path: exports/bicycle_locations.fgb }
`;

async function run(dir: string, yaml: string, sql: string[]): Promise<string> {
  const result = await runDefinition(dir, yaml, await sqlFiles(sql), {
    env: { ...simulator.env },
  });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

const shipped = (name: string) => readFile(join(ROOT, 'pipelines', name), 'utf8');

/** Every Parquet file of a dataset folder (partitions included). */
async function parquetFiles(folder: string): Promise<string[]> {
  return (await readdir(folder, { recursive: true }))
    .map(String)
    .filter((f) => f.endsWith('.parquet') && !f.split('/').some((p) => p.startsWith('.')))
    .map((f) => join(folder, f))
    .sort();
}

/** A WKB Point (as DuckDB gives a BLOB: text with \xNN escapes) decoded by hand: [x, y]. */
function wkbPoint(blob: string): [number, number] {
  const bytes: number[] = [];
  for (let i = 0; i < blob.length;) {
    if (blob[i] === '\\' && blob[i + 1] === 'x') {
      bytes.push(parseInt(blob.slice(i + 2, i + 4), 16));
      i += 4;
    } else {
      bytes.push(blob.charCodeAt(i));
      i += 1;
    }
  }
  const view = new DataView(Uint8Array.from(bytes).buffer);
  const little = view.getUint8(0) === 1;
  expect(view.getUint32(1, little)).toBe(1); // a Point
  return [view.getFloat64(5, little), view.getFloat64(13, little)];
}

/**
 * Checks one dataset: each file is GeoParquet 1.1 (geo metadata naming the WKB
 * Point column `geometry` and its covering `bbox` column), the box of each row
 * is its point, the geometry read back is the row's longitude and latitude,
 * exactly, and (unless `ordered` is false: a snapshot of the current state,
 * written as it came) the rows of each file follow the Hilbert curve.
 * Resolves to the rows checked.
 */
async function checkGeoParquet(
  folder: string,
  lon: string,
  lat: string,
  ordered = true,
): Promise<number> {
  const files = await parquetFiles(folder);
  expect(files.length, folder).toBeGreaterThan(0);
  const glob = `${folder}/**/*.parquet`;
  const metadata = await duck(
    `SELECT file_name, decode(value) AS geo FROM parquet_kv_metadata('${glob}') WHERE decode(key) = 'geo'`,
  );
  // Every file has its own metadata, naming the WKB Point column and its covering box.
  expect(metadata.map((m) => String(m['file_name'])).sort(), folder).toEqual(files);
  for (const m of metadata) {
    const geo = JSON.parse(String(m['geo'])) as {
      version: string;
      primary_column: string;
      columns: Record<
        string,
        { encoding: string; geometry_types: string[]; covering: { bbox: Record<string, string[]> } }
      >;
    };
    expect(geo.version).toBe('1.1.0');
    expect(geo.primary_column).toBe('geometry');
    const column = geo.columns['geometry']!;
    expect(column.encoding).toBe('WKB');
    expect(column.geometry_types).toEqual(['Point']);
    expect(column.covering.bbox).toEqual({
      xmin: ['bbox', 'xmin'],
      ymin: ['bbox', 'ymin'],
      xmax: ['bbox', 'xmax'],
      ymax: ['bbox', 'ymax'],
    });
  }
  const points = await duck(
    `SELECT filename AS file, file_row_number AS n, ${lon} AS lon, ${lat} AS lat, ST_AsWKB(geometry)::VARCHAR AS wkb, bbox
     FROM read_parquet('${glob}', hive_partitioning = false, filename = true, file_row_number = true)
     ORDER BY file, n`,
  );
  let rows = 0;
  for (const p of points) {
    if (p['lon'] === null || p['lat'] === null) {
      expect(p['wkb']).toBeNull();
      expect(p['bbox']).toBeNull();
      continue;
    }
    expect(wkbPoint(String(p['wkb']))).toEqual([p['lon'], p['lat']]);
    expect(p['bbox']).toEqual({ xmin: p['lon'], ymin: p['lat'], xmax: p['lon'], ymax: p['lat'] });
    rows++;
  }
  if (ordered) {
    // The curve's index of each row, file by file in the file's order: never decreasing.
    const curve = await duck(
      withHilbert(
        `SELECT filename AS file, file_row_number AS n, ${lon}, ${lat} FROM read_parquet('${glob}', hive_partitioning = false, filename = true, file_row_number = true)`,
        lon,
        lat,
        HILBERT_EXTENT,
      ) + ' ORDER BY file, n',
    );
    const unordered = curve.filter(
      (r, i) =>
        i > 0 &&
        curve[i - 1]!['file'] === r['file'] &&
        Number(curve[i - 1]!['hilbert']) > Number(r['hilbert']),
    );
    expect(unordered, folder).toEqual([]);
  }
  return rows;
}

/** The type GDAL gives a FlatGeobuf field of a column of each DuckDB type (nested types: JSON text). */
const GDAL_TYPE: Record<string, string> = {
  BIGINT: 'Integer64',
  INTEGER: 'Integer',
  SMALLINT: 'Integer',
  DOUBLE: 'Real',
  BOOLEAN: 'Integer(Boolean)',
  VARCHAR: 'String',
  UUID: 'String',
  JSON: 'String',
  DATE: 'DateTime',
  'TIMESTAMP WITH TIME ZONE': 'DateTime',
};

/**
 * Checks a FlatGeobuf extract as GDAL opens it against the rows it was made
 * from (`sql`): WGS 84, a feature per row, each column a field of its type,
 * each feature at its row's position. Resolves to the features checked.
 */
async function checkFlatGeobuf(
  file: string,
  sql: string,
  id: string,
  lon: string,
  lat: string,
): Promise<number> {
  const rows = await duck(sql);
  const columns = await duck(`DESCRIBE ${sql}`);
  const summary = await ogrSummary(file);
  expect(summary.crs, file).toBe('EPSG:4326');
  expect(summary.count, file).toBe(rows.length);
  const expected: Record<string, string> = {};
  for (const c of columns) {
    const [name, type] = [String(c['column_name']), String(c['column_type'])];
    if (name === lon || name === lat || type.startsWith('GEOMETRY')) continue;
    expected[name] = GDAL_TYPE[type] ?? (/[[\]]|^STRUCT|^MAP/.test(type) ? 'String' : type);
  }
  expect(summary.fields, file).toEqual(expected);
  const features = new Map(
    (await ogrFeatures(file)).map((f) => [String(f.properties[id]), f.geometry]),
  );
  expect(features.size, file).toBe(rows.length);
  for (const row of rows) {
    const geometry = features.get(String(row[id]));
    if (row[lon] === null || row[lat] === null) expect(geometry).toBeNull();
    else {
      // GDAL prints 15 significant digits: equal to well under a micrometre.
      const [x, y] = geometry!.coordinates;
      expect(x, String(row[id])).toBeCloseTo(Number(row[lon]), 12);
      expect(y, String(row[id])).toBeCloseTo(Number(row[lat]), 12);
    }
  }
  return rows.length;
}

describe('GeoParquet', () => {
  it('every dataset with a position carries its WGS 84 points as GeoParquet, equal to longitude and latitude', async () => {
    const dir = await testDir();
    const start = simulator.world.now;
    try {
      await run(dir, await shipped('traffic-signs.yaml'), V1_SQL);
      for (let day = 0; day < 2; day++) {
        simulator.world.setNow(new Date(start + day * DAY).toISOString());
        await run(dir, await shipped('traffic-signs-live.yaml'), LIVE_SQL);
      }
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }
    const output = await run(dir, LOCATIONS, []);
    const wgs = ['location_wgs84_longitude', 'location_wgs84_latitude'] as const;
    const checked: Record<string, number> = {};
    for (const [dataset, lon, lat, ordered] of [
      ['signs/events', ...wgs],
      ['signs/snapshot', ...wgs, false],
      ['derived/signs_current_state', ...wgs],
      ['signs/live_snapshots', 'longitude', 'latitude', false],
      ['derived/signs_live_changes', 'longitude', 'latitude'],
      ['bicycle/locations', 'longitude', 'latitude'],
    ] as const)
      checked[dataset] = await checkGeoParquet(join(output, dataset), lon, lat, ordered);
    for (const [dataset, n] of Object.entries(checked)) expect(n, dataset).toBeGreaterThan(0);

    // The extracts: WKT in a CSV, and GeoJSON coordinates of 7 decimals without the geometry again.
    const csv = await readFile(join(output, 'exports', 'signs_current_state.csv'), 'utf8');
    const header = csv.split('\r\n')[0]!.split(',');
    expect(header).toContain('geometry');
    expect(csv).toMatch(/,POINT \(\d+\.\d+ \d+\.\d+\)/);
    const geojson = JSON.parse(
      await readFile(join(output, 'exports', 'signs_current_state.geojson'), 'utf8'),
    ) as { features: { geometry: { coordinates: number[] }; properties: object }[] };
    expect(geojson.features.length).toBeGreaterThan(0);
    for (const f of geojson.features) {
      expect(f.properties).not.toHaveProperty('geometry');
      for (const c of f.geometry.coordinates) expect(Math.round(c * 1e7) / 1e7).toBe(c);
    }

    // The spatially indexed extracts, as GDAL (and so QGIS) opens them.
    if (!OGRINFO) {
      console.warn(`test/pipeline/geoparquet.test.ts: ${NO_GDAL}`);
      return;
    }
    const exports = join(output, 'exports');
    const parquet = (dataset: string, where = '') =>
      `(SELECT * EXCLUDE (geometry, bbox) FROM read_parquet('${join(output, dataset)}/**/*.parquet', hive_partitioning = true) ${where})`;
    const features = {
      signs: await checkFlatGeobuf(
        join(exports, 'signs_current_state.fgb'),
        `(SELECT * EXCLUDE (raw_event, event_hash) FROM ${parquet('derived/signs_current_state')})`,
        'id',
        ...wgs,
      ),
      live: await checkFlatGeobuf(
        join(exports, 'signs_live.fgb'),
        `(SELECT * EXCLUDE (properties, api, downloaded_at, fingerprint, snapshot, snapshot_date) FROM ${parquet(
          'signs/live_snapshots',
          `WHERE snapshot = (SELECT max(snapshot) FROM read_parquet('${join(output, 'signs/live_snapshots')}/**/*.parquet', hive_partitioning = true))`,
        )})`,
        'sign_id',
        'longitude',
        'latitude',
      ),
      locations: await checkFlatGeobuf(
        join(exports, 'bicycle_locations.fgb'),
        parquet('bicycle/locations'),
        'location_id',
        'longitude',
        'latitude',
      ),
    };
    expect(features.signs).toBe(checked['derived/signs_current_state']);
    expect(features.locations).toBe(30);
  }, 180_000);
});
