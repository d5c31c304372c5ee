import { stateText } from '../helpers/committed.js';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError, RunError } from '../../src/errors.js';
import {
  idsWithPrefix,
  landedMeasurements,
  measurementsPipeline,
  truthMeasurements,
} from '../helpers/bicycle.js';
import { runCli } from '../helpers/cli.js';
import { runDefinition, readManifest } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir, writeFiles } from '../helpers/tmp.js';
import { wgs84ToRd } from '../../src/util/geo.js';

// Small hidden limits (7 locations, 3 days per request) so that a short test
// needs many batches and learns both; 1 % of the rows carry minutes (:15).
const simulator = await useSimulator({
  seed: 21,
  bicycle: { locations: 40, maxLocations: 7, maxPeriodDays: 3, offHourRate: 0.01 },
});
const env = { ...simulator.env };

// Ten days over the change to summer time (2026-03-29).
const START = '2026-03-21T00:00:00Z';
const END = '2026-03-31T00:00:00Z';

async function manifestNotes(output: string): Promise<Record<string, unknown>> {
  const { run } = await readManifest(output);
  return run.steps.find((s) => s.id === 'measurements')!.notes!;
}

function checkpoint(output: string): Record<string, unknown> {
  return (
    JSON.parse(stateText(output, 'measurements.json')) as {
      checkpoint: Record<string, unknown>;
    }
  ).checkpoint;
}

/** `road-etl plan --verbose` of the measurements step of dir/pipelines/p.yaml on `output`. */
function planned(dir: string, output: string) {
  return runCli(
    [
      'plan',
      join(dir, 'pipelines', 'p.yaml'),
      '--output',
      output,
      '--select',
      'measurements',
      '--verbose',
    ],
    { env },
  );
}

async function run(dir: string, options: Record<string, unknown>) {
  const result = await runDefinition(dir, measurementsPipeline(options), {}, { env });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result;
}

