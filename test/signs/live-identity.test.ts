import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { landedLiveIdentity } from '../../src/sources/signs/identity.js';

let db: Database;

// Municipalities and their signs' count: the sample is the smallest ones, taken
// while fewer than 200 signs are in it, five at most.
const COUNTIES: [string, number][] = [
  ['GM0001', 500],
  ['GM0002', 150],
  ['GM0003', 3],
  ['GM0004', 100],
  ['GM0005', 10],
  ['GM0006', 10],
];

beforeAll(async () => {
  db = await Database.open({ threads: 1 });
  const rows = COUNTIES.map(
    ([county, n]) =>
      `SELECT '${county}' AS county_code, '${county}-' || lpad(i::VARCHAR, 3, '0') AS sign_id FROM range(${n}) t(i)`,
  );
  // Signs without a municipality are in no sample; ids in another order than sorted.
  await db.run(
    `CREATE VIEW signs_live AS SELECT * FROM (${rows.join(' UNION ALL ')} UNION ALL SELECT NULL, 'x-' || i FROM range(50) t(i)) ORDER BY hash(sign_id)`,
  );
});

afterAll(() => {
  db.close();
});

describe('landedLiveIdentity', () => {
  it('samples the smallest municipalities, each with its signs sorted, up to enough signs to decide', async () => {
    const identity = await landedLiveIdentity(db, 'http://service', 'v5');
    const ids = (county: string, n: number) =>
      Array.from({ length: n }, (_, i) => `${county}-${String(i).padStart(3, '0')}`);
    // By count, then code: GM0003 (3), GM0005 (10), GM0006 (10), GM0004 (100) bring
    // 123 signs, fewer than 200, so GM0002 (150) is taken too; GM0001 is not.
    expect(identity).toEqual({
      url: 'http://service',
      request: 'v5',
      sample: [
        { county: 'GM0003', signs: ids('GM0003', 3) },
        { county: 'GM0005', signs: ids('GM0005', 10) },
        { county: 'GM0006', signs: ids('GM0006', 10) },
        { county: 'GM0004', signs: ids('GM0004', 100) },
        { county: 'GM0002', signs: ids('GM0002', 150) },
      ],
    });
  });
});
