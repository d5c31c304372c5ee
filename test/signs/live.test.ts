import { committed } from '../helpers/committed.js';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UpstreamError } from '../../src/errors.js';
import { liveState, type LiveApi, type LiveFeature } from '../../src/simulator/index.js';
import { LIVE_COLUMNS, LIVE_PROPERTIES, snakeCase } from '../../src/sources/signs/live.js';
import { liveUrl } from '../../src/sources/signs/client.js';
import { memberParts, strictMembers } from '../../src/sources/signs/live-members.js';
import { Database } from '../../src/duckdb/database.js';
import { engineSql } from '../../src/duckdb/sql-files.js';
import { createDatasetViews, discoverDatasets } from '../../src/duckdb/datasets.js';
import { DATASET_VIEWS } from '../../src/sources/views.js';
import { ROOT } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import { truthLiveChanges } from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, outputHashes, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 23, signs: { signs: 600 } });
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };
const DAY = 86_400_000;

const pipeline = (options: Record<string, unknown>) => `name: live
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}', v5_url: '\${env.ROAD_ETL_SIGNS_URL}' }
steps:
  - { id: signs_live, kind: signs.live, options: ${JSON.stringify(options)} }
  - id: signs_live_changes
    kind: sql
    needs: [signs_live]
    options: { file: signs_live_changes.sql, outputs: [signs_live_changes] }
`;

const sqlFiles = async () => ({
  'signs_live_changes.sql': await readFile(join(ROOT, 'sql', 'signs_live_changes.sql'), 'utf8'),
});

interface Row {
  sign_id: string;
  rvv_code: string;
  county_code: string;
  longitude: number;
  latitude: number;
  road_section_id: string | null;
  placed_on: string | null;
  status: string | null;
  properties: string | null;
}

async function signsLive(output: string): Promise<Row[]> {
  return (await duck(
    `SELECT sign_id::VARCHAR AS sign_id, rvv_code, county_code, longitude, latitude, road_section_id::VARCHAR AS road_section_id,
            placed_on::VARCHAR AS placed_on, status, properties::VARCHAR AS properties
     FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet', hive_partitioning = true)
     WHERE snapshot = (SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet', hive_partitioning = true)))
     ORDER BY sign_id`,
  )) as unknown as Row[];
}

/** What signs_live must hold for the simulator's features. */
function expected(features: LiveFeature[], api: LiveApi): Omit<Row, 'properties'>[] {
  return features
    .map((f) => ({
      sign_id: f.id,
      rvv_code: String(f.properties['rvvCode']),
      county_code: String(f.properties['countyCode']),
      longitude: f.geometry.coordinates[0],
      latitude: f.geometry.coordinates[1],
      road_section_id:
        f.properties['roadSectionId'] === undefined
          ? null
          : String(f.properties['roadSectionId'] as number),
      placed_on: (f.properties['placedOn'] as string | undefined) ?? null,
      status: api === 'v4' ? String(f.properties['status']) : null,
    }))
    .sort((a, b) => (a.sign_id < b.sign_id ? -1 : 1));
}

/** Road sections of a few signs of the simulated world. */
const SECTIONS = [...liveState(simulator.world, simulator.world.now, 'v5')]
  .slice(0, 40)
  .map((f) => Number(f.properties['roadSectionId']))
  .filter((id) => Number.isFinite(id))
  .slice(0, 5);

const truth = (api: LiveApi, filters: Parameters<typeof liveState>[3] = {}) => [
  ...liveState(simulator.world, simulator.world.now, api, filters),
];

