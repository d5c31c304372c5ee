/**
 * Where the records of an extract lie, found by reading its bytes as they go
 * by: the lines of a CSV (a line break inside quotes belongs to its cell) or
 * of DuckDB's JSON array (a record a line, the separating comma left out).
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

/** A list of u32 that grows. */
export class Lengths {
  #items = new Uint32Array(1024);
  #count = 0;

  push(value: number): void {
    if (this.#count === this.#items.length) {
      const grown = new Uint32Array(this.#items.length * 2);
      grown.set(this.#items);
      this.#items = grown;
    }
    this.#items[this.#count++] = value;
  }

  get count(): number {
    return this.#count;
  }

  done(): Uint32Array {
    return this.#items.slice(0, this.#count);
  }
}

const QUOTE = 0x22;
const NEWLINE = 0x0a;
const COMMA = 0x2c;

/** Splits bytes fed in pieces into lines: of CSV (quote-aware, the break kept) or of a JSON array. */
export class RecordScanner {
  readonly lengths = new Lengths();
  readonly #csv: boolean;
  #quoted = false;
  /** Bytes of the current record seen so far. */
  #current = 0;
  /** Whether the last byte seen (before a line break) was a comma. */
  #comma = false;

  constructor(kind: 'csv' | 'json-array') {
    this.#csv = kind === 'csv';
  }

  feed(bytes: Uint8Array): void {
    if (this.#csv) this.#feedCsv(bytes);
    else this.#feedLines(bytes);
  }

  #feedCsv(bytes: Uint8Array): void {
    let quoted = this.#quoted;
    let start = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (b === QUOTE) quoted = !quoted;
      else if (b === NEWLINE && !quoted) {
        this.lengths.push(this.#current + i + 1 - start);
        this.#current = 0;
        start = i + 1;
      }
    }
    this.#current += bytes.length - start;
    this.#quoted = quoted;
  }

  #feedLines(bytes: Uint8Array): void {
    let start = 0;
    for (let at = bytes.indexOf(NEWLINE); at >= 0; at = bytes.indexOf(NEWLINE, start)) {
      const length = this.#current + at - start;
      const comma = at > start ? bytes[at - 1] === COMMA : this.#comma;
      this.lengths.push(comma ? length - 1 : length);
      this.#current = 0;
      this.#comma = false;
      start = at + 1;
    }
    if (start < bytes.length) {
      this.#current += bytes.length - start;
      this.#comma = bytes[bytes.length - 1] === COMMA;
    }
  }

  /** Bytes after the last line break (a CSV's last line without one). */
  get rest(): number {
    return this.#current;
  }
}

/** The records of a file DuckDB wrote (each line's length as RecordScanner finds it), and its SHA-256. */
export async function scanFile(
  path: string,
  kind: 'csv' | 'json-array',
): Promise<{ scanner: RecordScanner; sha256: string }> {
  const scanner = new RecordScanner(kind);
  const hash = createHash('sha256');
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(4 << 20);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      const bytes = buffer.subarray(0, bytesRead);
      hash.update(bytes);
      scanner.feed(bytes);
    }
  } finally {
    await handle.close();
  }
  return { scanner, sha256: hash.digest('hex') };
}
