import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { UnreadableBodyError, stageBatch } from '../../src/sources/bicycle/landing.js';
import { duck, testDir, writeFiles } from '../helpers/tmp.js';

const db = await Database.open({ threads: 1 });
afterAll(() => db.close());

const FROM = Date.parse('2026-01-01T00:00:00Z');
const TO = Date.parse('2026-01-01T03:00:00Z');
const batch = { from: FROM, to: TO, ids: ['A', 'B'], maxCount: 1000 };
const row = (locationId: unknown, hour: unknown, values: unknown, extra = {}) => ({
  ...(locationId === undefined ? {} : { locationId }),
  measurementHour: hour,
  measuredValuesFull: values,
  ...extra,
});

describe('stageBatch', () => {
  it('keeps good rows typed, and says for every other row why it is not kept', async () => {
    const dir = await testDir();
    const body = [
      row('A', '2026-01-01T00:00:00Z', { r: { h: 1, t: 2 } }),
      row('B', '2026-01-01T00:00:00Z', { r: { h: -5, t: 1e12 }, s: { x: 'n/a', y: null } }),
      row('A', '2026-01-01T01:00:00Z', { r: { h: '3', t: 1.5 }, x: 5 }, { note: 'n' }),
      row('A', '2026-01-01T01:00:00Z', { r: { h: 9, t: 9 } }), // a repeat of the hour above
      row('B', '2026-01-01T02:15:00Z', { r: { h: 1 } }),
      row('C', '2026-01-01T00:00:00Z', { r: { h: 1 } }),
      row('B', '2026-01-01T03:00:00Z', { r: { h: 1 } }), // the next window's first hour
      row('B', '2026-01-01T05:00:00Z', { r: { h: 1 } }),
      row(undefined, '2026-01-01T00:00:00Z', { r: { h: 1 } }),
      row('B', 'garbage', { r: { h: 1 } }),
    ];
    await writeFiles(dir, { 'body.json': JSON.stringify(body) });
    const result = await stageBatch(db, dir, 'b1', join(dir, 'body.json'), batch);
    // Rows whose values cannot be counts are kept, the values set apart, and copied to the quarantine.
    expect(result).toEqual({ rows: 3, quarantined: 8, boundary: 1 });

    const staged = join(dir, 'b1.parquet');
    const kept = await duck(
      `SELECT location_id, strftime(measurement_hour, '%H:%M') AS hour, measured_values,
              extra_fields, list_sort(typing_issues) AS issues
       FROM read_parquet('${staged}') WHERE _problem IS NULL AND NOT _boundary ORDER BY hour, location_id`,
    );
    expect(
      kept.map((r) => ({ ...r, measured_values: JSON.stringify(r['measured_values']) })),
    ).toEqual([
      {
        location_id: 'A',
        hour: '00:00',
        measured_values: JSON.stringify([
          { category: 'r', subcategory: 'h', value: '1', issue: null },
          { category: 'r', subcategory: 't', value: '2', issue: null },
        ]),
        extra_fields: null,
        issues: [],
      },
      {
        location_id: 'B',
        hour: '00:00',
        measured_values: JSON.stringify([
          { category: 'r', subcategory: 'h', value: null, issue: 'negative: -5' },
          {
            category: 'r',
            subcategory: 't',
            value: null,
            issue: 'above max_count 1000: 1000000000000',
          },
          { category: 's', subcategory: 'x', value: null, issue: 'not a number: n/a' },
          { category: 's', subcategory: 'y', value: null, issue: null },
        ]),
        extra_fields: null,
        issues: [
          'r/h is not a count (negative: -5)',
          'r/t is not a count (above max_count 1000: 1000000000000)',
          's/x is not a count (not a number: n/a)',
        ],
      },
      {
        location_id: 'A',
        hour: '01:00',
        measured_values: JSON.stringify([
          { category: 'r', subcategory: 'h', value: '3', issue: null },
          { category: 'r', subcategory: 't', value: null, issue: 'not a whole number: 1.5' },
        ]),
        extra_fields: '{"note":"n"}',
        issues: [
          'measuredValuesFull.x is not an object of subcategories',
          'r/t is not a count (not a whole number: 1.5)',
        ],
      },
    ]);
    const reasons = await duck(
      `SELECT coalesce(_problem, _implausible) AS reason FROM read_parquet('${staged}')
       WHERE _problem IS NOT NULL OR _implausible IS NOT NULL ORDER BY 1`,
    );
    expect(reasons.map((r) => r['reason'])).toEqual([
      'another row for the same location and hour came first',
      'implausible count: r/h (negative: -5), r/t (above max_count 1000: 1000000000000), s/x (not a number: n/a)',
      'implausible count: r/t (not a whole number: 1.5)',
      'locationId is missing',
      'locationId was not requested: C',
      'measurementHour is not a timestamp: garbage',
      'measurementHour is not a whole hour: 2026-01-01T02:15:00Z',
      'measurementHour is outside the requested period: 2026-01-01T05:00:00Z',
    ]);
  });

  it('refuses a body that is not a JSON array, so that it is asked for again', async () => {
    const dir = await testDir();
    await writeFiles(dir, { 'cut.json': '[{"locationId":"A","measurementHour":"2026-01-01T0' });
    await expect(stageBatch(db, dir, 'b2', join(dir, 'cut.json'), batch)).rejects.toThrow(
      UnreadableBodyError,
    );
  });
});
