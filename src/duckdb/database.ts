/**
 * One DuckDB (in memory, spilling to a temporary folder) per run or query, with
 * the output datasets as views. Values are bound as parameters; identifiers and
 * paths go through the quoting helpers of @duckdb/node-api.
 */
import {
  DuckDBInstance,
  quotedIdentifier,
  quotedString,
  type DuckDBConnection,
  type DuckDBValue,
} from '@duckdb/node-api';
import { defaultBudget, shareBudget, type DuckDbMemory } from './memory.js';

export { quotedIdentifier, quotedString };

export interface DatabaseOptions {
  /** The memory budget of the process, in bytes (memory.ts). Default: defaultBudget(). */
  budget?: number | undefined;
  /** Worker threads wanted; default: the number of cores. Capped by what the budget can feed. */
  threads?: number | undefined;
  /** Where DuckDB spills when memory runs short. Default: DuckDB's own. */
  tempDirectory?: string | undefined;
  /** Growth of the process, in bytes, before releaseMemory gives memory back. Default: 16 MiB. */
  releaseAfter?: number | undefined;
  /** Resident memory, in bytes, below which releaseMemory keeps it. Default: a quarter of the budget. */
  releaseFrom?: number | undefined;
}

export type Row = Record<string, unknown>;

/**
 * How road-etl writes Parquet: zstd, in row groups of at most about 8 MB
 * (uncompressed). DuckDB's writer holds a row group per thread until it is
 * full, and reads a row group's column whole: with the default of 122,880
 * rows, rows carrying the record as received (about 1 KB) made row groups of
 * over 100 MB, and a national copy took more memory than a 1 GB budget.
 * Typing the current-state download of 100,000 signs peaks 65 MB lower with
 * 8 MB than with 16 MB, in the same time.
 */
export const PARQUET_FORMAT = `FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE_BYTES '8MB'`;

/**
 * Parquet for files that live only in staging, written once and read back
 * once: lz4 (fast to write and read), in row groups of about 4 MB, so that
 * the reader setting a download's records apart holds little of them.
 */
export const STAGED_FORMAT = `FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE_BYTES '4MB'`;

/** How much the process grows before releaseMemory gives memory back, by default: 16 MiB. */
const RELEASE_AFTER = 16 * 2 ** 20;

/** The share of the budget the process holds before releaseMemory gives memory back, by default. */
const RELEASE_FROM_SHARE = 0.25;

/** State shared by the connections of one database. */
interface Shared {
  /** The release under way, if any: one at a time. */
  releasing: Promise<void>;
  /** The process's resident memory after the last release (or the opening). */
  released: number;
  /** The growth from there that makes the next release worth its cost. */
  releaseAfter: number;
  /** The resident memory below which nothing is released: far from the budget, it costs nothing to keep. */
  releaseFrom: number;
}

export class Database {
  readonly #instance: DuckDBInstance;
  readonly connection: DuckDBConnection;
  /** The budget, and how it is shared out (DuckDB's memory_limit and threads). */
  readonly memory: DuckDbMemory;
  readonly #owner: boolean;
  readonly #shared: Shared;

  private constructor(
    instance: DuckDBInstance,
    connection: DuckDBConnection,
    memory: DuckDbMemory,
    owner: boolean,
    shared: Shared,
  ) {
    this.#instance = instance;
    this.connection = connection;
    this.memory = memory;
    this.#owner = owner;
    this.#shared = shared;
  }

