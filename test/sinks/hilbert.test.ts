import { describe, expect, it } from 'vitest';
import { withHilbert } from '../../src/duckdb/hilbert.js';
import { duck } from '../helpers/tmp.js';

/** FlatGeobuf's hilbert(x, y) of packedrtree.cpp, line by line in 32-bit JavaScript. */
function hilbert(x: number, y: number): number {
  let a = x ^ y;
  let b = 0xffff ^ a;
  let c = 0xffff ^ (x | y);
  let d = x & (y ^ 0xffff);
  let A = a | (b >>> 1);
  let B = (a >>> 1) ^ a;
  let C = (c >>> 1) ^ (b & (d >>> 1)) ^ c;
  let D = (a & (c >>> 1)) ^ (d >>> 1) ^ d;
  for (const n of [2, 4]) {
    a = A;
    b = B;
    c = C;
    d = D;
    A = (a & (a >>> n)) ^ (b & (b >>> n));
    B = (a & (b >>> n)) ^ (b & ((a ^ b) >>> n));
    C ^= (a & (c >>> n)) ^ (b & (d >>> n));
    D ^= (b & (c >>> n)) ^ ((a ^ b) & (d >>> n));
  }
  a = A;
  b = B;
  c = C;
  d = D;
  C ^= (a & (c >>> 8)) ^ (b & (d >>> 8));
  D ^= (b & (c >>> 8)) ^ ((a ^ b) & (d >>> 8));
  a = C ^ (C >>> 1);
  b = D ^ (D >>> 1);
  let i0 = x ^ y;
  let i1 = b | (0xffff ^ (i0 | a));
  const spread = (v: number): number => {
    v = (v | (v << 8)) & 0x00ff00ff;
    v = (v | (v << 4)) & 0x0f0f0f0f;
    v = (v | (v << 2)) & 0x33333333;
    return (v | (v << 1)) & 0x55555555;
  };
  i0 = spread(i0);
  i1 = spread(i1);
  return ((i1 << 1) | i0) >>> 0;
}

describe('the Hilbert value in SQL', () => {
  it("equals FlatGeobuf's reference over the grid's corners and 2,000 points", async () => {
    const points: [number, number][] = [
      [0, 0],
      [65535, 0],
      [0, 65535],
      [65535, 65535],
      [1, 0],
      [0, 1],
    ];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 65536;
    for (let i = 0; i < 2000; i++) points.push([next(), next()]);
    const values = points.map(([x, y]) => `(${x}, ${y})`).join(', ');
    const sql = withHilbert(`SELECT * FROM (VALUES ${values}) t(x, y)`, 'x', 'y', {
      minX: 0,
      minY: 0,
      width: 65535,
      height: 65535,
    });
    const rows = await duck(`${sql} ORDER BY x, y`);
    const byPoint = new Map(rows.map((r) => [`${String(r['x'])},${String(r['y'])}`, r['hilbert']]));
    for (const [x, y] of points)
      expect(Number(byPoint.get(`${x},${y}`)), `${x},${y}`).toBe(hilbert(x, y));
    // The curve's first four steps are the four cells of the first 2 × 2 square.
    const square = [hilbert(0, 0), hilbert(0, 1), hilbert(1, 1), hilbert(1, 0)];
    expect(square.sort((p, q) => p - q)).toEqual([0, 1, 2, 3]);
  });
});
