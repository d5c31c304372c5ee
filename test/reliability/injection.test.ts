/**
 * Hostile text, from the service and from the user: spreadsheet formulas, SQL,
 * shell syntax and paths. It stays data: stored verbatim, exported to CSV with
 * formula cells neutralised, never run by a shell or SQL, and never a path.
 */
import { committed } from '../helpers/committed.js';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOSTILE_TEXTS } from '../../src/simulator/signs/payload.js';
import { runCli } from '../helpers/cli.js';
import { parseRfc4180 } from '../helpers/csv.js';
import { stateExportPipeline } from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, pipelineProject, testDir, writeFiles } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 53, signs: { signs: 200, hostileTextRate: 0.4 } });
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };
const FORMULA = /^[=+\-@\t\r]/;
/** What the guard prefixes with ': a formula, or a text that begins with ' (so that it can be undone). */
const GUARDED = /^[=+\-@\t\r']/;
const SHELL_TARGET = '/tmp/road-etl-hostile';

const PIPELINE = stateExportPipeline(
  { concurrency: 2 },
  'id, location_road_name AS road, text_signs',
  `  - id: export_geojson
    kind: export
    needs: [signs_current_state]
    options:
      query: "SELECT id, location_road_name AS road, location_wgs84_longitude AS lon, location_wgs84_latitude AS lat FROM signs_current_state ORDER BY id"
      path: exports/state.geojson
      geometry: { longitude: lon, latitude: lat, id: id }
`,
);

describe('hostile text from the service', () => {
  it('is stored verbatim, neutralised in CSV cells, plain in GeoJSON, and runs nowhere', async () => {
    const { dir, file, output } = await pipelineProject(PIPELINE, ['signs_current_state.sql']);
    const run = await runCli(['run', file, '--output', output], { env });
    expect(run.code, run.stderr).toBe(0);

    // The truth: each current sign's road name as the service sent it.
    const truth = new Map<string, string>();
    for (const payload of simulator.world.currentState()) {
      const road = (payload['location'] as { road: { name: string } }).road.name;
      truth.set(String(payload['id']), road);
    }
    const hostile = [...truth.values()].filter((r) =>
      (HOSTILE_TEXTS as readonly string[]).includes(r),
    );
    expect(new Set(hostile).size).toBeGreaterThanOrEqual(5);

    const stored = await duck(
      `SELECT id::VARCHAR AS id, location_road_name AS road FROM read_parquet('${committed(output, 'derived/signs_current_state/data.parquet')}')`,
    );
    expect(new Map(stored.map((r) => [String(r['id']), String(r['road'])]))).toEqual(truth);

    const [header, ...rows] = parseRfc4180(
      await readFile(join(output, 'exports/state.csv'), 'utf8'),
    );
    expect(header).toEqual(['id', 'road', 'text_signs']);
    expect(rows).toHaveLength(truth.size);
    for (const [id, road, texts] of rows) {
      const original = truth.get(id!)!;
      expect(road).toBe(GUARDED.test(original) ? `'${original}` : original);
      expect(texts ?? '').not.toMatch(FORMULA);
    }

    const geojson = JSON.parse(await readFile(join(output, 'exports/state.geojson'), 'utf8')) as {
      features: { properties: { road: string }; id: unknown }[];
    };
    expect(geojson.features).toHaveLength(truth.size);
    for (const feature of geojson.features) {
      expect(feature.properties.road).toBe(truth.get(String(feature.id)));
    }

    // Nothing ran and nothing was written outside the output folder.
    expect(existsSync(SHELL_TARGET)).toBe(false);
    expect((await readdir(dir)).sort()).toEqual(['output', 'pipelines', 'sql']);
  });
});

describe('hostile text from the user', () => {
  it('binds a param as a value in SQL and neutralises it in the export', async () => {
    const dir = await testDir();
    await writeFiles(dir, {
      'pipelines/p.yaml': `name: p
params:
  label: { type: string, required: true }
steps:
  - id: labelled
    kind: sql
    options: { file: label.sql, params: { label: '\${params.label}' }, outputs: [labelled] }
  - id: export_csv
    kind: export
    needs: [labelled]
    options: { table: labelled, path: exports/label.csv }
`,
      'sql/label.sql': 'CREATE OR REPLACE TABLE labelled AS SELECT $label AS label, 1 AS n;\n',
    });
    for (const label of HOSTILE_TEXTS) {
      const output = join(dir, 'output');
      const run = await runCli(
        ['run', join(dir, 'pipelines/p.yaml'), '--output', output, '--param', `label=${label}`],
        {},
      );
      expect(run.code, run.stderr).toBe(0);
      const [, row] = parseRfc4180(await readFile(join(output, 'exports/label.csv'), 'utf8'));
      expect(row).toEqual([GUARDED.test(label) ? `'${label}` : label, '1']);
    }
    expect(existsSync(SHELL_TARGET)).toBe(false);
    expect((await readdir(dir)).sort()).toEqual(['output', 'pipelines', 'sql']);
  });

  it('refuses a param that would put a file outside the output folder', async () => {
    const dir = await testDir();
    await writeFiles(dir, {
      'pipelines/p.yaml': `name: p
params:
  name: { type: string, required: true }
steps:
  - id: export_csv
    kind: export
    options: { query: "SELECT 1 AS n", path: "exports/\${params.name}.csv" }
`,
    });
    const output = join(dir, 'output');
    const run = await runCli(
      [
        'run',
        join(dir, 'pipelines/p.yaml'),
        '--output',
        output,
        '--param',
        'name=../../../tmp/road-etl-hostile',
      ],
      {},
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /p\.yaml:7: steps\[0\]\.options\.path: must be a relative path inside the output folder/,
    );
    expect(existsSync(output)).toBe(false);
    expect(existsSync(`${SHELL_TARGET}.csv`)).toBe(false);
  });
});