describe('bicycle.measurements: selections', () => {
  it('lands listed locations: the simulator rows, whole hours only', async () => {
    const dir = await testDir();
    const ids = idsWithPrefix(simulator, 'GAL', 'UTR', 'RTD').slice(0, 11);
    const { output, logger } = await run(dir, {
      start: START,
      end: END,
      locations: [...ids, 'NOPE_00001'],
    });
    const truth = truthMeasurements(simulator, ids, START, END);
    expect(truth.kept.length).toBeGreaterThan(2000);
    expect(await landedMeasurements(output)).toEqual(truth.kept);
    expect(logger.events.some((e) => e.event === 'bicycle.unknown_locations')).toBe(true);
    // Nothing is left of the run's copy once its commit has landed.
    expect(await readdir(join(output, '.state', 'work')).catch(() => [])).toEqual([]);
  });

  it('quarantines rows that are not whole hours, with the reason and the raw row', async () => {
    const dir = await testDir();
    const ids = idsWithPrefix(simulator, 'GAL', 'UTR', 'RTD');
    const { output } = await run(dir, { start: START, end: END, prefixes: ['GAL', 'UTR', 'RTD'] });
    const truth = truthMeasurements(simulator, ids, START, END);
    expect(truth.offHour.length).toBeGreaterThan(5);
    expect(await landedMeasurements(output)).toEqual(truth.kept);
    const quarantined = await duck(
      `SELECT location_id || ' ' || (raw_row ->> '$.measurementHour') AS row, reason
       FROM read_parquet('${output}/bicycle/quarantine/*.parquet')`,
    );
    expect(quarantined.map((r) => r['row']).sort()).toEqual(truth.offHour);
    expect(quarantined.every((r) => /not a whole hour/.test(r['reason'] as string))).toBe(true);
  });

  it('resolves a polygon against the catalog (point in polygon)', async () => {
    const dir = await testDir();
    // A box around Utrecht: inside means longitude and latitude within it.
    const [w, s, e, n] = [5.0, 51.95, 5.4, 52.2];
    await writeFiles(dir, {
      'area.geojson': JSON.stringify({
        type: 'FeatureCollection',
        features: [
          {
            type: 'Feature',
            properties: {},
            geometry: {
              type: 'Polygon',
              coordinates: [
                [
                  [w, s],
                  [e, s],
                  [e, n],
                  [w, n],
                  [w, s],
                ],
              ],
            },
          },
        ],
      }),
    });
    const ids = simulator.world.bicycle.locations
      .filter((l) => l.longitude > w && l.longitude < e && l.latitude > s && l.latitude < n)
      .map((l) => l.id);
    expect(ids.length).toBeGreaterThan(3);
    const { output } = await run(dir, {
      start: START,
      end: '2026-03-25T00:00:00Z',
      polygon: join(dir, 'area.geojson'),
    });
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(simulator, ids, START, '2026-03-25T00:00:00Z').kept,
    );
  });

  it('selects the locations inside a MultiPolygon, a FeatureCollection of several features and an RD New polygon, as users have them', async () => {
    const locations = simulator.world.bicycle.locations;
    // Box edges halfway between neighbouring locations, so that no location lies near one.
    const between = (values: number[], fraction: number) => {
      const sorted = [...values].sort((a, b) => a - b);
      const i = Math.floor(sorted.length * fraction);
      return (sorted[i]! + sorted[i + 1]!) / 2;
    };
    const lons = locations.map((l) => l.longitude);
    const lats = locations.map((l) => l.latitude);
    type Box = [w: number, s: number, e: number, n: number];
    const ring = ([w, s, e, n]: Box) => [
      [
        [w, s],
        [e, s],
        [e, n],
        [w, n],
        [w, s],
      ],
    ];
    const inBox = ([w, s, e, n]: Box, x: number, y: number) => x > w && x < e && y > s && y < n;
    const a: Box = [
      between(lons, 0.05),
      between(lats, 0.05),
      between(lons, 0.4),
      between(lats, 0.45),
    ];
    const b: Box = [
      between(lons, 0.6),
      between(lats, 0.55),
      between(lons, 0.95),
      between(lats, 0.9),
    ];
    const truthIn = (...boxes: Box[]) =>
      locations
        .filter((l) => boxes.some((box) => inBox(box, l.longitude, l.latitude)))
        .map((l) => l.id)
        .sort();
    // RD New: a box in metres around the middle, its truth by the published RD polynomial
    // (independent of the projection library), no location within 25 m of an edge.
    const rd = locations.map((l) => ({ id: l.id, ...wgs84ToRd(l.latitude, l.longitude) }));
    const rdBox: Box = [
      between(
        rd.map((p) => p.x),
        0.2,
      ),
      between(
        rd.map((p) => p.y),
        0.2,
      ),
      between(
        rd.map((p) => p.x),
        0.8,
      ),
      between(
        rd.map((p) => p.y),
        0.8,
      ),
    ];
    const margin = Math.min(
      ...rd.flatMap((p) => [
        Math.abs(p.x - rdBox[0]),
        Math.abs(p.x - rdBox[2]),
        Math.abs(p.y - rdBox[1]),
        Math.abs(p.y - rdBox[3]),
      ]),
    );
    expect(margin).toBeGreaterThan(25);
    const rdTruth = rd
      .filter((p) => inBox(rdBox, p.x, p.y))
      .map((p) => p.id)
      .sort();

    const feature = (geometry: unknown) => ({ type: 'Feature', properties: {}, geometry });
    const cases: [string, unknown, string[]][] = [
      [
        'multi.geojson',
        feature({ type: 'MultiPolygon', coordinates: [ring(a), ring(b)] }),
        truthIn(a, b),
      ],
      [
        'collection.geojson',
        {
          type: 'FeatureCollection',
          features: [
            feature({ type: 'Polygon', coordinates: ring(a) }),
            feature({ type: 'Polygon', coordinates: ring(b) }),
          ],
        },
        truthIn(a, b),
      ],
      [
        'rd.geojson',
        {
          type: 'FeatureCollection',
          name: 'area',
          crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::28992' } },
          features: [feature({ type: 'Polygon', coordinates: ring(rdBox) })],
        },
        rdTruth,
      ],
    ];
    for (const [name, content, ids] of cases) {
      expect(ids.length, name).toBeGreaterThan(3);
      expect(ids.length, name).toBeLessThan(locations.length);
      const dir = await testDir();
      await writeFiles(dir, { [name]: JSON.stringify(content) });
      const { output } = await run(dir, {
        start: START,
        end: '2026-03-22T00:00:00Z',
        polygon: join(dir, name),
      });
      expect(await landedMeasurements(output), name).toEqual(
        truthMeasurements(simulator, ids, START, '2026-03-22T00:00:00Z').kept,
      );
    }
  });

  it('sends prefixes to the service as given with server_side, and falls back to id batches when it refuses them', async () => {
    const small = await testDir();
    const before = simulator.count('bicycle-data/prefix');
    const one = await run(small, {
      start: START,
      end: '2026-03-24T00:00:00Z',
      prefixes: ['GRN'],
      server_side: true,
    });
    expect(simulator.count('bicycle-data/prefix')).toBeGreaterThan(before);
    expect(await landedMeasurements(one.output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, 'GRN'), START, '2026-03-24T00:00:00Z')
        .kept,
    );

    const big = await testDir();
    const { output, logger } = await run(big, {
      start: START,
      end: '2026-03-24T00:00:00Z',
      prefixes: ['GAL', 'UTR'],
      server_side: true,
    });
    expect(logger.events.some((e) => e.event === 'bicycle.fallback')).toBe(true);
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(
        simulator,
        idsWithPrefix(simulator, 'GAL', 'UTR'),
        START,
        '2026-03-24T00:00:00Z',
      ).kept,
    );
  });
});

