import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { drain } from '../../src/util/work-queue.js';

describe('the work queue', () => {
  it('runs every item, never more than `concurrency` at once', async () => {
    const items = Array.from({ length: 20 }, (_, i) => i);
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await drain({
      concurrency: 3,
      next: () => items.shift(),
      run: async (item) => {
        running++;
        most = Math.max(most, running);
        await sleep(item % 4);
        running--;
        done.push(item);
      },
    });
    expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBe(3);
  });

  it('asks again when a running item has put work back, and ends when nothing is left', async () => {
    const queue = ['a'];
    const ran: string[] = [];
    await drain({
      concurrency: 2,
      next: () => queue.shift(),
      run: async (item) => {
        await sleep(5);
        ran.push(item);
        if (item.length < 3) queue.push(`${item}${item.length}`); // each item puts one back, twice
      },
    });
    expect(ran).toEqual(['a', 'a1', 'a12']);
  });

  it('stops taking at the first failure and throws it once the running items have settled', async () => {
    const items = [1, 2, 3, 4, 5, 6];
    const settled: number[] = [];
    const run = drain({
      concurrency: 2,
      next: () => items.shift(),
      run: async (item) => {
        if (item === 2) throw new Error('item 2 failed');
        await sleep(20);
        settled.push(item);
      },
    });
    await expect(run).rejects.toThrow('item 2 failed');
    // 1 was running when 2 failed: it finished first; nothing was taken after the failure.
    expect(settled).toEqual([1]);
    expect(items).toEqual([3, 4, 5, 6]);
  });

  it('stops taking when the signal aborts, without failing', async () => {
    const stop = new AbortController();
    let taken = 0;
    await drain({
      concurrency: 1,
      signal: stop.signal,
      next: () => (taken < 100 ? ++taken : undefined),
      run: async (item) => {
        if (item === 3) stop.abort();
        await sleep(1);
      },
    });
    expect(taken).toBe(3);
  });
});
