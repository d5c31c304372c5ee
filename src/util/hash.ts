/**
 * Small, fast, stateless integer hashing. Every value the simulator serves is a
 * function of (seed, coordinates), so any slice of a large dataset can be
 * generated on demand, in any order, without holding the rest.
 */

/** A 32-bit finaliser with good avalanche (lowbias32). */
function mix32(value: number): number {
  let x = value >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Hashes up to four integers into one unsigned 32-bit value. */
export function hash(a: number, b = 0, c = 0, d = 0): number {
  let h = mix32(a ^ 0x9e3779b9);
  h = mix32(h ^ (b + 0x632be5ab));
  h = mix32(h ^ (c + 0x85ebca6b));
  h = mix32(h ^ (d + 0x27d4eb2f));
  return h;
}

/** A uniform number in [0, 1) from up to four integers. */
export function unit(a: number, b = 0, c = 0, d = 0): number {
  return hash(a, b, c, d) / 4294967296;
}

/** A uniform integer in [0, n) from up to four integers. */
export function pick(n: number, a: number, b = 0, c = 0, d = 0): number {
  return Math.floor(unit(a, b, c, d) * n);
}

/** One element of a non-empty list, chosen by hash. */
export function choose<T>(items: readonly T[], a: number, b = 0, c = 0, d = 0): T {
  const item = items[pick(items.length, a, b, c, d)];
  if (item === undefined) throw new RangeError('choose() needs a non-empty list');
  return item;
}

/**
 * A keyed bijection on [0, size): a balanced Feistel network over the smallest
 * even number of bits that covers size, with cycle walking. Both directions are
 * O(1) in memory, so "which sign sits at position p" and "where does sign s sit"
 * are answered without a table.
 */
export class Permutation {
  readonly #size: number;
  readonly #key: number;
  readonly #halfBits: number;
  readonly #halfMask: number;
  readonly #roundKeys: readonly number[];

  constructor(size: number, key: number) {
    if (!Number.isInteger(size) || size < 1 || size > 2 ** 30) {
      throw new RangeError(`Permutation size must be an integer in 1..2^30, got ${size}`);
    }
    this.#size = size;
    this.#key = key >>> 0;
    let bits = 2;
    while (2 ** bits < size) bits += 2;
    this.#halfBits = bits / 2;
    this.#halfMask = 2 ** this.#halfBits - 1;
    this.#roundKeys = [0, 1, 2, 3].map((round) => hash(this.#key, round, 0xfe15));
  }

  get size(): number {
    return this.#size;
  }

  forward(index: number): number {
    let x = index;
    do x = this.#encrypt(x);
    while (x >= this.#size);
    return x;
  }

  inverse(value: number): number {
    let x = value;
    do x = this.#decrypt(x);
    while (x >= this.#size);
    return x;
  }

  #round(half: number, round: number): number {
    return mix32(this.#roundKeys[round]! ^ Math.imul(half, 0x9e3779b1)) & this.#halfMask;
  }

  #encrypt(x: number): number {
    let left = Math.floor(x / 2 ** this.#halfBits);
    let right = x & this.#halfMask;
    for (let round = 0; round < 4; round++) {
      const next = left ^ this.#round(right, round);
      left = right;
      right = next;
    }
    return left * 2 ** this.#halfBits + right;
  }

  #decrypt(x: number): number {
    let left = Math.floor(x / 2 ** this.#halfBits);
    let right = x & this.#halfMask;
    for (let round = 3; round >= 0; round--) {
      const previous = right ^ this.#round(left, round);
      right = left;
      left = previous;
    }
    return left * 2 ** this.#halfBits + right;
  }
}