  /** Another connection to the same database, for work that runs at the same time. */
  async fork(): Promise<Database> {
    const connection = await this.#instance.connect();
    await connection.run(`SET TimeZone = 'UTC'`);
    return new Database(this.#instance, connection, this.memory, false, this.#shared);
  }

  static async open(options: DatabaseOptions = {}): Promise<Database> {
    const memory = shareBudget(options.budget ?? defaultBudget(), options.threads);
    const config: Record<string, string> = {
      memory_limit: `${Math.floor(memory.memoryLimit / 2 ** 20)}MiB`,
      threads: String(memory.threads),
      // Keep memory flat on large conversions; order is restored explicitly where it matters.
      preserve_insertion_order: 'false',
      // Every file read stays in this cache until the end: it only duplicates the OS page cache
      // for local files, and makes a long run's memory grow with the files it has read.
      enable_external_file_cache: 'false',
      // Memory DuckDB's allocator no longer uses goes back to the system as the run goes on,
      // instead of staying with each of the threads that ran a statement.
      allocator_background_threads: 'true',
      allocator_flush_threshold: '4MB',
    };
    if (options.tempDirectory !== undefined) config['temp_directory'] = options.tempDirectory;
    const instance = await DuckDBInstance.create(':memory:', config);
    const connection = await instance.connect();
    await connection.run(`SET TimeZone = 'UTC'`);
    return new Database(instance, connection, memory, true, {
      releasing: Promise.resolve(),
      released: process.memoryUsage.rss(),
      releaseAfter: options.releaseAfter ?? RELEASE_AFTER,
      releaseFrom: options.releaseFrom ?? memory.budget * RELEASE_FROM_SHARE,
    });
  }

  /** Runs one statement; resolves to its rows as JSON-friendly objects. */
  async all(sql: string, values?: Record<string, DuckDBValue> | DuckDBValue[]): Promise<Row[]> {
    const reader = await this.connection.runAndReadAll(sql, values);
    return reader.getRowObjectsJson();
  }

  async run(sql: string, values?: Record<string, DuckDBValue> | DuckDBValue[]): Promise<void> {
    await this.connection.run(sql, values);
  }

  /** Runs a COPY ... TO and resolves to the number of rows written. */
  async copy(sql: string, values?: Record<string, DuckDBValue>): Promise<number> {
    const rows = await this.all(sql, values);
    return Number(rows[0]?.['Count'] ?? 0);
  }

  /**
   * Returns the memory DuckDB has freed to the system. The Node bindings use the
   * system allocator (glibc malloc), which keeps freed memory with the process:
   * after a large statement, most of the memory it used stays resident, and each
   * statement on another thread adds to it. DuckDB trims the allocator
   * (malloc_trim) when its thread pool is relaunched, which a change of
   * `threads` does; setting it one up and back again relaunches it twice and
   * leaves the setting as it was. Takes about 10 ms, and the memory given back
   * is faulted in again by the statements that follow: it is done only once the
   * process holds a quarter of its budget (`releaseFrom`; below that, keeping
   * the memory costs nothing, and a small night has about a quarter fewer page
   * faults) and has grown by `releaseAfter` since the last time, so that
   * the many small units of a nightly run do not pay it each.
   */
  async releaseMemory(): Promise<void> {
    // One at a time for the whole database: two interleaved would leave `threads` changed.
    const release = this.#shared.releasing.then(async () => {
      const shared = this.#shared;
      const rss = process.memoryUsage.rss();
      if (rss < shared.releaseFrom || rss - shared.released < shared.releaseAfter) return;
      const [row] = await this.all(`SELECT current_setting('threads') AS threads`);
      const threads = Number(row?.['threads']);
      if (!Number.isInteger(threads) || threads < 1) return;
      await this.connection.run(`SET threads = ${threads + 1}`);
      await this.connection.run(`SET threads = ${threads}`);
      shared.released = process.memoryUsage.rss();
    });
    this.#shared.releasing = release.catch(() => undefined);
    await release;
  }

  /**
   * Runs `fn` with DuckDB's `threads` set to `threads`, and sets it back to the
   * value it had before (the configured one, not DuckDB's default) however `fn` ends.
   */
  async withThreads<T>(threads: number, fn: () => Promise<T>): Promise<T> {
    const [row] = await this.all(`SELECT current_setting('threads') AS threads`);
    const before = Number(row?.['threads']);
    await this.connection.run(`SET threads = ${Math.max(1, Math.floor(threads))}`);
    try {
      return await fn();
    } finally {
      if (Number.isInteger(before) && before >= 1)
        await this.connection.run(`SET threads = ${before}`);
    }
  }

  /** Closes this connection (and the database, for the connection that opened it). */
  close(): void {
    this.connection.closeSync();
    if (this.#owner) this.#instance.closeSync();
  }
}