describe('signs_live: the current state of today’s API', () => {
  it.each([
    ['v5', 'geojson', {}, {}],
    ['v4', 'geojson', { county_code: 'GM0363' }, { countyCode: 'GM0363' }],
    ['v4', 'csv', { rvv_codes: ['A1', 'C22'] }, { rvvCodes: ['A1', 'C22'] }],
    ['v5', 'geojson', { status: 'REMOVED' }, { status: 'REMOVED' as const }],
    ['v5', 'geojson', { road_section_ids: SECTIONS }, { roadSectionIds: SECTIONS }],
  ] as const)(
    'equals the simulator’s %s current state as %s, filtered by %j',
    async (api, format, options, filters) => {
      const dir = await testDir();
      const { failure, output } = await runDefinition(
        dir,
        pipeline({ api, format, ...options }),
        await sqlFiles(),
        { env },
      );
      expect(failure).toBeUndefined();
      const features = truth(api, filters);
      expect(features.length).toBeGreaterThan(0);
      const rows = await signsLive(output);
      expect(rows.map(({ properties: _, ...row }) => row)).toEqual(expected(features, api));
      // GeoJSON that fits NDW's schema is held whole by the typed columns: nothing is kept
      // beside them. A CSV row's properties are kept whole, as text.
      const geojson = format === 'geojson';
      expect(rows.filter((row) => row.properties !== null)).toHaveLength(geojson ? 0 : rows.length);
    },
  );

  it('types the nested values: text signs, supplementary signs and conditions', async () => {
    const dir = await testDir();
    const { output } = await runDefinition(dir, pipeline({ api: 'v5' }), await sqlFiles(), {
      env,
    });
    const features = truth('v5').filter(
      (f) => (f.properties['supplementarySigns'] as unknown[]).length > 0,
    );
    const [row] = await duck(
      `SELECT supplementary_signs, conditions FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet') WHERE sign_id = '${features[0]!.id}'`,
    );
    const served = features[0]!.properties;
    const signs = served['supplementarySigns'] as {
      signCode: string;
      text: string;
      index: number;
    }[];
    expect(
      (row!['supplementary_signs'] as { sign_code: string; text: string; index: number }[]).map(
        (s) => [s.sign_code, s.text, s.index],
      ),
    ).toEqual(signs.map((s) => [s.signCode, s.text, s.index]));
    const conditions = served['conditions'] as { restrictions: { vehicleType: string[] } };
    expect(
      (row!['conditions'] as { restrictions: { vehicle_type: string[] } }).restrictions
        .vehicle_type,
    ).toEqual(conditions.restrictions.vehicleType);
  });
});

/** Runs SQL over an output folder's views, as a run and `road-etl query` make them. */
async function overViews(output: string, sql: string): Promise<Record<string, unknown>[]> {
  const db = await Database.open({ threads: 1 });
  try {
    await createDatasetViews(db, await discoverDatasets(output), DATASET_VIEWS);
    return await db.all(sql);
  } finally {
    db.close();
  }
}

interface Condition {
  vehicleType?: string[];
  category?: string[];
  timeValidity?: string;
  weight?: number;
  height?: number;
}

describe('signs_live_restrictions: the machine-readable conditions as a table', () => {
  it('holds one row per sign, kind and vehicle type, as the service serves them, unknown values too', async () => {
    const dir = await testDir();
    const { output } = await runDefinition(dir, pipeline({ api: 'v5' }), await sqlFiles(), {
      env,
    });
    const line = (
      id: unknown,
      kind: unknown,
      n: unknown,
      type: unknown,
      c: Record<string, unknown>,
    ) =>
      [
        id,
        kind,
        n,
        type,
        JSON.stringify(c['category'] ?? null),
        c['time_validity'] ?? null,
        c['weight'] ?? null,
        c['height'] ?? null,
      ].join(' ');
    const want: string[] = [];
    for (const f of truth('v5')) {
      const conditions = f.properties['conditions'] as
        { restrictions: Condition; exemptions: Condition[] } | undefined;
      if (!conditions) continue;
      const add = (kind: string, n: number, c: Condition) => {
        const fields = {
          category: c.category,
          time_validity: c.timeValidity,
          weight: c.weight,
          height: c.height,
        };
        if (
          !c.vehicleType?.length &&
          !c.category?.length &&
          !c.timeValidity &&
          !c.weight &&
          !c.height
        )
          return;
        for (const type of c.vehicleType?.length ? c.vehicleType : [null])
          want.push(line(f.id, kind, n, type, fields));
      };
      add('restriction', 1, conditions.restrictions);
      conditions.exemptions.forEach((e, i) => add('exemption', i + 1, e));
    }
    const rows = await overViews(
      output,
      `SELECT sign_id::VARCHAR AS id, kind, "condition" AS n, vehicle_type, category, time_validity, weight, height FROM signs_live_restrictions`,
    );
    const got = rows.map((r) => line(r['id'], r['kind'], r['n'], r['vehicle_type'], r));
    expect(got.sort()).toEqual(want.sort());
    // Every vehicle type of NDW's enum, a value it may add later, time validity and exemptions.
    const types = new Set(rows.map((r) => r['vehicle_type']));
    for (const type of [
      'pedestrian',
      'bicycle',
      'car',
      'truck',
      'deliveryVan',
      'all',
      'unknown',
      'hoverboard',
    ])
      expect(types.has(type), type).toBe(true);
    expect(rows.some((r) => r['time_validity'] !== null)).toBe(true);
    expect(rows.some((r) => r['kind'] === 'exemption')).toBe(true);
  });
});

