import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { DataError, EXIT_FAILED, explainDataError } from '../../src/errors.js';

const db = await Database.open({ threads: 1 });
afterAll(() => db.close());

async function failure(sql: string): Promise<unknown> {
  try {
    await db.all(sql);
  } catch (error) {
    return error;
  }
  throw new Error(`expected ${sql} to fail`);
}

describe('DuckDB failures while typing upstream data', () => {
  it('are data errors (exit 1) that say what was being read, with DuckDB’s error as cause', async () => {
    const error = await failure(`SELECT CAST('twelve' AS INTEGER)`);
    const explained = explainDataError(error, 'the events of unit u-1');
    expect(explained).toBeInstanceOf(DataError);
    expect((explained as DataError).exitCode).toBe(EXIT_FAILED);
    expect((explained as DataError).message).toMatch(
      /^the events of unit u-1 cannot be typed: Conversion Error: .*twelve/,
    );
    expect((explained as DataError).cause).toBe(error);
    const json = await failure(`SELECT json_extract('{"a":', '$.a')`);
    expect(explainDataError(json, 'a body')).toBeInstanceOf(DataError);
  });

  it('leave errors of the SQL itself and of the disk as they are', async () => {
    const binder = await failure('SELECT no_such_column FROM range(1)');
    expect(explainDataError(binder, 'a body')).toBe(binder);
    const io = await failure(`SELECT * FROM read_parquet('/nonexistent/x.parquet')`);
    expect(explainDataError(io, 'a body')).toBe(io);
  });
});
