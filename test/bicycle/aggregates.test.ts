import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRfc4180 } from '../helpers/csv.js';
import { idsWithPrefix, localParts, shippedBicycle } from '../helpers/bicycle.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 8,
  bicycle: { locations: 30, maxLocations: 10, maxPeriodDays: 4 },
});

interface DailyTruth {
  total: number | null;
  hours: number;
}

/** Daily totals and hours with a value per location, local date, category and subcategory, from the simulator. */
function dailyTruth(ids: string[], start: string, end: string): Map<string, DailyTruth> {
  const truth = new Map<string, DailyTruth>();
  for (const row of simulator.world.measurements(ids, Date.parse(start), Date.parse(end))) {
    const { date } = localParts(row.measurementHour);
    for (const [category, subs] of Object.entries(row.measuredValuesFull)) {
      for (const [sub, value] of Object.entries(subs)) {
        const key = `${row.locationId}|${date}|${category}|${sub}`;
        const cell = truth.get(key) ?? { total: null, hours: 0 };
        if (value !== null) {
          cell.total = (cell.total ?? 0) + value;
          cell.hours++;
        }
        truth.set(key, cell);
      }
    }
  }
  return truth;
}

async function runBicyclePipeline(dir: string, start: string, end: string, prefixes: string) {
  const { yaml, sql } = await shippedBicycle();
  const result = await runDefinition(dir, yaml, sql, {
    env: { ...simulator.env },
    params: { start, end, prefixes },
  });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

describe('bicycle aggregates (pipelines/bicycle.yaml)', () => {
  it.each([
    ['2026-03-27T00:00:00Z', '2026-04-01T00:00:00Z', '2026-03-29', 23],
    ['2026-10-23T00:00:00Z', '2026-10-28T00:00:00Z', '2026-10-25', 25],
  ])(
    'daily totals are the sums of the hourly values by Dutch local date (%s .. %s, %s has %i hours)',
    async (start, end, dstDay, dstHours) => {
      const dir = await testDir();
      const output = await runBicyclePipeline(dir, start, end, 'UTR,GRN');
      const ids = idsWithPrefix(simulator, 'UTR', 'GRN');
      const truth = dailyTruth(ids, start, end);
      // Every UTC hour of the period, counted on its Dutch local date.
      const periodHours = new Map<string, number>();
      for (let t = Date.parse(start); t < Date.parse(end); t += 3_600_000) {
        const { date } = localParts(new Date(t).toISOString());
        periodHours.set(date, (periodHours.get(date) ?? 0) + 1);
      }
      expect(periodHours.get(localParts(start).date)).toBeLessThan(24);

      // One file per local month: the period's days are in those of its months, each once.
      const files = (await readdir(join(output, 'exports/bicycle_daily'))).sort();
      const months = files.filter((f) => f.endsWith('.csv'));
      // Each beside its CSVW metadata and CSVT.
      expect(files.filter((f) => !f.endsWith('.csv'))).toEqual(
        months.flatMap((m) => [`${m}-metadata.json`, `${m.slice(0, -4)}.csvt`]),
      );
      expect(months).toEqual(
        [...new Set([start, end].map((t) => localParts(t).date.slice(0, 7)))].map(
          (m) => `${m}.csv`,
        ),
      );
      const daily: Record<string, string>[] = [];
      for (const month of months) {
        const [header, ...records] = parseRfc4180(
          await readFile(join(output, 'exports/bicycle_daily', month), 'utf8'),
        );
        for (const r of records) {
          const row = Object.fromEntries(header!.map((h, i) => [h, r[i]!]));
          expect(`${row['local_date']!.slice(0, 7)}.csv`).toBe(month);
          daily.push(row);
        }
      }
      const got = new Map(
        daily.map((r) => [
          `${r['location_id']}|${r['local_date']}|${r['category']}|${r['subcategory']}`,
          r,
        ]),
      );
      expect(daily.length).toBe(truth.size);
      for (const [key, cell] of truth) {
        const row = got.get(key)!;
        expect(row, key).toBeDefined();
        expect(row['total'] === '' ? null : Number(row['total']), key).toBe(cell.total);
        expect(Number(row['hours_present']), key).toBe(cell.hours);
        const date = key.split('|')[1]!;
        const hoursInDay = date === dstDay ? dstHours : 24;
        expect(Number(row['hours_in_day']), key).toBe(hoursInDay);
        // The hours of the local day inside the period asked for: fewer on its first and last.
        const inPeriod = periodHours.get(date)!;
        expect(Number(row['hours_in_period']), key).toBe(inPeriod);
        expect(Number(row['completeness']), key).toBeCloseTo(cell.hours / inPeriod, 4);
      }
      // The DST day is there, with its own length.
      expect(
        daily.some((r) => r['local_date'] === dstDay && r['hours_in_day'] === String(dstHours)),
      ).toBe(true);
    },
  );

  it('builds the hour-of-day profile in local time and the per-location summary', async () => {
    const dir = await testDir();
    const [start, end] = ['2026-10-19T00:00:00Z', '2026-11-02T00:00:00Z'];
    const output = await runBicyclePipeline(dir, start, end, 'RTD');
    const ids = idsWithPrefix(simulator, 'RTD');
    const rows = simulator.world.measurements(ids, Date.parse(start), Date.parse(end));

    // Profile: mean of richting/heen per location, weekday or weekend, local hour.
    const sums = new Map<string, { sum: number; n: number }>();
    for (const row of rows) {
      const { hour, weekend } = localParts(row.measurementHour);
      const value = row.measuredValuesFull['richting']!['heen'];
      if (value === null || value === undefined) continue;
      const key = `${row.locationId}|${weekend ? 'weekend' : 'weekday'}|${hour}`;
      const cell = sums.get(key) ?? { sum: 0, n: 0 };
      cell.sum += value;
      cell.n++;
      sums.set(key, cell);
    }
    const profile = await duck(
      `SELECT location_id || '|' || day_type || '|' || local_hour_of_day AS key, mean_value, hours_averaged
       FROM read_parquet('${output}/derived/bicycle_hour_profile/*.parquet')
       WHERE category = 'richting' AND subcategory = 'heen'`,
    );
    expect(profile.length).toBe(sums.size);
    for (const row of profile) {
      const cell = sums.get(row['key'] as string)!;
      // rounded to 2 decimals
      expect(Math.abs(Number(row['mean_value']) - cell.sum / cell.n)).toBeLessThanOrEqual(
        0.005 + 1e-9,
      );
      expect(Number(row['hours_averaged'])).toBe(cell.n);
    }

    // Summary: hours with a measurement out of the period's 336, totals per subcategory.
    const geojson = JSON.parse(
      await readFile(join(output, 'exports/bicycle_locations.geojson'), 'utf8'),
    ) as {
      features: {
        id: string;
        geometry: { coordinates: [number, number] };
        properties: Record<string, unknown>;
      }[];
    };
    expect(geojson.features).toHaveLength(simulator.world.bicycle.locations.length);
    const byId = new Map(geojson.features.map((f) => [f.id, f]));
    const measured = ids.filter((id) => rows.some((r) => r.locationId === id));
    expect(measured.length).toBeGreaterThan(0);
    for (const id of measured) {
      const own = rows.filter((r) => r.locationId === id);
      const feature = byId.get(id)!;
      const location = simulator.world.bicycle.byId(id)!;
      // The position to 7 decimals (RFC 7946 11.2): within half a unit of the 7th.
      const [lon, lat] = feature.geometry.coordinates;
      expect(Math.abs(lon - location.longitude)).toBeLessThanOrEqual(0.5e-7 + 1e-12);
      expect(Math.abs(lat - location.latitude)).toBeLessThanOrEqual(0.5e-7 + 1e-12);
      expect([Number(lon.toFixed(7)), Number(lat.toFixed(7))]).toEqual([lon, lat]);
      expect(feature.properties['hours_present']).toBe(own.length);
      expect(feature.properties['hours_in_period']).toBe(14 * 24);
      expect(feature.properties['completeness']).toBeCloseTo(own.length / (14 * 24), 4);
      const totals = feature.properties['totals'] as Record<string, Record<string, number | null>>;
      const heen = own.reduce((s, r) => s + (r.measuredValuesFull['richting']!['heen'] ?? 0), 0);
      expect(totals['richting']!['heen']).toBe(heen);
    }
    // Locations without a measurement in the period (counters that ended, or not selected) were
    // counted in none of its hours: 0 hours, completeness 0, no totals.
    const unmeasured = [
      ...ids.filter((id) => !measured.includes(id)),
      geojson.features.find((f) => !f.id.startsWith('RTD'))!.id,
    ];
    for (const id of unmeasured) {
      const p = byId.get(id)!.properties;
      expect([p['hours_present'], p['completeness'], p['totals'] ?? null], id).toEqual([
        0,
        0,
        null,
      ]);
    }
  });
});