describe('signs_live_changes: each sign’s history from daily current states', () => {
  it('equals the simulator’s day-to-day differences, and a rerun on the same day adds nothing', async () => {
    const dir = await testDir();
    const start = simulator.world.now;
    const days = [start - 60 * DAY, start - 30 * DAY, start - 29 * DAY];
    const states: LiveFeature[][] = [];
    // A month apart, more than the 5% of a day's plausible change goes: let it through.
    const options = { api: 'v5', max_gone: 0.5 };
    try {
      for (const day of days) {
        simulator.world.setNow(new Date(day).toISOString());
        const { failure } = await runDefinition(dir, pipeline(options), await sqlFiles(), {
          env,
        });
        expect(failure).toBeUndefined();
        states.push(truth('v5'));
      }
      // The same day again: the service answers Not Modified, and nothing is added.
      const again = await runDefinition(dir, pipeline(options), await sqlFiles(), { env });
      expect(again.failure).toBeUndefined();
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }
    const output = join(dir, 'output');
    const snapshots = await duck(
      `SELECT DISTINCT snapshot FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet', hive_partitioning = true)`,
    );
    expect(snapshots).toHaveLength(3);

    const want = truthLiveChanges(states);
    expect(want.some((w) => w.includes('changed'))).toBe(true);
    expect(want.some((w) => w.includes('added'))).toBe(true);
    const rows = await duck(
      `SELECT dense_rank() OVER (ORDER BY to_moment) AS pair, sign_id::VARCHAR AS sign_id, change, changed_fields
       FROM read_parquet('${committed(output, 'derived/signs_live_changes/data.parquet')}')`,
    );
    const got = rows.map(
      (r) =>
        `${String(r['pair'])} ${String(r['sign_id'])} ${String(r['change'])}` +
        (r['change'] === 'changed' ? ` ${(r['changed_fields'] as string[]).join(',')}` : ''),
    );
    expect(got.sort()).toEqual(want.sort());

    // signs_live_history: the signs as they were at each snapshot are that snapshot.
    const moments = snapshots.map((r) => String(r['snapshot'])).sort();
    for (const moment of moments) {
      const at = `CAST('${moment}' AS TIMESTAMPTZ)`;
      const [diff] = await overViews(
        output,
        `WITH h AS (SELECT sign_id, longitude, latitude, properties::VARCHAR AS p FROM signs_live_history
                    WHERE valid_from <= ${at} AND (valid_to IS NULL OR valid_to > ${at})),
              s AS (SELECT sign_id, longitude, latitude, properties::VARCHAR AS p FROM signs_live_snapshots WHERE snapshot = ${at})
         SELECT (SELECT count(*) FROM h) AS n, (SELECT count(*) FROM s) AS m,
                (SELECT count(*) FROM ((FROM h EXCEPT ALL FROM s) UNION ALL (FROM s EXCEPT ALL FROM h))) AS d`,
      );
      expect(Number(diff!['n']), moment).toBeGreaterThan(0);
      expect(Number(diff!['n']), moment).toBe(Number(diff!['m']));
      expect(Number(diff!['d']), moment).toBe(0);
    }
    // A version that changed was closed by the next; a sign gone, at the snapshot without it.
    const [closed] = await overViews(
      output,
      `SELECT count(*) FILTER (WHERE valid_to IS NOT NULL) AS closed, count(*) FILTER (WHERE valid_to IS NULL) AS open FROM signs_live_history`,
    );
    expect(Number(closed!['closed'])).toBeGreaterThan(0);
    expect(Number(closed!['open'])).toBe(states.at(-1)!.length);
  });
});

