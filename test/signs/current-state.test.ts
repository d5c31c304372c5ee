import { committed } from '../helpers/committed.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDefinition } from '../helpers/pipeline.js';
import {
  signsPipeline,
  tableHashes,
  tableStateKeys,
  truthStateHashes,
  truthStateKeys,
} from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir, writeParquet } from '../helpers/tmp.js';
import { ROOT } from '../helpers/cli.js';

const simulator = await useSimulator({ seed: 21, signs: { signs: 800 } });
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };

const steps = (mode: string, format = 'json') => `  - id: signs_snapshot
    kind: signs.snapshot
    options: { format: ${format} }
  - id: signs_current_state
    kind: sql
    needs: [signs_events, signs_snapshot]
    options: { file: signs_current_state.sql, params: { mode: ${mode} }, outputs: [signs_current_state] }
  - id: signs_reconcile
    kind: sql
    needs: [signs_events, signs_snapshot]
    options: { file: signs_reconcile.sql, outputs: [signs_reconcile] }
  - id: export_geojson
    kind: export
    needs: [signs_current_state]
    options:
      query: SELECT * EXCLUDE (raw_event) FROM signs_current_state ORDER BY id
      path: exports/signs_current_state.geojson
      geometry: { longitude: location_wgs84_longitude, latitude: location_wgs84_latitude, id: id }
`;

async function sqlFiles(): Promise<Record<string, string>> {
  const read = (name: string) => readFile(join(ROOT, 'sql', name), 'utf8');
  return {
    'signs_current_state.sql': await read('signs_current_state.sql'),
    'signs_reconcile.sql': await read('signs_reconcile.sql'),
  };
}

describe('the current state of every sign', () => {
  it.each([
    ['events', 'json'],
    ['snapshot', 'json'],
    ['snapshot', 'csv'],
  ])(
    "equals the simulator's current state when built from %s (snapshot downloaded as %s)",
    async (mode, format) => {
      const dir = await testDir();
      const { failure, output } = await runDefinition(
        dir,
        signsPipeline({ concurrency: 3 }, steps(mode, format)),
        await sqlFiles(),
        { env },
      );
      expect(failure).toBeUndefined();
      expect(await tableStateKeys(output, 'signs_current_state')).toEqual(
        truthStateKeys(simulator),
      );
    },
  );

  it('keeps each current event exactly as received (raw_event and its hash)', async () => {
    const dir = await testDir();
    const { output } = await runDefinition(
      dir,
      signsPipeline({ concurrency: 2 }, steps('snapshot', 'json')),
      await sqlFiles(),
      { env },
    );
    expect(await tableHashes(output, 'signs_current_state')).toEqual(truthStateHashes(simulator));
    const raw = await duck(
      `SELECT raw_event::VARCHAR AS raw FROM read_parquet('${committed(output, 'derived/signs_current_state/data.parquet')}') ORDER BY id`,
    );
    const truth = [...simulator.world.currentState()].sort(
      (a, b) => Number(a['id']) - Number(b['id']),
    );
    expect(raw.map((r) => JSON.parse(String(r['raw'])) as unknown)).toEqual(truth);
  });

  it('downloads a snapshot equal to the state at the monthly snapshot moment, and the reconcile finds no difference', async () => {
    const dir = await testDir();
    const { output } = await runDefinition(
      dir,
      signsPipeline({ concurrency: 2 }, steps('events')),
      await sqlFiles(),
      { env },
    );
    const snapshot = await duck(
      `SELECT count(*) AS n, max(snapshot_moment)::VARCHAR AS moment FROM read_parquet('${committed(output, 'signs/snapshot/data.parquet')}')`,
    );
    expect(snapshot).toEqual([
      {
        n: String(truthStateHashes(simulator, simulator.world.snapshotMoment).length),
        moment: '2026-11-01 00:00:00+00',
      },
    ]);
    expect(
      await duck(
        `SELECT count(*) AS n FROM read_parquet('${committed(output, 'derived/signs_reconcile/data.parquet')}')`,
      ),
    ).toEqual([{ n: '0' }]);
  });

  it('exports every sign of the current state as a GeoJSON point at its WGS84 position', async () => {
    const dir = await testDir();
    const { output } = await runDefinition(
      dir,
      signsPipeline({ concurrency: 2 }, steps('events')),
      await sqlFiles(),
      { env },
    );
    const collection = JSON.parse(
      await readFile(join(output, 'exports/signs_current_state.geojson'), 'utf8'),
    ) as {
      features: {
        id: number;
        geometry: { coordinates: [number, number] };
        properties: Record<string, unknown>;
      }[];
    };
    const truth = [...simulator.world.currentState()].sort(
      (a, b) => Number(a['id']) - Number(b['id']),
    );
    expect(collection.features.map((f) => f.id)).toEqual(truth.map((e) => Number(e['id'])));
    collection.features.forEach((feature, i) => {
      const wgs84 = truth[i]!['location'] as {
        wgs84: { latitude: unknown; longitude: unknown };
        rd: { x: unknown };
      };
      expect(feature.geometry.coordinates).toEqual([
        Number(wgs84.wgs84.longitude),
        Number(wgs84.wgs84.latitude),
      ]);
      expect(feature.properties['location_rd_x']).toBe(Number(wgs84.rd.x));
    });
  });

  it('refuses to build from a snapshot that was never downloaded', async () => {
    const dir = await testDir();
    const yaml = signsPipeline(
      { concurrency: 1 },
      `  - id: cs
    kind: sql
    needs: [signs_events]
    options: { file: signs_current_state.sql, params: { mode: snapshot }, outputs: [signs_current_state] }
`,
    );
    const { failure } = await runDefinition(dir, yaml, await sqlFiles(), { env });
    expect(failure?.message).toMatch(/mode snapshot needs signs\/snapshot/);
  });
});

