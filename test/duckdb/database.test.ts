import { afterAll, describe, expect, it, vi } from 'vitest';
import { Database } from '../../src/duckdb/database.js';

// Every release relaunches the thread pool, however little the process holds or grew.
const db = await Database.open({ threads: 3, releaseAfter: 0, releaseFrom: 0 });
afterAll(() => db.close());

async function threads(on: Database): Promise<number> {
  const [row] = await on.all(`SELECT current_setting('threads') AS threads`);
  return Number(row?.['threads']);
}

describe('Database.releaseMemory', () => {
  it('leaves the thread setting as it was', async () => {
    await db.releaseMemory();
    expect(await threads(db)).toBe(3);
    await db.run('SET threads = 1');
    await db.releaseMemory();
    expect(await threads(db)).toBe(1);
    await db.run('SET threads = 3');
  });

  it('leaves it as it was when connections release at the same time', async () => {
    const forks = await Promise.all(Array.from({ length: 4 }, () => db.fork()));
    try {
      for (let round = 0; round < 100; round++) {
        await Promise.all(forks.map((fork) => fork.releaseMemory()));
        expect(await threads(db)).toBe(3);
      }
    } finally {
      for (const fork of forks) fork.close();
    }
  });

  it('does not disturb statements running on other connections', async () => {
    const other = await db.fork();
    try {
      const n = 3_000_000;
      const statement = other.all(
        `SELECT sum(i)::VARCHAR AS total, count(DISTINCT i % 1000)::INTEGER AS groups FROM range(${n}) t(i)`,
      );
      for (let i = 0; i < 5; i++) await db.releaseMemory();
      const [row] = await statement;
      // 0 + 1 + ... + (n - 1)
      expect(row).toEqual({ total: String((n * (n - 1)) / 2), groups: 1000 });
    } finally {
      other.close();
    }
  });
});

describe('Database.releaseMemory, by the budget', () => {
  it('keeps the memory while the process holds less than a quarter of its budget, and gives it back beyond', async () => {
    const rss = process.memoryUsage.rss();
    // Eight times what the process holds: it holds an eighth of it. Twice: a half.
    const roomy = await Database.open({ budget: 8 * rss, releaseAfter: 0 });
    const tight = await Database.open({ budget: 2 * rss, releaseAfter: 0 });
    /** The times a release relaunched the thread pool (a change of `threads`). */
    const relaunches = async (on: Database): Promise<number> => {
      const run = vi.spyOn(on.connection, 'run');
      await on.releaseMemory();
      return run.mock.calls.filter(([sql]) => sql.startsWith('SET threads')).length;
    };
    try {
      expect(await relaunches(roomy)).toBe(0);
      expect(await relaunches(tight)).toBe(2);
    } finally {
      roomy.close();
      tight.close();
    }
  });
});

describe('Database.withThreads', () => {
  it('runs with the given threads and sets back the configured value, also when the work fails', async () => {
    const seen = await db.withThreads(1, () => threads(db));
    expect(seen).toBe(1);
    expect(await threads(db)).toBe(3);
    await expect(
      db.withThreads(2, async () => {
        expect(await threads(db)).toBe(2);
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    expect(await threads(db)).toBe(3);
  });
});