/** NDW's own OpenAPI file of v4 and v5, as NDW publishes it (kept with the tests). */
function openapi(): {
  components: { schemas: Record<string, { properties: Record<string, unknown> }> };
} {
  return JSON.parse(
    readFileSync(join(ROOT, 'test', 'fixtures', 'ndw', 'traffic-signs-openapi-v4-v5.json'), 'utf8'),
  ) as ReturnType<typeof openapi>;
}

describe('the columns of signs_live', () => {
  it('hold every property of NDW’s v5 schema and of the v4 list', () => {
    const v5 = Object.keys(openapi().components.schemas['TrafficSignPropertiesDtoV5']!.properties);
    // v4 publishes its current state as a stream without a schema: its properties as NDW lists them.
    const v4 = [
      'externalId',
      'validated',
      'validatedOn',
      'rvvCode',
      'blackCode',
      'zoneCode',
      'status',
      'textSigns',
      'placement',
      'side',
      'bearing',
      'nenTurningDirection',
      'fraction',
      'drivingDirection',
      'roadName',
      'roadType',
      'roadNumber',
      'roadSectionId',
      'nwbVersion',
      'countyName',
      'countyCode',
      'townName',
      'bgtCode',
      'imageUrl',
      'firstSeenOn',
      'lastSeenOn',
      'removedOn',
      'placedOn',
      'expectedPlacedOn',
      'expectedRemovedOn',
      'trafficOrderUrl',
    ];
    for (const property of [...v5, ...v4]) expect(LIVE_PROPERTIES).toContain(property);
  });

  it('hold every field of the nested values of NDW’s v5 schema, in snake_case', () => {
    const schemas = openapi().components.schemas;
    const fields = (name: string) => Object.keys(schemas[name]!.properties).map(snakeCase);
    const type = (column: string) => LIVE_COLUMNS.find(([name]) => name === column)![1];
    for (const [column, schema] of [
      ['supplementary_signs', 'TextSignDtoV5'],
      ['external_references', 'ExternalReferenceDtoV5'],
      ['conditions', 'ConditionPropertiesDtoV5'],
      ['conditions', 'ConditionsDtoV5'],
    ] as const) {
      for (const field of fields(schema))
        expect(type(column)).toMatch(new RegExp(`\\b"?${field}"? `));
    }
  });
});

