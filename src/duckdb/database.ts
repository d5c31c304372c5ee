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

export { quotedIdentifier, quotedString };

export interface DatabaseOptions {
  /** DuckDB memory_limit, e.g. "2GB". Default "2GB". */
  memoryLimit?: string;
  /** Worker threads; default: DuckDB's own (the number of cores). */
  threads?: number | undefined;
  /** Where DuckDB spills when memory runs short. Default: DuckDB's own. */
  tempDirectory?: string | undefined;
}

export type Row = Record<string, unknown>;

export class Database {
  readonly #instance: DuckDBInstance;
  readonly connection: DuckDBConnection;

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection) {
    this.#instance = instance;
    this.connection = connection;
  }

  static async open(options: DatabaseOptions = {}): Promise<Database> {
    const config: Record<string, string> = {
      memory_limit: options.memoryLimit ?? '2GB',
      // Keep memory flat on large conversions; order is restored explicitly where it matters.
      preserve_insertion_order: 'false',
    };
    if (options.threads !== undefined) config['threads'] = String(options.threads);
    if (options.tempDirectory !== undefined) config['temp_directory'] = options.tempDirectory;
    const instance = await DuckDBInstance.create(':memory:', config);
    return new Database(instance, await instance.connect());
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

  close(): void {
    this.connection.closeSync();
    this.#instance.closeSync();
  }
}
