/**
 * The order of items by several unsigned 32-bit columns, ascending, the
 * first column first, ties by position: a least-significant-digit radix
 * sort, 11 bits a pass (a pass whose digit is the same for every item is
 * skipped). Each column's values are gathered once into the current order
 * and then move with the items, so that every pass reads and writes in
 * sequence. 2.9M items by four columns take a few hundred milliseconds,
 * where a comparison sort takes seconds.
 */
const BITS = 11;
const DIGITS = 1 << BITS;
const MASK = DIGITS - 1;

export function radixOrder(columns: readonly ArrayLike<number>[], count: number): Uint32Array {
  let order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  let nextOrder = new Uint32Array(count);
  let keys = new Uint32Array(count);
  let nextKeys = new Uint32Array(count);
  const starts = new Uint32Array(DIGITS);
  for (let c = columns.length - 1; c >= 0; c--) {
    const column = columns[c]!;
    if (column.length < count)
      throw new Error(`column ${c} has ${column.length} of ${count} items`);
    for (let i = 0; i < count; i++) keys[i] = column[order[i]!]!;
    for (let shift = 0; shift < 32; shift += BITS) {
      starts.fill(0);
      for (let i = 0; i < count; i++) {
        const digit = (keys[i]! >>> shift) & MASK;
        starts[digit] = starts[digit]! + 1;
      }
      if (starts.includes(count)) continue; // one digit for all: the order stays
      for (let d = 0, at = 0; d < DIGITS; d++) {
        const n = starts[d]!;
        starts[d] = at;
        at += n;
      }
      for (let i = 0; i < count; i++) {
        const key = keys[i]!;
        const digit = (key >>> shift) & MASK;
        const at = starts[digit]!;
        starts[digit] = at + 1;
        nextKeys[at] = key;
        nextOrder[at] = order[i]!;
      }
      [order, nextOrder] = [nextOrder, order];
      [keys, nextKeys] = [nextKeys, keys];
    }
  }
  return order;
}

/** The items of `values` in `order`, in a new array of the same kind. */
export function permuted<T extends Float64Array | Uint32Array>(values: T, order: Uint32Array): T {
  const out = new (values.constructor as new (length: number) => T)(order.length);
  for (let i = 0; i < order.length; i++) out[i] = values[order[i]!]!;
  return out;
}