describe('signs.snapshot', () => {
  it('downloads the monthly snapshot only when the service has a newer one', async () => {
    const monthly = await useSimulator({
      seed: 22,
      signs: { signs: 300 },
      now: '2026-10-20T00:00:00.000Z',
    });
    const dir = await testDir();
    const yaml = `name: s\nsource:\n  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }\nsteps:\n  - { id: snap, kind: signs.snapshot }\n`;
    const senv = { ROAD_ETL_SIGNS_URL: monthly.env.ROAD_ETL_SIGNS_URL };
    const first = await runDefinition(dir, yaml, {}, { env: senv });
    const file = committed(first.output, 'signs/snapshot/data.parquet');
    const count = async () =>
      Number((await duck(`SELECT count(*) AS n FROM read_parquet('${file}')`))[0]!['n']);
    expect(await count()).toBe(truthStateKeys(monthly, monthly.world.snapshotMoment).length);
    const bytes = await readFile(file);

    const second = await runDefinition(dir, yaml, {}, { env: senv });
    expect(second.summary.steps[0]).toMatchObject({ status: 'succeeded', rows_out: 0 });
    expect(
      monthly.requests.filter((r) => r.route === 'current-state').map((r) => r.status),
    ).toEqual([200, 304]);
    expect((await readFile(file)).equals(bytes)).toBe(true);

    monthly.world.setNow('2026-11-14T00:00:00.000Z');
    const third = await runDefinition(dir, yaml, {}, { env: senv });
    expect(third.summary.steps[0]!.rows_out).toBe(
      truthStateKeys(monthly, monthly.world.snapshotMoment).length,
    );
    expect(
      monthly.requests.filter((r) => r.route === 'current-state').map((r) => r.status),
    ).toEqual([200, 304, 200]);
  });
});

describe('signs_reconcile.sql', () => {
  it('lists signs only in one side and the fields that differ', async () => {
    const dir = await testDir();
    const columns = `id, type, publication_timestamp, validated, rvv_code, location_wgs84_latitude`;
    const events = `SELECT * FROM (VALUES
      (1, 'created', TIMESTAMP '2024-01-01 00:00:00', 'J', 'C2', 52.1, 0),
      (1, 'updated', TIMESTAMP '2024-02-01 00:00:00', 'J', 'C3', 52.1, 0),
      (2, 'created', TIMESTAMP '2024-01-01 00:00:00', 'N', 'A1', 52.2, 1),
      (3, 'created', TIMESTAMP '2024-01-01 00:00:00', 'N', 'A1', 52.3, 2),
      (4, 'created', TIMESTAMP '2024-01-01 00:00:00', 'N', 'A1', 52.4, 3),
      (4, 'deleted', TIMESTAMP '2024-01-05 00:00:00', 'N', 'A1', 52.4, 0),
      (5, 'created', TIMESTAMP '2024-03-05 00:00:00', 'N', 'A1', 52.5, 0)
    ) t(${columns}, feed_index)`;
    const snapshot = `SELECT *, TIMESTAMP '2024-03-01 00:00:00' AS snapshot_moment FROM (VALUES
      (1, 'updated', TIMESTAMP '2024-02-01 00:00:00', 'J', 'C3', 52.1),
      (2, 'created', TIMESTAMP '2024-01-01 00:00:00', 'N', 'B6', 52.2),
      (6, 'created', TIMESTAMP '2024-02-01 00:00:00', 'N', 'A1', 52.6)
    ) t(${columns})`;
    await writeParquet(
      join(dir, 'output/signs/events/publication_date=2024-01-01/x.parquet'),
      events,
    );
    await writeParquet(join(dir, 'output/signs/snapshot/data.parquet'), snapshot);
    const yaml = `name: r\nsteps:\n  - { id: r, kind: sql, options: { file: signs_reconcile.sql, outputs: [signs_reconcile] } }\n`;
    // The datasets hold a few of the compared columns only: the file compares those it finds.
    const { failure, output } = await runDefinition(dir, yaml, {
      'signs_reconcile.sql': (await sqlFiles())['signs_reconcile.sql']!,
    });
    expect(failure).toBeUndefined();
    const rows = await duck(
      `SELECT id, difference, differing_fields FROM read_parquet('${committed(output, 'derived/signs_reconcile/data.parquet')}') ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: 2, difference: 'fields_differ', differing_fields: ['rvv_code'] },
      { id: 3, difference: 'only_in_events', differing_fields: [] },
      { id: 6, difference: 'only_in_snapshot', differing_fields: [] },
    ]);
  });
});