const ALL_PREFIXES = ['GAL', 'UTR', 'RTD', 'ZHO', 'NBR', 'GLD', 'GRN', 'FRL'];

describe('bicycle.measurements: the hidden limits', () => {
  it.each([
    { maxLocations: 7, maxPeriodDays: 3, locations: 40, days: 30 },
    { maxLocations: 50, maxPeriodDays: 31, locations: 120, days: 95 },
  ])(
    'finds $maxLocations locations and $maxPeriodDays days per request, and later runs start there',
    async ({ maxLocations, maxPeriodDays, locations, days }) => {
      const hidden =
        maxLocations === 7
          ? simulator
          : await useSimulator({ seed: 4, bicycle: { locations, maxLocations, maxPeriodDays } });
      const dir = await testDir();
      const end = new Date(Date.parse(START) + days * 86_400_000).toISOString().replace('.000', '');
      const options = { start: START, end, prefixes: ALL_PREFIXES, concurrency: 3 };
      const first = await runDefinition(
        dir,
        measurementsPipeline(options),
        {},
        { env: { ...hidden.env } },
      );
      expect(first.summary.status, first.failure?.message).toBe('succeeded');
      const ids = hidden.world.bicycle.locations.map((l) => l.id);
      expect(await landedMeasurements(first.output)).toEqual(
        truthMeasurements(hidden, ids, START, end).kept,
      );
      expect(checkpoint(first.output)['limits']).toEqual({
        locations: { max_ok: maxLocations, min_fail: maxLocations + 1 },
        period_hours: { max_ok: maxPeriodDays * 24, min_fail: maxPeriodDays * 24 + 1 },
      });
      // The next run, over one period of the largest size, asks with the learned sizes at once:
      // one request per batch of the most locations, no refusal.
      const next = {
        ...options,
        end: new Date(Date.parse(START) + maxPeriodDays * 86_400_000)
          .toISOString()
          .replace('.000', ''),
      };
      const second = await runDefinition(
        dir,
        measurementsPipeline(next),
        {},
        {
          env: { ...hidden.env },
        },
      );
      expect(second.summary.status, second.failure?.message).toBe('succeeded');
      const notes = await manifestNotes(second.output);
      expect(notes['refusals']).toBe(0);
      expect(notes['requests']).toBe(Math.ceil(locations / maxLocations));
    },
    // runs over 120 locations and 95 days, then 31: about 20 s alone, twice that beside other files
    150_000,
  );
});