describe('sql/live_typing.sql', () => {
  it('types into exactly the columns the views declare before there is data, in their order', async () => {
    const db = await Database.open({ threads: 1 });
    try {
      // Both ways to the members (live-members.ts), read from one feature and none.
      const file = join(await testDir(), 'one.jsonl');
      await writeFile(file, '{"type":"Feature","id":"x","geometry":null,"properties":{}}\n');
      for (const members of [
        strictMembers(file),
        memberParts('(SELECT NULL::JSON AS f WHERE false)'),
      ]) {
        await db.run(`CREATE OR REPLACE TEMP VIEW live_members AS SELECT * FROM ${members}`);
        await db.run(
          `CREATE OR REPLACE TEMP TABLE typed AS SELECT * FROM (${await engineSql('sources/signs', 'live_typing')}) WHERE false`,
          { api: 'v5', downloaded_at: '2026-11-24T06:00:00.000Z' },
        );
        const described = await db.all(`DESCRIBE typed`);
        // DuckDB spells a type its own way: quotes and the long name of TIMESTAMPTZ aside.
        const spelled = (type: string) =>
          type.replace(/"/g, '').replace('TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ');
        expect(described.map((r) => [r['column_name'], spelled(String(r['column_type']))])).toEqual(
          [
            ...LIVE_COLUMNS.map(([name, type]) => [name, spelled(type)]),
            ['_problem', 'VARCHAR'],
            ['raw_feature', 'VARCHAR'],
          ],
        );
      }
    } finally {
      db.close();
    }
  });
});

/** A service answering the FeatureCollection of `features()`, closed after the tests of its block; resolves to its URL. */
function collectionService(features: () => unknown[]): () => Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/geo+json' });
    res.end(JSON.stringify({ type: 'FeatureCollection', features: features() }));
  });
  server.listen(0, '127.0.0.1');
  afterAll(() => {
    server.close();
  });
  return async () => {
    if (!server.listening) await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
}

describe('a feature that cannot be typed', () => {
  const good = (id: string) => ({
    type: 'Feature',
    id,
    geometry: { type: 'Point', coordinates: [4.9, 52.37] },
    properties: { rvvCode: 'A1', countyCode: 'GM0363', placedOn: '2024-01-31', newField: { x: 1 } },
  });
  const features = [
    good('6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b'),
    { ...good('x'), id: 'not-a-uuid' },
    { ...good('7a1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b'), geometry: null },
    { ...good('8b1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b'), properties: { countyCode: 'GM0363' } },
  ];
  const service = collectionService(() => features);

  it('goes to the quarantine with its reason; the rest are kept, unknown properties too', async () => {
    const url = await service();
    const dir = await testDir();
    const { failure, output, logger } = await runDefinition(
      dir,
      pipeline({ api: 'v5' }),
      await sqlFiles(),
      {
        env: { ROAD_ETL_SIGNS_URL: url },
      },
    );
    expect(failure).toBeUndefined();
    // A property the schemas do not know: the properties are kept whole, and the log says which.
    const said = logger.events.filter((e) => e.event === 'signs.live.properties');
    expect(said.map((e) => e.level)).toEqual(['warn']);
    expect(said[0]!.message).toMatch(/does not type: newField \(3\) of 4 features sampled/);
    const kept = await duck(
      `SELECT sign_id::VARCHAR AS id, placed_on::VARCHAR AS placed_on, properties ->> '$.newField.x' AS x FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet')`,
    );
    expect(kept).toEqual([{ id: features[0]!.id, placed_on: '2024-01-31', x: '1' }]);
    const quarantined = await duck(
      `SELECT reason FROM read_parquet('${output}/signs/live_quarantine/*.parquet') ORDER BY reason`,
    );
    expect(quarantined.map((r) => r['reason'])).toEqual([
      'geometry is not a point with two coordinates',
      'id is not a UUID: not-a-uuid',
      'rvvCode is missing',
    ]);
  });
});

/** Runs the v5 pipeline against a service that answers a FeatureCollection of `features`. */
async function landCollection(features: unknown[]): ReturnType<typeof runDefinition> {
  const served = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/geo+json' });
    res.end(JSON.stringify({ type: 'FeatureCollection', features }));
  });
  served.listen(0, '127.0.0.1');
  try {
    await once(served, 'listening');
    const url = `http://127.0.0.1:${(served.address() as AddressInfo).port}`;
    return await runDefinition(await testDir(), pipeline({ api: 'v5' }), await sqlFiles(), {
      env: { ROAD_ETL_SIGNS_URL: url },
    });
  } finally {
    served.close();
  }
}

