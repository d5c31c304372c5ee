/**
 * The Hilbert value of a point, in SQL: the order in which a FlatGeobuf file
 * stores its features, so that each node of its packed R-tree holds points
 * that lie together. It is FlatGeobuf's own (packedrtree.cpp, after
 * rawrunprotected/hilbert_curves): the position scaled to a 65535 × 65535 grid
 * over the extent, then 16 bits of x and y turned into a 32-bit curve index.
 * Each stage is a projection over the previous one (`* REPLACE`), so the
 * variables that the C code reassigns are computed once per row.
 */

/** Extra columns a stage adds to the rows (dropped again by the last). */
const STATE = ['h_x', 'h_y', 'h_a', 'h_b', 'h_c', 'h_d'] as const;

/** One of the reference's "A, B, C, D from a, b, c, d" stages, with shift n. */
function stage(n: number): string {
  return (
    `xor(h_a & (h_a >> ${n}), h_b & (h_b >> ${n})) AS h_a, ` +
    `xor(h_a & (h_b >> ${n}), h_b & (xor(h_a, h_b) >> ${n})) AS h_b, ` +
    `xor(h_c, xor(h_a & (h_c >> ${n}), h_b & (h_d >> ${n}))) AS h_c, ` +
    `xor(h_d, xor(h_b & (h_c >> ${n}), xor(h_a, h_b) & (h_d >> ${n}))) AS h_d`
  );
}

/** Spreads the 16 low bits of a value over the even bits of 32. */
function spread(column: string): string[] {
  return [
    `(${column} | (${column} << 8)) & 16711935 AS ${column}`, // 0x00FF00FF
    `(${column} | (${column} << 4)) & 252645135 AS ${column}`, // 0x0F0F0F0F
    `(${column} | (${column} << 2)) & 858993459 AS ${column}`, // 0x33333333
    `(${column} | (${column} << 1)) & 1431655765 AS ${column}`, // 0x55555555
  ];
}

/**
 * Rows of `from` (a subquery) with a BIGINT column `hilbert`: the curve index
 * of the point (`x`, `y`), two of its columns, in the extent given by the
 * numbers minX, minY, width and height. Rows without a point (`x` NULL) get 0.
 */
export function withHilbert(
  from: string,
  x: string,
  y: string,
  extent: { minX: number; minY: number; width: number; height: number },
): string {
  const scaled = (value: string, min: number, size: number): string =>
    size > 0
      ? `coalesce(least(greatest(floor(65535 * (${value}::DOUBLE - ${min}) / ${size}), 0), 65535)::BIGINT, 0)`
      : '0::BIGINT';
  const stages = [
    `${scaled(x, extent.minX, extent.width)} AS h_x, ${scaled(y, extent.minY, extent.height)} AS h_y, ` +
      `0::BIGINT AS h_a, 0::BIGINT AS h_b, 0::BIGINT AS h_c, 0::BIGINT AS h_d`,
    `xor(h_x, h_y) AS h_a, xor(65535, xor(h_x, h_y)) AS h_b, xor(65535, h_x | h_y) AS h_c, h_x & xor(h_y, 65535) AS h_d`,
    `h_a | (h_b >> 1) AS h_a, xor(h_a >> 1, h_a) AS h_b, ` +
      `xor(xor(h_c >> 1, h_b & (h_d >> 1)), h_c) AS h_c, xor(xor(h_a & (h_c >> 1), h_d >> 1), h_d) AS h_d`,
    stage(2),
    stage(4),
    `xor(h_c, xor(h_a & (h_c >> 8), h_b & (h_d >> 8))) AS h_c, ` +
      `xor(h_d, xor(h_b & (h_c >> 8), xor(h_a, h_b) & (h_d >> 8))) AS h_d`,
    // a = C ^ (C >> 1), b = D ^ (D >> 1); i0 = x ^ y (in h_c), i1 = b | (0xFFFF ^ (i0 | a)) (in h_d)
    `xor(h_c, h_c >> 1) AS h_a, xor(h_d, h_d >> 1) AS h_b`,
    `xor(h_x, h_y) AS h_c, h_b | xor(65535, xor(h_x, h_y) | h_a) AS h_d`,
    ...spread('h_c').map((s, i) => `${s}, ${spread('h_d')[i]}`),
  ];
  let sql = `SELECT *, ${stages[0]} FROM (${from})`;
  for (const projection of stages.slice(1)) sql = `SELECT * REPLACE (${projection}) FROM (${sql})`;
  return `SELECT * EXCLUDE (${STATE.join(', ')}), (h_d << 1) | h_c AS hilbert FROM (${sql})`;
}
