import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { engineSql } from '../../src/duckdb/sql-files.js';
import { liveState } from '../../src/simulator/index.js';
import { lenientMembers, strictMembers } from '../../src/sources/signs/live-members.js';
import { sampleFeatures } from '../../src/sources/signs/live-sample.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 41, signs: { signs: 2000 } });

const sign = (n: number, properties: Record<string, unknown>) => ({
  type: 'Feature',
  id: `6f1c2a34-5b6d-4e7f-8a9b-${String(n).padStart(12, '0')}`,
  geometry: { type: 'Point', coordinates: [4.9 + n / 1000, 52.37] },
  properties: { rvvCode: 'C7', countyCode: 'GM0363', ...properties },
});

/** Features whose text is messy but whose shapes are NDW's: both ways must type them alike. */
const MESSY = [
  sign(1, { bearing: 'abc', fraction: '0.5', validatedOn: '2024-13-45', placedOn: ' 2024-01-31 ' }),
  sign(2, {
    bearing: 30,
    roadSectionId: '600123456',
    privateProperty: 'true',
    missingRoadSection: false,
  }),
  sign(3, { roadName: 'CuraÃ§aostraat', townName: { not: 'text' }, comments: [], textSigns: null }),
  sign(4, { supplementarySigns: [{ signCode: 'OB104', index: '2', externalReferences: [] }] }),
  sign(5, { conditions: { restrictions: { vehicleType: [], weight: '3.5' }, exemptions: [{}] } }),
  sign(6, {
    conditions: { exemptions: [{ vehicleType: ['bus'], emissionClass: 6 }] },
    newField: 1,
  }),
  { ...sign(7, {}), id: 12345 },
  { ...sign(8, {}), geometry: { type: 'Point', coordinates: ['5.1', 52.1] } },
  { ...sign(9, {}), geometry: null },
  { type: 'Feature', id: '6f1c2a34-5b6d-4e7f-8a9b-000000000010', geometry: null },
];

async function linesOf(features: unknown[]): Promise<string> {
  const file = join(await testDir(), 'features.jsonl');
  await writeFile(file, features.map((f) => JSON.stringify(f)).join('\n') + '\n');
  return file;
}

/** live_typing.sql over `members`, every column as text, sorted. */
async function typed(db: Database, members: string): Promise<string[]> {
  await db.run(`CREATE OR REPLACE TEMP VIEW live_members AS SELECT * FROM ${members}`);
  const rows = await db.all(
    `SELECT * EXCLUDE (properties, raw_feature) FROM (${await engineSql('sources/signs', 'live_typing')})`,
    { api: 'v5', downloaded_at: '2026-11-24T06:00:00.000Z' },
  );
  return rows.map((row) => JSON.stringify(row)).sort();
}

describe('the two ways to a feature’s members (live-members.ts)', () => {
  it('type the simulator’s answer and messy text alike; only the lenient way keeps the properties', async () => {
    const features = [...liveState(simulator.world, simulator.world.now, 'v5'), ...MESSY];
    const file = await linesOf(features);
    const db = await Database.open({ threads: 2 });
    try {
      const strict = await typed(db, strictMembers(file));
      const lenient = await typed(db, lenientMembers(file));
      expect(strict).toHaveLength(features.length);
      expect(strict).toEqual(lenient);
      // What the hand says of the messy ones: a text that does not type is named with it.
      await db.run(
        `CREATE OR REPLACE TEMP VIEW live_members AS SELECT * FROM ${strictMembers(file)}`,
      );
      const [first] = await db.all(
        `SELECT bearing, fraction, typing_issues, placed_on::VARCHAR AS placed_on, properties
         FROM (${await engineSql('sources/signs', 'live_typing')}) WHERE sign_id = '${MESSY[0]!.id}'`,
        { api: 'v5', downloaded_at: '2026-11-24T06:00:00.000Z' },
      );
      expect(first).toEqual({
        bearing: null,
        fraction: 0.5,
        typing_issues: ['validated_on: not typed (2024-13-45)', 'bearing: not typed (abc)'],
        placed_on: '2024-01-31',
        properties: null,
      });
      await db.run(
        `CREATE OR REPLACE TEMP VIEW live_members AS SELECT * FROM ${lenientMembers(file)}`,
      );
      const kept = await db.all(
        `SELECT sign_id, properties::VARCHAR AS p FROM (${await engineSql('sources/signs', 'live_typing')}) WHERE sign_id IS NOT NULL`,
        { api: 'v5', downloaded_at: '2026-11-24T06:00:00.000Z' },
      );
      const served = new Map(
        features.map((f) => [String(f.id), (f as { properties?: unknown }).properties ?? {}]),
      );
      for (const row of kept)
        expect(JSON.parse(String(row['p'])), String(row['sign_id'])).toEqual(
          served.get(String(row['sign_id'])),
        );
    } finally {
      db.close();
    }
  });

  it('the strict way refuses a nested value of another shape; the lenient way types it NULL', async () => {
    const misfit = sign(11, {
      conditions: { restrictions: { emissionClass: 'EURO6', weight: 3.5 } },
    });
    const file = await linesOf([sign(12, {}), misfit]);
    const db = await Database.open({ threads: 1 });
    try {
      await expect(typed(db, strictMembers(file))).rejects.toThrow(/EURO6/);
      const rows = await typed(db, lenientMembers(file));
      const conditions = new Map(
        rows
          .map((r) => JSON.parse(r) as Record<string, unknown>)
          .map((r) => [r['sign_id'], r['conditions']]),
      );
      expect(conditions.get(sign(12, {}).id)).toBeNull();
      expect(conditions.get(misfit.id)).toEqual({
        restrictions: expect.objectContaining({ emission_class: null, weight: 3.5 }) as unknown,
        exemptions: null,
      });
    } finally {
      db.close();
    }
  });
});

describe('a sample of the features (live-sample.ts)', () => {
  it('names the members the schemas do not, nested ones too, and none of the simulator’s', async () => {
    const served = [...liveState(simulator.world, simulator.world.now, 'v5')];
    const clean = await sampleFeatures(await linesOf(served));
    expect(clean.features).toBe(served.length);
    expect(clean.unnamed.size).toBe(0);

    // 40,000 features, every 50th with a member NDW added: windows spread over the file find it.
    const features = Array.from({ length: 40_000 }, (_, i) =>
      sign(
        i,
        i % 50 === 7
          ? { trafficOrderDate: '2026-01-01', conditions: { restrictions: { axles: 3 } } }
          : {},
      ),
    );
    const file = await linesOf(features);
    const sampled = await sampleFeatures(file, 32, 16 << 10);
    expect(sampled.features).toBeGreaterThan(32 * 50);
    expect(sampled.features).toBeLessThan(features.length / 4);
    expect([...sampled.unnamed.keys()].sort()).toEqual([
      'conditions.restrictions.axles',
      'trafficOrderDate',
    ]);
    // About one in fifty of those sampled.
    const share = sampled.unnamed.get('trafficOrderDate')! / sampled.features;
    expect(share).toBeGreaterThan(0.01);
    expect(share).toBeLessThan(0.04);
  });
});