describe('a FeatureCollection with elements that are not features', () => {
  const sign = {
    type: 'Feature',
    id: '9c1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b',
    geometry: { type: 'Point', coordinates: [4.9, 52.37] },
    properties: { rvvCode: 'C2', countyCode: 'GM0363' },
  };

  it('keeps the features and quarantines each other element as received', async () => {
    const { failure, output } = await landCollection([42, sign, 'a sign', null, [sign]]);
    expect(failure).toBeUndefined();
    const kept = await duck(
      `SELECT sign_id::VARCHAR AS id, rvv_code FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet')`,
    );
    expect(kept).toEqual([{ id: sign.id, rvv_code: 'C2' }]);
    const quarantined = await duck(
      `SELECT raw_feature FROM read_parquet('${output}/signs/live_quarantine/*.parquet')`,
    );
    expect(quarantined.map((r) => JSON.parse(String(r['raw_feature'])) as unknown).sort()).toEqual(
      [42, 'a sign', null, [sign]].sort(),
    );
  });

  it('lands features that hold features in a property, which the quick cut gets wrong', async () => {
    const nested = { ...sign, properties: { ...sign.properties, related: [sign, sign] } };
    const { failure, output } = await landCollection([nested]);
    expect(failure).toBeUndefined();
    const kept = await duck(
      `SELECT sign_id::VARCHAR AS id, properties::VARCHAR AS properties FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet')`,
    );
    expect(kept.map((r) => [r['id'], JSON.parse(String(r['properties'])) as unknown])).toEqual([
      [sign.id, nested.properties],
    ]);
  });
});

describe('a download that is not a FeatureCollection', () => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/geo+json' });
    res.end(JSON.stringify({ status: 'maintenance', message: 'Probeer het later opnieuw' }));
  });
  server.listen(0, '127.0.0.1');
  afterAll(() => {
    server.close();
  });

  it('fails the run (exit 1) and leaves the snapshots landed before as they were', async () => {
    if (!server.listening) await once(server, 'listening');
    const dir = await testDir();
    const landed = await runDefinition(dir, pipeline({ api: 'v5' }), await sqlFiles(), { env });
    expect(landed.failure).toBeUndefined();
    const before = await outputHashes(landed.output, ['manifest.json']);
    expect([...before.keys()].some((f) => f.startsWith('signs/live_snapshots/'))).toBe(true);

    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The same request: the service answers it (and the check of its data) with a page
    // that is no FeatureCollection, whatever the If-Modified-Since.
    const failed = await runDefinition(
      dir,
      pipeline({ api: 'v5', retries: 2, backoff_ms: 1 }),
      await sqlFiles(),
      // Not asked whose data the folder holds: this server answers that question as badly.
      { env: { ROAD_ETL_SIGNS_URL: url }, acceptUpstream: ['signs_live'] },
    );
    // Upstream trouble, asked three times, reported with the endpoint, the status and the body.
    expect(failed.failure).toBeInstanceOf(UpstreamError);
    expect((failed.failure as UpstreamError).exitCode).toBe(1);
    expect(failed.failure?.message).toMatch(
      /after 3 attempts \(signs.live: the v5 answer is not a FeatureCollection.*GET http.*v5\/current-state with status 200: .*Probeer het later opnieuw/,
    );
    expect(await outputHashes(landed.output, ['manifest.json'])).toEqual(before);
  });
});

