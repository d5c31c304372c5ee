import { describe, expect, it } from 'vitest';
import { permuted, radixOrder } from '../../src/util/radix-order.js';

describe('radixOrder', () => {
  it('orders as a comparison sort by the columns in turn, ties by position', () => {
    let seed = 11;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const count = 20_000;
    const pick = [0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 11, 2 ** 22 - 1];
    const columns = [0, 1, 2].map(() => {
      const column = new Uint32Array(count);
      // Few distinct values in the first columns (many ties), extremes among them.
      for (let i = 0; i < count; i++)
        column[i] = next() % 3 === 0 ? pick[next() % pick.length]! : next();
      return column;
    });
    for (let i = 0; i < count; i += 7) columns[0]![i] = 5;
    columns[2]![10] = columns[2]![20] = 4; // equal in every column with 10 and 20
    columns[1]![20] = columns[1]![10]!;
    columns[0]![20] = columns[0]![10]!;
    const expected = Array.from({ length: count }, (_, i) => i).sort(
      (p, q) =>
        columns[0]![p]! - columns[0]![q]! ||
        columns[1]![p]! - columns[1]![q]! ||
        columns[2]![p]! - columns[2]![q]! ||
        p - q,
    );
    expect([...radixOrder(columns, count)]).toEqual(expected);
    expect([...radixOrder([Uint32Array.from([3, 3, 3])], 3)]).toEqual([0, 1, 2]);
    expect([...radixOrder([], 0)]).toEqual([]);
  });

  it('puts the values in that order', () => {
    const order = Uint32Array.from([2, 0, 1]);
    expect([...permuted(Float64Array.from([0.5, NaN, -1]), order)]).toEqual([-1, 0.5, NaN]);
    expect(permuted(Uint32Array.from([7, 8, 9]), order)).toBeInstanceOf(Uint32Array);
  });
});
