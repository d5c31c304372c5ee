import { describe, expect, it } from 'vitest';
import { Permutation, hash, unit } from '../../src/util/hash.js';

describe('Permutation', () => {
  it.each([1, 2, 3, 17, 1000, 4097])(
    'is a bijection on [0, %i) and inverse undoes forward',
    (size) => {
      const p = new Permutation(size, 42);
      const seen = new Set<number>();
      for (let i = 0; i < size; i++) {
        const v = p.forward(i);
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThan(size);
        expect(p.inverse(v)).toBe(i);
        seen.add(v);
      }
      expect(seen.size).toBe(size);
    },
  );

  it('gives a different order for a different key', () => {
    const a = Array.from({ length: 50 }, (_, i) => new Permutation(50, 1).forward(i));
    const b = Array.from({ length: 50 }, (_, i) => new Permutation(50, 2).forward(i));
    expect(a).not.toEqual(b);
  });
});

describe('hash', () => {
  it('is deterministic and spreads evenly', () => {
    expect(hash(1, 2, 3)).toBe(hash(1, 2, 3));
    expect(hash(1, 2, 3)).not.toBe(hash(1, 2, 4));
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 100_000; i++) buckets[Math.floor(unit(7, i) * 10)]!++;
    for (const count of buckets) expect(Math.abs(count - 10_000)).toBeLessThan(500);
  });
});
