import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { StagedLines, landUnit } from '../../src/sources/signs/landing.js';
import { md5 } from '../helpers/signs.js';
import { duck, testDir } from '../helpers/tmp.js';

const db = await Database.open({ threads: 1 });
afterAll(() => db.close());

const event = (id: number | string, type: string, at: string, extra: object = {}) => ({
  id,
  type,
  publication_timestamp: at,
  location: { county: { code: 'GM0363' } },
  ...extra,
});

describe('landUnit', () => {
  it('lands the taken events of pretty-printed pages as received, each once, with its feed_index', async () => {
    const dir = await testDir();
    const first = [
      event(1, 'created', '2026-01-01T10:00:00.000Z', { text_signs: ['a, "b"', 'c]'] }),
      event(2, 'created', '2026-01-01T10:00:00.000Z'),
      event(3, 'updated', '2026-01-02T09:00:00.000Z', { big: 'BIG' }),
    ];
    const second = [
      event(3, 'updated', '2026-01-02T09:00:00.000Z'),
      event('x', 'created', '2026-01-02T09:00:00.000Z'),
    ];
    // Pretty-printed with CRLF line breaks, and an integer too large for a JavaScript number.
    const pretty = (items: unknown[]) => JSON.stringify(items, null, 2).replaceAll('\n', '\r\n');
    const firstBody = pretty(first).replace('"BIG"', '12345678901234567890');
    const pages = [
      // the second event of the first page was taken before: positions 0 and 2 only
      { body: Buffer.from(firstBody), positions: [0, 2], indexes: [0, 0] },
      { body: Buffer.from(pretty(second)), positions: [1], indexes: [1] },
    ];
    const lines = new StagedLines(join(dir, 'staging', 'unit-1.ndjson'));
    for (const page of pages) await lines.add(page);
    const landed = await landUnit(
      db,
      join(dir, 'out'),
      join(dir, 'staging'),
      'step-1-0',
      lines,
      join(dir, 'parts'),
    );
    expect(landed).toMatchObject({ rows: 2, quarantined: 1 });
    expect(await readdir(join(dir, 'staging'))).toEqual([]);

    const rows = await duck(
      `SELECT id, feed_index, event_hash, raw_event::VARCHAR AS raw, text_signs, publication_date::VARCHAR AS d
       FROM read_parquet('${join(dir, 'out', 'signs/events')}/**/*.parquet', hive_partitioning = true) ORDER BY id`,
    );
    const raw1 = JSON.stringify(first[0]);
    const raw3 =
      '{"id":3,"type":"updated","publication_timestamp":"2026-01-02T09:00:00.000Z","location":{"county":{"code":"GM0363"}},"big":12345678901234567890}';
    expect(rows).toEqual([
      {
        id: '1',
        feed_index: 0,
        event_hash: md5(raw1),
        raw: raw1,
        text_signs: ['a, "b"', 'c]'],
        d: '2026-01-01',
      },
      {
        id: '3',
        feed_index: 0,
        event_hash: md5(raw3),
        raw: raw3,
        text_signs: null,
        d: '2026-01-02',
      },
    ]);
    const quarantined = await duck(
      `SELECT feed_index, reason, event_hash FROM read_parquet('${join(dir, 'out', 'signs/quarantine')}/*.parquet')`,
    );
    const rawX = JSON.stringify(second[1]);
    expect(quarantined).toEqual([
      { feed_index: 1, reason: 'id is not an integer: x', event_hash: md5(rawX) },
    ]);
  });
});