describe("signs.live from NDW's daily bulk file", () => {
  // The bulk file as NDW publishes it: the national current state, gzip-compressed.
  const served = new Map<string, { body: Buffer; modified: string }>();
  const asked: number[] = [];
  const server = createServer((req, res) => {
    const file = served.get(req.url ?? '');
    asked.push(req.headers['if-modified-since'] ? 304 : 200);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    if (req.headers['if-modified-since'] === file.modified) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/gzip', 'last-modified': file.modified });
    res.end(file.body);
  });
  server.listen(0, '127.0.0.1');
  afterAll(() => {
    server.close();
  });

  /** The snapshot rows of a folder, every typed column but when and how it was read. */
  const landed = (output: string) =>
    duck(
      `SELECT * EXCLUDE (downloaded_at, snapshot) FROM read_parquet('${output}/signs/live_snapshots/*/*.parquet', hive_partitioning = true) ORDER BY sign_id`,
    );

  it('at a URL or a local path, gzip CSV (v4) or GeoJSON, lands what the API gives, and the same file again adds nothing', async () => {
    if (!server.listening) await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { gzipSync } = await import('node:zlib');
    const { writeFile } = await import('node:fs/promises');
    const apiBase = simulator.env.ROAD_ETL_SIGNS_URL!;
    const answer = async (api: 'v4' | 'v5', accept: string) =>
      Buffer.from(
        await (
          await fetch(liveUrl({ api, base: apiBase, format: 'geojson' }), { headers: { accept } })
        ).arrayBuffer(),
      );
    const csv = await answer('v4', 'text/csv');
    const lines = csv.toString('utf8').trimEnd().split('\n');
    expect(lines[0]).toContain('rvvCode');
    // The file differs from the API's answer (a day older: five signs fewer), so that what lands shows which was read.
    const left = lines.slice(-5).map((l) => l.split(',')[0]!.replace(/"/g, ''));
    const geojson = await answer('v5', 'application/geo+json');
    const files = await testDir();
    await writeFile(join(files, 'signs.csv.gz'), gzipSync(lines.slice(0, -5).join('\n') + '\n'));
    served.set('/bulk/signs.geojson.gz', {
      body: gzipSync(geojson),
      modified: 'Tue, 24 Nov 2026 04:00:00 GMT',
    });

    // A plain GeoJSON file at a local path is read where it lies (linked into the staging folder).
    await writeFile(join(files, 'signs.geojson'), geojson);
    for (const [api, format, file] of [
      ['v4', 'csv', join(files, 'signs.csv.gz')],
      ['v5', 'geojson', `${base}/bulk/signs.geojson.gz`],
      ['v5', 'geojson', join(files, 'signs.geojson')],
    ] as const) {
      const viaApi = await runDefinition(
        await testDir(),
        pipeline({ api, format }),
        await sqlFiles(),
        { env },
      );
      expect(viaApi.failure).toBeUndefined();
      const dir = await testDir();
      const viaFile = await runDefinition(dir, pipeline({ api, format, file }), await sqlFiles(), {
        env,
      });
      expect(viaFile.failure, file).toBeUndefined();
      const rows = await landed(viaFile.output);
      const gone = api === 'v4' ? new Set(left) : new Set<string>();
      expect(gone.size).toBe(api === 'v4' ? 5 : 0);
      expect(rows.length, file).toBe(truth(api).length - gone.size);
      expect(rows, file).toEqual(
        (await landed(viaApi.output)).filter((r) => !gone.has(String(r['sign_id']))),
      );
      // The same file again (same time, same Last-Modified): no new snapshot.
      const again = await runDefinition(dir, pipeline({ api, format, file }), await sqlFiles(), {
        env,
      });
      expect(again.failure).toBeUndefined();
      expect(await readdir(join(dir, 'output', 'signs', 'live_snapshots')), file).toHaveLength(1);
    }
    // The URL was asked twice: the file, then whether it changed since (it had not).
    expect(asked).toEqual([200, 304]);
    // The user's file is as it was: the features were cut into lines apart from it.
    expect((await readFile(join(files, 'signs.geojson'))).equals(geojson)).toBe(true);
    // A definition that reads only the local file names no source, and lands the same rows.
    const file = join(files, 'signs.csv.gz');
    const alone = await runDefinition(
      await testDir(),
      `name: live\nsteps:\n  - { id: signs_live, kind: signs.live, options: ${JSON.stringify({ api: 'v4', format: 'csv', file })} }\n`,
      {},
      { env: {} },
    );
    expect(alone.failure).toBeUndefined();
    expect(await landed(alone.output)).toHaveLength(truth('v4').length - 5);
  });

  it('reads an uncompressed local file where it lies, and leaves it as it was', async () => {
    const { stat, writeFile } = await import('node:fs/promises');
    const geojson = Buffer.from(
      await (
        await fetch(
          liveUrl({ api: 'v5', base: simulator.env.ROAD_ETL_SIGNS_URL!, format: 'geojson' }),
          {
            headers: { accept: 'application/geo+json' },
          },
        )
      ).arrayBuffer(),
    );
    const file = join(await testDir(), 'signs.geojson');
    await writeFile(file, geojson);
    const viaApi = await runDefinition(await testDir(), pipeline({ api: 'v5' }), await sqlFiles(), {
      env,
    });
    const viaFile = await runDefinition(
      await testDir(),
      pipeline({ api: 'v5', file }),
      await sqlFiles(),
      { env },
    );
    expect(viaFile.failure).toBeUndefined();
    expect(await landed(viaFile.output)).toEqual(await landed(viaApi.output));
    expect((await readFile(file)).equals(geojson)).toBe(true);
    // No link to it is left behind.
    expect((await stat(file)).nlink).toBe(1);
  });
});

describe('signs_live_changes between two answers, by hand', () => {
  const at = (n: number, properties: Record<string, unknown>) => ({
    type: 'Feature',
    id: `5e1c2a34-5b6d-4e7f-8a9b-${String(n).padStart(12, '0')}`,
    geometry: { type: 'Point', coordinates: [4.9, 52.37] },
    properties: { rvvCode: 'C7', countyCode: 'GM0363', ...properties },
  });
  let features: unknown[] = [];
  const service = collectionService(() => features);

  it('names a text that does not type by its field, an empty list apart from none, an item moved between lists', async () => {
    const url = await service();
    const dir = await testDir();
    const night = async (served: unknown[]) => {
      features = served;
      const run = await runDefinition(dir, pipeline({ api: 'v5' }), await sqlFiles(), {
        env: { ROAD_ETL_SIGNS_URL: url },
      });
      expect(run.failure).toBeUndefined();
      return run.output;
    };
    const restrictions = (vehicleType: string[], category: string[]) => ({
      conditions: { restrictions: { vehicleType, category } },
    });
    await night([
      at(1, { validatedOn: 'soon' }),
      at(2, { comments: [] }),
      at(3, restrictions(['car', 'bus'], ['M'])),
      at(4, { bearing: 10 }),
      at(5, {}),
      at(6, {}),
    ]);
    const output = await night([
      at(1, { validatedOn: 'later' }),
      at(2, {}),
      at(3, restrictions(['car'], ['bus', 'M'])),
      at(4, { bearing: 10 }),
      { ...at(5, { roadName: 'Ring' }), geometry: { type: 'Point', coordinates: [4.91, 52.37] } },
      at(7, {}),
    ]);
    const rows = await duck(
      `SELECT right(sign_id, 1) AS n, change, changed_fields FROM read_parquet('${committed(output, 'derived/signs_live_changes/data.parquet')}') ORDER BY n`,
    );
    expect(rows).toEqual([
      { n: '1', change: 'changed', changed_fields: ['validated_on'] },
      { n: '2', change: 'changed', changed_fields: ['comments'] },
      { n: '3', change: 'changed', changed_fields: ['conditions'] },
      { n: '5', change: 'changed', changed_fields: ['geometry', 'road_name'] },
      { n: '6', change: 'removed', changed_fields: null },
      { n: '7', change: 'added', changed_fields: null },
    ]);
    // signs_live_history: a version each, two for the signs that changed.
    const versions = await overViews(
      output,
      `SELECT right(sign_id, 1) AS n, count(*)::INTEGER AS versions FROM signs_live_history GROUP BY ALL ORDER BY n`,
    );
    expect(versions.map((r) => `${String(r['n'])}:${String(r['versions'])}`)).toEqual([
      '1:2',
      '2:2',
      '3:2',
      '4:1',
      '5:2',
      '6:1',
      '7:1',
    ]);
  });
});
