import { committed } from '../helpers/committed.js';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shippedBicycle } from '../helpers/bicycle.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 5, bicycle: { locations: 20 } });

const output = await (async () => {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-times-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const { yaml, sql } = await shippedBicycle();
  const result = await runDefinition(dir, yaml, sql, {
    env: { ...simulator.env },
    params: { start: '2026-10-24T00:00:00Z', end: '2026-10-27T00:00:00Z', prefixes: 'GAL' },
  });
  if (result.failure) throw result.failure;
  return result.output;
})();

/** The Parquet logical type of a column in a file, as its footer has it. */
async function logicalType(file: string, column: string): Promise<string> {
  const [row] = await duck(
    `SELECT logical_type, converted_type FROM parquet_schema('${file}') WHERE name = '${column}'`,
  );
  return `${String(row?.['logical_type'])} ${String(row?.['converted_type'])}`;
}

async function firstFile(folder: string): Promise<string> {
  const files = (await readdir(folder, { recursive: true }))
    .map(String)
    .filter((f) => f.endsWith('.parquet'))
    .sort();
  return join(folder, files[0]!);
}

async function csvRows(folder: string): Promise<Record<string, string>[]> {
  const rows: Record<string, string>[] = [];
  for (const name of (await readdir(folder)).filter((f) => f.endsWith('.csv')).sort()) {
    const [header, ...records] = parseRfc4180(await readFile(join(folder, name), 'utf8'));
    for (const r of records) rows.push(Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
  }
  return rows;
}

describe('times that cannot be misread', () => {
  it('keeps every UTC instant UTC-adjusted in Parquet, so that Arrow, Polars and Spark read it as UTC', async () => {
    const measurements = await firstFile(join(output, 'bicycle/measurements'));
    expect(await logicalType(measurements, 'measurement_hour')).toMatch(/isAdjustedToUTC=1/);
    const hourly = await firstFile(join(output, 'derived/bicycle_hourly'));
    expect(await logicalType(hourly, 'measurement_hour')).toMatch(/isAdjustedToUTC=1/);
    // The local wall-clock hour is text with its offset: no reader can take it for UTC.
    expect(await logicalType(hourly, 'local_hour')).toMatch(/UTF8|String/i);
    const summary = committed(output, 'derived/bicycle_location_summary/data.parquet');
    expect(await logicalType(summary, 'first_hour')).toMatch(/isAdjustedToUTC=1/);
    const locations = committed(output, 'bicycle/locations/data.parquet');
    expect(await logicalType(locations, 'valid_from')).toMatch(/isAdjustedToUTC=1/);
  });

  it('writes local hours with their offset, never Z, and the same instant as the UTC hour', async () => {
    const rows = await csvRows(join(output, 'exports/bicycle_hourly'));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row['local_hour']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00:00\+0[12]:00$/);
      expect(row['measurement_hour']).toMatch(/Z$/);
      // JavaScript's own parser: the local hour with its offset is the UTC hour.
      expect(Date.parse(row['local_hour']!)).toBe(Date.parse(row['measurement_hour']!));
      expect(row['local_date']).toBe(row['local_hour']!.slice(0, 10));
    }
    // The hour that repeats when summer time ends: once in summer time, once in winter time.
    const repeated = new Set(
      rows.filter((r) => r['local_hour']!.startsWith('2026-10-25T02:')).map((r) => r['local_hour']),
    );
    expect([...repeated].sort()).toEqual([
      '2026-10-25T02:00:00+01:00',
      '2026-10-25T02:00:00+02:00',
    ]);
  });

  it('has no time ending in Z in an extract but UTC instants', async () => {
    const daily = await csvRows(join(output, 'exports/bicycle_daily'));
    for (const row of daily) expect(row['local_date']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const geojson = JSON.parse(
      await readFile(join(output, 'exports/bicycle_locations.geojson'), 'utf8'),
    ) as { features: { properties: Record<string, unknown> }[] };
    const withZ = new Set(
      geojson.features.flatMap(({ properties }) =>
        Object.entries(properties)
          .filter(([, v]) => typeof v === 'string' && /\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(v))
          .map(([key]) => key),
      ),
    );
    expect([...withZ].sort()).toEqual(['first_hour', 'last_hour']);
  });
});