describe('bicycle.measurements: reruns', () => {
  it('replaces a rerun period and an overlapping period without duplicates', async () => {
    const dir = await testDir();
    const prefixes = ['UTR', 'NBR'];
    const ids = idsWithPrefix(simulator, ...prefixes);
    await run(dir, { start: START, end: '2026-03-26T00:00:00Z', prefixes });
    const again = await run(dir, { start: START, end: '2026-03-26T00:00:00Z', prefixes });
    expect(await landedMeasurements(again.output)).toEqual(
      truthMeasurements(simulator, ids, START, '2026-03-26T00:00:00Z').kept,
    );
    const overlap = await run(dir, {
      start: '2026-03-24T06:00:00Z',
      end: END,
      prefixes,
    });
    expect(await landedMeasurements(overlap.output)).toEqual(
      truthMeasurements(simulator, ids, START, END).kept,
    );
    // Another selection over the same period leaves the first one's rows alone.
    const other = await run(dir, { start: START, end: END, prefixes: ['GLD'] });
    expect(await landedMeasurements(other.output)).toEqual(
      truthMeasurements(simulator, [...ids, ...idsWithPrefix(simulator, 'GLD')], START, END).kept,
    );
  });

  it('plans the requests it then makes (validate / --dry-run)', async () => {
    const dir = await testDir();
    // A first run over all locations learns the limits (7 locations, 72 hours).
    const first = await run(dir, {
      start: START,
      end: '2026-04-20T00:00:00Z',
      prefixes: ALL_PREFIXES,
    });
    const options = { start: START, end: END, prefixes: ['GAL', 'FRL'] };
    await writeFiles(dir, { 'pipelines/p.yaml': measurementsPipeline(options) });
    const validated = await planned(dir, first.output);
    expect(validated.code, validated.stderr).toBe(0);
    const lines = validated.stdout;
    // 12 locations in batches of 7 (2 per window) x 240 hours in windows of 72 (4).
    expect(idsWithPrefix(simulator, 'GAL', 'FRL')).toHaveLength(12);
    expect(lines).toMatch(/up to 7 locations x 72 hours \(learned by earlier runs\)/);
    expect(lines).toMatch(
      /12 location\(s\): 4 window\(s\) x 2 batch\(es\) = 8 request\(s\) expected/,
    );
    const before = simulator.count('bicycle-data');
    await run(dir, options);
    expect(simulator.count('bicycle-data') - before).toBe(8);

    // A polygon that holds none of the catalog's locations (the North Sea) is warned of.
    const sea = {
      type: 'Polygon',
      coordinates: [
        [
          [2.5, 53.5],
          [3.5, 53.5],
          [3.5, 54.5],
          [2.5, 53.5],
        ],
      ],
    };
    await writeFiles(dir, {
      'sea.geojson': JSON.stringify(sea),
      'pipelines/p.yaml': measurementsPipeline({
        ...options,
        prefixes: undefined,
        polygon: join(dir, 'sea.geojson'),
      }),
    });
    const inSea = await planned(dir, first.output);
    expect(simulator.world.bicycle.locations.length).toBeGreaterThan(0);
    expect(inSea.stdout).toMatch(
      new RegExp(
        `warning: .*sea\\.geojson contains none of the ${simulator.world.bicycle.locations.length} locations of the catalog`,
      ),
    );
  });
});

describe('bicycle.measurements: the plan as data', () => {
  it('makes exactly the requests that validate --format json listed', async () => {
    const dir = await testDir();
    const ids = idsWithPrefix(simulator, 'GAL', 'UTR').slice(0, 14);
    // A first run over every location, one request at a time, settles both limits
    // (7 locations, 72 hours): what works and what fails are one apart.
    const first = await run(dir, {
      start: START,
      end: '2026-04-01T00:00:00Z',
      prefixes: ALL_PREFIXES,
      concurrency: 1,
    });
    expect(checkpoint(first.output)['limits']).toEqual({
      locations: { max_ok: 7, min_fail: 8 },
      period_hours: { max_ok: 72, min_fail: 73 },
    });
    const options = { start: '2026-04-10T00:00:00Z', end: '2026-04-20T00:00:00Z', locations: ids };
    await writeFiles(dir, { 'pipelines/p.yaml': measurementsPipeline(options) });
    const file = join(dir, 'pipelines', 'p.yaml');
    const validate = await runCli(
      ['validate', file, '--output', first.output, '--format', 'json'],
      { env },
    );
    expect(validate.code, validate.stderr).toBe(0);
    const lines = validate.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const plan = JSON.parse(lines[0]!) as {
      steps: {
        id: string;
        plan: { batches: { from: string; to: string; locations: string[] }[] | null };
      }[];
    };
    const batches = plan.steps.find((s) => s.id === 'measurements')!.plan.batches;
    // 14 locations in batches of 7 x 240 hours in windows of 72 hours (4): 8 requests.
    expect(batches).toHaveLength(8);
    for (const batch of batches!) {
      expect(batch.locations.length).toBeLessThanOrEqual(7);
      expect(Date.parse(batch.to) - Date.parse(batch.from)).toBeLessThanOrEqual(72 * 3_600_000);
    }
    const before = simulator.requests.length;
    const result = await runCli(['run', file, '--output', first.output], { env });
    expect(result.code, result.stderr).toBe(0);
    const asked = simulator.requests
      .slice(before)
      .filter((r) => r.route === 'bicycle-data')
      .map((r) => {
        const body = JSON.parse(r.body) as {
          startTime: string;
          endTime: string;
          locations: string[];
        };
        return { from: body.startTime, to: body.endTime, locations: body.locations };
      });
    const key = (b: { from: string; to: string; locations: string[] }) =>
      `${b.from} ${b.to} ${b.locations.join(',')}`;
    expect(asked.map(key).sort()).toEqual(batches!.map(key).sort());
  });
});

