/**
 * Records the service sends that cannot be kept as they are: events whose
 * fields have the wrong types, and a current-state CSV with a row of a field
 * too many. They go to the quarantine with the reason and the raw record; the
 * rest lands, and the run succeeds.
 */
import { committed } from '../helpers/committed.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STREETS, misEncode } from '../../src/simulator/places.js';
import { runDefinition } from '../helpers/pipeline.js';
import { landedEventHashes, md5, quarantinedHashes, signsPipeline } from '../helpers/signs.js';
import { CURRENT_STATE_PATH, useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 59, signs: { signs: 150, badRecordRate: 0.05 } });
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };

describe('messy records', () => {
  it('quarantines events of the wrong types with the reason, and lands every other event once', async () => {
    const { summary, output } = await runDefinition(
      await testDir(),
      signsPipeline({ limit: 30 }),
      {},
      { env },
    );
    expect(summary.status).toBe('succeeded');
    const events = [...simulator.world.distinctEvents()];
    const bad = events.filter((e) => !/^\d+$/.test(String(e['id'])));
    expect(bad.length).toBeGreaterThan(3);
    expect(await quarantinedHashes(output)).toEqual(bad.map((e) => md5(JSON.stringify(e))).sort());
    const reasons = await duck(
      `SELECT DISTINCT regexp_replace(reason, ': .*', '') AS reason FROM read_parquet('${join(output, 'signs/quarantine')}/*.parquet')`,
    );
    expect(reasons).toEqual([{ reason: 'id is not an integer' }]);
    const good = events.filter((e) => /^\d+$/.test(String(e['id'])));
    expect(await landedEventHashes(output)).toEqual(good.map((e) => md5(JSON.stringify(e))));
  });

  it('flags text mis-encoded upstream (UTF-8 read as Latin-1) in typing_issues and keeps it as received', async () => {
    const { summary, output } = await runDefinition(
      await testDir(),
      signsPipeline({ limit: 30 }),
      {},
      { env },
    );
    expect(summary.status).toBe('succeeded');
    // The ground truth: the street names as the simulator mangles them (independent of the check).
    const mangled = new Set(STREETS.map(misEncode).filter((m, i) => m !== STREETS[i]));
    const want = new Map<string, number>();
    for (const e of simulator.world.distinctEvents()) {
      if (!/^\d+$/.test(String(e['id']))) continue;
      const name = (e['location'] as { road?: { name?: unknown } } | undefined)?.road?.name;
      if (typeof name === 'string' && mangled.has(name)) want.set(name, (want.get(name) ?? 0) + 1);
    }
    expect(want.size).toBeGreaterThan(0);
    const flagged = await duck(
      `SELECT location_road_name AS name, count(*) AS n
       FROM read_parquet('${join(output, 'signs/events')}/**/*.parquet')
       WHERE list_contains(typing_issues, 'location_road_name: mis-encoded UTF-8 (' || location_road_name || ')')
       GROUP BY ALL`,
    );
    expect(new Map(flagged.map((r) => [String(r['name']), Number(r['n'])]))).toEqual(want);
    // The same names written well are not flagged.
    const [clean] = await duck(
      `SELECT count(*) AS n FROM read_parquet('${join(output, 'signs/events')}/**/*.parquet')
       WHERE list_contains([${STREETS.map((s) => `'${s.replace(/'/g, "''")}'`).join(', ')}], location_road_name)
         AND len(list_filter(typing_issues, i -> i LIKE '%mis-encoded%')) > 0`,
    );
    expect(Number(clean?.['n'])).toBe(0);
  });

  it('quarantines a current-state CSV row with a field too many, with its line, and keeps the others', async () => {
    simulator.inject({ kind: 'ragged-csv', path: CURRENT_STATE_PATH });
    const { summary, output } = await runDefinition(
      await testDir(),
      `name: s\nsource:\n  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }\nsteps:\n  - { id: snap, kind: signs.snapshot, options: { format: csv } }\n`,
      {},
      { env },
    );
    expect(summary.status).toBe('succeeded');
    const state = [...simulator.world.currentState(simulator.world.snapshotMoment)];
    // The simulator made the first row after the header ragged (and, as for events, a few
    // ids that are no numbers: those are quarantined by the typing).
    const raggedId = String(state[0]!['id']);
    const quarantine = await duck(
      `SELECT reason, raw_event::VARCHAR AS raw FROM read_parquet('${join(output, 'signs/quarantine')}/*.parquet') WHERE reason LIKE 'CSV line%'`,
    );
    expect(quarantine).toHaveLength(1);
    expect(quarantine[0]!['reason']).toMatch(
      /^CSV line 2: Expected Number of Columns: \d+ Found: \d+/,
    );
    expect(String(quarantine[0]!['raw'])).toMatch(new RegExp(`^"${raggedId},.*,extra"$`));
    const ids = await duck(
      `SELECT id::VARCHAR AS id FROM read_parquet('${committed(output, 'signs/snapshot/data.parquet')}') ORDER BY id`,
    );
    expect(ids.map((r) => r['id'])).toEqual(
      state
        .map((p) => String(p['id']))
        .filter((id) => id !== raggedId && /^\d+$/.test(id))
        .sort(),
    );
  });
});
