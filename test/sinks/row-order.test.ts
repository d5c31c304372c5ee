import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { rowHash, rowOrder } from '../../src/sinks/row-order.js';

const db = await Database.open();
afterAll(() => db.close());

/** The fingerprint of a one-column row holding `value` (a SQL literal). */
async function fingerprint(value: string): Promise<string> {
  const [typed] = await db.all(`SELECT typeof(${value}) AS t`);
  const hash = rowHash([{ name: 'v', type: String(typed?.['t']) }]);
  const [row] = await db.all(`SELECT ${hash}::VARCHAR AS h FROM (SELECT ${value} AS v)`);
  return String(row?.['h']);
}

describe('a row fingerprint', () => {
  it.each([
    ['[[1, 2]]::INT[][]', '[[1], [2]]::INT[][]'],
    ['[]::INT[]', 'NULL::INT[]'],
    ['NULL::STRUCT(a INT)', "{'a': NULL::INT}"],
    ["[{'x': [1, 2]}, {'x': [3]}]", "[{'x': [1]}, {'x': [2, 3]}]"],
    ["{'a': [1], 'b': []::INT[]}", "{'a': []::INT[], 'b': [1]}"],
    ['[NULL::STRUCT(a INT)]', "[{'a': NULL::INT}]"],
    ["[{'a': [1]}, NULL]", "[{'a': [1]}, {'a': NULL::INT[]}]"],
    ['-0.0::DOUBLE', '0.0::DOUBLE'],
    ['MAP {1: [2]}', 'MAP {1: [2, 3]}'],
  ])('tells %s from %s, which DuckDB hashes alike or writes otherwise', async (a, b) => {
    expect(await fingerprint(a)).not.toBe(await fingerprint(b));
    expect(await fingerprint(a)).toBe(await fingerprint(a));
  });

  it('reads field names that need quotes', async () => {
    const value = `{'the "text"': [1], 'b c': [[2]]}`;
    expect(await fingerprint(value)).not.toBe(
      await fingerprint(`{'the "text"': [], 'b c': [[2]]}`),
    );
  });
});

describe('the order of an extract', () => {
  const columns = [
    { name: 'id', type: 'INTEGER' },
    { name: 'name', type: 'VARCHAR' },
  ];
  const source = (sql: string) => ({ sql: `(${sql})`, params: {} });

  it("is the query's own ORDER BY of its columns, ties by the fingerprint, also under a wrapper that leaves columns out", async () => {
    const plain = await rowOrder(
      db,
      source('SELECT * FROM t ORDER BY id DESC NULLS FIRST, name'),
      columns,
    );
    expect(plain?.orderBy).toBe(
      'ORDER BY road_etl_rows."id" DESC NULLS FIRST, road_etl_rows."name", road_etl_rows._road_etl_row_hash',
    );
    expect(plain?.keyed).not.toMatch(/ORDER BY/i);
    const wrapped = await rowOrder(
      db,
      source('SELECT * EXCLUDE (bbox) FROM (SELECT * FROM t ORDER BY name)'),
      columns,
    );
    expect(wrapped?.orderBy).toBe(
      'ORDER BY road_etl_rows."name", road_etl_rows._road_etl_row_hash',
    );
  });

  it('is none for rows without an order, ordered by an expression, limited, or unreadable', async () => {
    for (const sql of [
      'SELECT * FROM t',
      'SELECT * FROM t ORDER BY id + 1',
      'SELECT * FROM t ORDER BY id LIMIT 5',
      'SELECT * FROM t ORDER BY other',
      'SELECT * FROM (SELECT * FROM t ORDER BY id) WHERE id > 1',
    ])
      expect(await rowOrder(db, source(sql), columns), sql).toBeUndefined();
    expect(await rowOrder(db, { sql: '"t"', params: {} }, columns)).toBeUndefined();
  });

  it("keeps the query's constants that a JavaScript number cannot hold", async () => {
    await db.run(`CREATE OR REPLACE TEMP TABLE t AS SELECT 1 AS id, 'a' AS name`);
    const sql = 'SELECT *, 100000000000000000007::HUGEINT AS big FROM t ORDER BY id';
    const typed = [...columns, { name: 'big', type: 'HUGEINT' }];
    const order = await rowOrder(db, source(sql), typed);
    const from = order ? `${order.keyed} ${order.orderBy}` : `(${sql})`;
    const [row] = await db.all(`SELECT big::VARCHAR AS big FROM ${from}`);
    expect(row).toEqual({ big: '100000000000000000007' });
    await db.run('DROP TABLE t');
  });
});