describe('bicycle.measurements: bad selections', () => {
  it('refuses prefixes under 3 characters and two selections before anything runs', async () => {
    const dir = await testDir();
    await expect(
      runDefinition(
        dir,
        measurementsPipeline({ start: START, end: END, prefixes: ['GA'] }),
        {},
        { env },
      ),
    ).rejects.toThrow(/prefixes\[0\]: a prefix has at least 3 characters, got "GA"/);
    await expect(
      runDefinition(
        dir,
        measurementsPipeline({ start: START, end: END, prefixes: ['GAL'], locations: ['X'] }),
        {},
        { env },
      ),
    ).rejects.toThrow(InputError);
    await expect(
      runDefinition(
        dir,
        measurementsPipeline({ start: END, end: START, prefixes: ['GAL'] }),
        {},
        { env },
      ),
    ).rejects.toThrow(/end: must be after start/);
  });

  it('refuses a polygon file that is not a closed, simple GeoJSON polygon', async () => {
    const dir = await testDir();
    await writeFiles(dir, {
      'bowtie.geojson': JSON.stringify({
        type: 'Polygon',
        coordinates: [
          [
            [4, 52],
            [5, 53],
            [5, 52],
            [4, 53],
            [4, 52],
          ],
        ],
      }),
    });
    await expect(
      runDefinition(
        dir,
        measurementsPipeline({ start: START, end: END, polygon: join(dir, 'bowtie.geojson') }),
        {},
        { env },
      ),
    ).rejects.toThrow(/polygon: coordinates\[0\]: ring intersects itself/);
  });

  it('stops at any other 400 with the service message, leaves the dataset alone, and a rerun completes', async () => {
    const dir = await testDir();
    const options = { start: START, end: END, prefixes: ['ZHO', 'GLD'], concurrency: 1 };
    // A request for measurements is refused with a 400 the batching cannot learn from.
    simulator.inject({
      kind: 'error',
      status: 400,
      path: '/bicycle/api/explore/bicycle-data',
      count: 1,
    });
    const failed = await runDefinition(dir, measurementsPipeline(options), {}, { env });
    expect(failed.failure).toBeInstanceOf(RunError);
    expect(failed.failure).not.toBeInstanceOf(InputError);
    expect(failed.failure?.message).toMatch(
      /The bicycle service refused the request for .*: Simulated failure/,
    );
    // Nothing of the period reached the dataset; the next run resumes and completes it.
    expect(await landedMeasurements(failed.output)).toEqual([]);
    const rerun = await run(dir, options);
    expect(await landedMeasurements(rerun.output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, 'ZHO', 'GLD'), START, END).kept,
    );
  });

  it('fails with exit code 1 (the lock and manifest are written by then) and writes no measurements when the selection matches nothing', async () => {
    const dir = await testDir();
    const { failure, output } = await runDefinition(
      dir,
      measurementsPipeline({ start: START, end: END, prefixes: ['XYZ'] }),
      {},
      { env },
    );
    expect(failure).toBeInstanceOf(RunError);
    expect((failure as RunError).exitCode).toBe(1);
    expect(failure?.cause).toBeInstanceOf(InputError);
    expect(failure?.message).toMatch(/matches no location of the catalog \(40 locations\)/);
    expect(await readdir(join(output, 'bicycle')).catch(() => [])).not.toContain('measurements');
  });
});
