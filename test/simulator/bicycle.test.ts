import { describe, expect, it } from 'vitest';
import {
  Counters,
  hoursOfLocalDay,
  localDateText,
  localDayOf,
  localTime,
} from '../../src/simulator/bicycle/counts.js';
import {
  BICYCLE_PATH,
  LOCATIONS_PATH,
  login,
  postBicycle,
  useSimulator,
} from '../helpers/simulator.js';
import { localParts } from '../helpers/bicycle.js';

const simulator = await useSimulator({ seed: 7 });
const strict = await useSimulator({
  seed: 7,
  bicycle: { maxLocations: 7, maxPeriodDays: 3, endInclusive: false },
});
const token = await login(simulator);
const strictToken = await login(strict);
const catalog = simulator.world.bicycle.locations;
const ids = catalog.map((l) => l.id);
const period = { startTime: '2025-03-03T00:00:00Z', endTime: '2025-03-05T00:00:00Z' };
const HOUR = 3_600_000;

type Row = {
  locationId: string;
  measurementHour: string;
  measuredValuesFull: Record<string, Record<string, number | null>>;
};

function hoursOf(rows: Row[]): string[] {
  return rows.map((r) => `${r.locationId}@${r.measurementHour}`);
}

describe('simulator bicycle locations (4.4)', () => {
  it('serves a FeatureCollection of WGS84 points with the documented properties', async () => {
    const response = await fetch(simulator.env.ROAD_ETL_BICYCLE_URL + LOCATIONS_PATH, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = (await response.json()) as {
      type: string;
      features: {
        type: string;
        id: string;
        geometry: { type: string; coordinates: number[] };
        properties: Record<string, unknown>;
      }[];
    };
    expect(body.type).toBe('FeatureCollection');
    expect(body.features).toHaveLength(120);
    for (const feature of body.features) {
      expect(feature.type).toBe('Feature');
      expect(feature.geometry.type).toBe('Point');
      const [lon, lat] = feature.geometry.coordinates as [number, number];
      expect(lon).toBeGreaterThan(3.2);
      expect(lon).toBeLessThan(7.3);
      expect(lat).toBeGreaterThan(50.7);
      expect(lat).toBeLessThan(53.6);
      expect(feature.properties['id']).toMatch(/^[A-Z]{3}\d{2}_\d{5}$/);
      expect(Object.keys(feature.properties).sort()).toEqual(
        [
          'aliases',
          'authority',
          'authorityId',
          'bearing',
          'contractor',
          'equipmentType',
          'id',
          'licenseCategory',
          'locationType',
          'name',
          'validFrom',
          'validUntil',
        ].sort(),
      );
      expect(feature.properties['validFrom']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const values = (key: string) => new Set(body.features.map((f) => f.properties[key]));
    expect(values('locationType')).toEqual(new Set(['PERMANENT', 'PERIODIC']));
    expect(values('equipmentType')).toEqual(new Set(['lus', 'multiplePneumatic']));
    const licenses = [...values('licenseCategory')] as string[];
    expect(licenses.some((l) => l !== l.toUpperCase())).toBe(true);
    expect(licenses.some((l) => l === l.toUpperCase())).toBe(true);
    expect(body.features.some((f) => f.properties['validUntil'] !== null)).toBe(true);
    expect(body.features.some((f) => (f.properties['aliases'] as unknown[]).length > 0)).toBe(true);
    expect(new Set(body.features.map((f) => f.properties['id'])).size).toBe(120);
    expect(
      new Set(body.features.map((f) => (f.properties['id'] as string).slice(0, 5))).size,
    ).toBeGreaterThan(3);
  });
});

describe('simulator bicycle measurements (4.1-4.3)', () => {
  it('answers one row per location and whole hour, equal to the ground truth (endTime inclusive by default)', async () => {
    const chosen = ids.slice(0, 10);
    const { status, json } = await postBicycle(simulator, BICYCLE_PATH, token, {
      ...period,
      locations: chosen,
    });
    expect(status).toBe(200);
    const rows = json as Row[];
    const start = Date.parse(period.startTime);
    const end = Date.parse(period.endTime);
    const truth = simulator.world.measurements(chosen, start, end + HOUR);
    expect(hoursOf(rows).sort()).toEqual(hoursOf(truth as Row[]).sort());
    expect(rows.some((r) => r.measurementHour === period.endTime)).toBe(true);
    for (const row of rows) {
      expect(row.measurementHour).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00Z$/);
      expect(Object.keys(row.measuredValuesFull)).toHaveLength(4);
      for (const sub of Object.values(row.measuredValuesFull))
        expect(Object.keys(sub).length).toBeGreaterThan(1);
    }
    expect(new Set(hoursOf(rows)).size).toBe(rows.length);
  });

  it('has gaps: not every location has every hour', () => {
    const all = simulator.world.measurements(
      ids.slice(0, 40),
      Date.parse('2025-01-01T00:00:00Z'),
      Date.parse('2025-02-01T00:00:00Z'),
    );
    const perLocation = new Map<string, number>();
    for (const row of all)
      perLocation.set(row.locationId, (perLocation.get(row.locationId) ?? 0) + 1);
    const counts = [...perLocation.values()];
    expect(counts.some((c) => c > 0 && c < 31 * 24)).toBe(true);
  });

  it('reads endTime as exclusive when configured so', async () => {
    const chosen = ids.slice(0, 5);
    const { json } = await postBicycle(strict, BICYCLE_PATH, strictToken, {
      ...period,
      locations: chosen,
    });
    const truth = strict.world.measurements(
      chosen,
      Date.parse(period.startTime),
      Date.parse(period.endTime),
    );
    expect(hoursOf(json as Row[]).sort()).toEqual(hoursOf(truth as Row[]).sort());
    expect((json as Row[]).some((r) => r.measurementHour === period.endTime)).toBe(false);
  });

  it('answers an empty array for ids it does not know', async () => {
    const { status, json } = await postBicycle(simulator, BICYCLE_PATH, token, {
      ...period,
      locations: ['XXX99_00001'],
    });
    expect(status).toBe(200);
    expect(json).toEqual([]);
  });

  it('resolves prefixes to every location that starts with one', async () => {
    const prefix = ids[0]!.slice(0, 5);
    const matched = ids.filter((id) => id.startsWith(prefix));
    const { status, json } = await postBicycle(simulator, `${BICYCLE_PATH}/prefix`, token, {
      ...period,
      prefixes: [prefix],
    });
    expect(status).toBe(200);
    const truth = simulator.world.measurements(
      matched,
      Date.parse(period.startTime),
      Date.parse(period.endTime) + HOUR,
    );
    expect(hoursOf(json as Row[]).sort()).toEqual(hoursOf(truth as Row[]).sort());
  });

  it('resolves a GeoJSON polygon to the locations inside it', async () => {
    const target = catalog[3]!;
    const d = 0.02;
    const ring = [
      [target.longitude - d, target.latitude - d],
      [target.longitude + d, target.latitude - d],
      [target.longitude + d, target.latitude + d],
      [target.longitude - d, target.latitude + d],
      [target.longitude - d, target.latitude - d],
    ];
    const inside = catalog
      .filter(
        (l) =>
          Math.abs(l.longitude - target.longitude) < d &&
          Math.abs(l.latitude - target.latitude) < d,
      )
      .map((l) => l.id);
    const { status, json } = await postBicycle(simulator, `${BICYCLE_PATH}/geo`, token, {
      ...period,
      locationPolygoon: { type: 'Polygon', coordinates: [ring] },
    });
    expect(status).toBe(200);
    expect(new Set((json as Row[]).map((r) => r.locationId))).toEqual(
      new Set(
        simulator.world
          .measurements(inside, Date.parse(period.startTime), Date.parse(period.endTime) + HOUR)
          .map((r) => r.locationId),
      ),
    );
  });

  it('accepts exactly the hidden maxima, and refuses one more location or a longer period', async () => {
    const seven = ids.slice(0, 7);
    const threeDays = { startTime: '2025-03-01T00:00:00Z', endTime: '2025-03-04T00:00:00Z' };
    expect(
      (await postBicycle(strict, BICYCLE_PATH, strictToken, { ...threeDays, locations: seven }))
        .status,
    ).toBe(200);
    const tooMany = await postBicycle(strict, BICYCLE_PATH, strictToken, {
      ...threeDays,
      locations: ids.slice(0, 8),
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.text).toMatch(/too many locations/i);
    // The limit itself is not published.
    expect((tooMany.json as { message: string }).message).not.toMatch(/\b7\b/);
    const tooLong = await postBicycle(strict, BICYCLE_PATH, strictToken, {
      startTime: '2025-03-01T00:00:00Z',
      endTime: '2025-03-04T01:00:00Z',
      locations: seven,
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toMatch(/period is too long/i);
  });

  it('counts the locations a prefix resolves to against the maximum', async () => {
    const { status, text } = await postBicycle(strict, `${BICYCLE_PATH}/prefix`, strictToken, {
      ...period,
      prefixes: ['GAL'],
    });
    expect(status).toBe(400);
    expect(text).toMatch(/too many locations/i);
  });

  it('uses the defaults of 50 locations and 31 days', async () => {
    const days31 = { startTime: '2025-01-01T00:00:00Z', endTime: '2025-02-01T00:00:00Z' };
    expect(
      (
        await postBicycle(simulator, BICYCLE_PATH, token, {
          ...days31,
          locations: ids.slice(0, 50),
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await postBicycle(simulator, BICYCLE_PATH, token, {
          ...days31,
          locations: ids.slice(0, 51),
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await postBicycle(simulator, BICYCLE_PATH, token, {
          startTime: '2025-01-01T00:00:00Z',
          endTime: '2025-02-01T01:00:00Z',
          locations: ids.slice(0, 2),
        })
      ).status,
    ).toBe(400);
  });

  const square = {
    type: 'Polygon',
    coordinates: [
      [
        [4, 52],
        [5, 52],
        [5, 53],
        [4, 53],
        [4, 52],
      ],
    ],
  };
  it.each([
    ['bad JSON', BICYCLE_PATH, '{"startTime": ', /JSON parse error/],
    ['a body that is not an object', BICYCLE_PATH, '[]', /must be a JSON object/],
    [
      'a missing startTime',
      BICYCLE_PATH,
      { endTime: period.endTime, locations: ['a'] },
      /'startTime' is missing/,
    ],
    [
      'a missing endTime',
      BICYCLE_PATH,
      { startTime: period.startTime, locations: ['a'] },
      /'endTime' is missing/,
    ],
    ['missing locations', BICYCLE_PATH, period, /'locations' is missing/],
    ['an empty location list', BICYCLE_PATH, { ...period, locations: [] }, /must not be empty/],
    [
      'locations that are not strings',
      BICYCLE_PATH,
      { ...period, locations: [1, 2] },
      /array of non-empty strings/,
    ],
    [
      'a timestamp without Z',
      BICYCLE_PATH,
      { ...period, startTime: '2025-03-03T00:00:00', locations: ['a'] },
      /YYYY-MM-DDTHH:mm:ssZ/,
    ],
    [
      'a timestamp with milliseconds',
      BICYCLE_PATH,
      { ...period, startTime: '2025-03-03T00:00:00.000Z', locations: ['a'] },
      /YYYY-MM-DDTHH:mm:ssZ/,
    ],
    [
      'a timestamp with an offset',
      BICYCLE_PATH,
      { ...period, endTime: '2025-03-05T00:00:00+01:00', locations: ['a'] },
      /YYYY-MM-DDTHH:mm:ssZ/,
    ],
    [
      'an impossible date',
      BICYCLE_PATH,
      { ...period, startTime: '2025-02-30T00:00:00Z', locations: ['a'] },
      /YYYY-MM-DDTHH:mm:ssZ/,
    ],
    [
      'endTime equal to startTime',
      BICYCLE_PATH,
      { ...period, endTime: period.startTime, locations: ['a'] },
      /endTime must be after startTime/,
    ],
    [
      'endTime before startTime',
      BICYCLE_PATH,
      { startTime: period.endTime, endTime: period.startTime, locations: ['a'] },
      /endTime must be after startTime/,
    ],
    [
      'a prefix under 3 characters',
      `${BICYCLE_PATH}/prefix`,
      { ...period, prefixes: ['GA'] },
      /at least 3 characters/,
    ],
    [
      'a prefix with no locations',
      `${BICYCLE_PATH}/prefix`,
      { ...period, prefixes: ['ZZZ'] },
      /no locations exist/,
    ],
    ['missing prefixes', `${BICYCLE_PATH}/prefix`, period, /'prefixes' is missing/],
    [
      'a polygon with no locations',
      `${BICYCLE_PATH}/geo`,
      {
        ...period,
        locationPolygoon: {
          type: 'Polygon',
          coordinates: [
            [
              [0, 0],
              [1, 0],
              [1, 1],
              [0, 0],
            ],
          ],
        },
      },
      /no locations exist within it/,
    ],
    [
      'a polygon that is not closed',
      `${BICYCLE_PATH}/geo`,
      {
        ...period,
        locationPolygoon: {
          type: 'Polygon',
          coordinates: [
            [
              [4, 52],
              [5, 52],
              [5, 53],
              [4, 53],
            ],
          ],
        },
      },
      /not closed/,
    ],
    [
      'a self-intersecting polygon',
      `${BICYCLE_PATH}/geo`,
      {
        ...period,
        locationPolygoon: {
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
        },
      },
      /intersects itself/,
    ],
    [
      'a Point instead of a polygon',
      `${BICYCLE_PATH}/geo`,
      { ...period, locationPolygoon: { type: 'Point', coordinates: [4, 52] } },
      /must be "Polygon"/,
    ],
    [
      'the polygon under a misspelled name',
      `${BICYCLE_PATH}/geo`,
      { ...period, locationPolygon: square },
      /'locationPolygoon' is missing/,
    ],
  ])('refuses %s with 400 and a body that says why', async (_case, path, body, message) => {
    const answer = await postBicycle(simulator, path, token, body);
    expect(answer.status).toBe(400);
    expect((answer.json as { message: string }).message).toMatch(message);
  });

  it('refuses a body that is not sent as JSON', async () => {
    const response = await fetch(simulator.env.ROAD_ETL_BICYCLE_URL + BICYCLE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${token}` },
      body: JSON.stringify({ ...period, locations: ids.slice(0, 1) }),
    });
    expect(response.status).toBe(400);
  });

  it('answers 405 to a GET on a POST endpoint and 404 to an unknown path', async () => {
    const get = await fetch(simulator.env.ROAD_ETL_BICYCLE_URL + BICYCLE_PATH, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(get.status).toBe(405);
    expect((await fetch(simulator.env.ROAD_ETL_BICYCLE_URL + '/api/nothing')).status).toBe(404);
  });

  it('has no data after its clock: hours after now are not served', async () => {
    const now = simulator.world.now;
    const start = new Date(now - 2 * 24 * HOUR).toISOString().slice(0, 19) + 'Z';
    const end = new Date(now + 2 * 24 * HOUR).toISOString().slice(0, 19) + 'Z';
    const permanent = catalog
      .filter((l) => l.locationType === 'PERMANENT' && l.validUntil === undefined)
      .map((l) => l.id)
      .slice(0, 5);
    const { json } = await postBicycle(simulator, BICYCLE_PATH, token, {
      startTime: start,
      endTime: end,
      locations: permanent,
    });
    const rows = json as Row[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => Date.parse(r.measurementHour) + HOUR <= now)).toBe(true);
  });
});

describe('simulator bicycle counters', () => {
  it('count in Dutch local time, summer and winter, as the platform reads Europe/Amsterdam', () => {
    for (
      let t = Date.parse('2026-03-27T00:00:00Z');
      t < Date.parse('2026-11-02T00:00:00Z');
      t += HOUR
    ) {
      const { day, hour } = localTime(t);
      const platform = localParts(new Date(t).toISOString());
      expect(`${localDateText(day)} ${hour}`).toBe(`${platform.date} ${platform.hour}`);
    }
    expect(hoursOfLocalDay(localDayOf('2026-03-29'))).toHaveLength(23);
    expect(hoursOfLocalDay(localDayOf('2026-10-25'))).toHaveLength(25);
  });

  it('peak at the same local hour in winter and summer, and keep each location its direction split', () => {
    const counters = new Counters(7, 0);
    const busiestHour = (date: string): number => {
      const hours = hoursOfLocalDay(localDayOf(date));
      const totals = hours.map((ms) => counters.count(3, 3, ms).directions.reduce((a, b) => a + b));
      return localTime(hours[totals.indexOf(Math.max(...totals))]!).hour;
    };
    // Tuesdays in winter and summer time: the morning peak at 8 local time.
    expect(busiestHour('2026-03-24')).toBe(8);
    expect(busiestHour('2026-06-23')).toBe(8);
    for (const location of [1, 2, 3]) {
      let first = 0;
      let all = 0;
      for (const ms of hoursOfLocalDay(localDayOf('2026-06-23'))) {
        const [a, b] = counters.count(location, location, ms).directions;
        first += a;
        all += a + b;
      }
      expect(Math.abs(first / all - counters.directionShare(location))).toBeLessThan(0.03);
    }
  });
});
