/**
 * Parquet as a reader other than DuckDB reads it: the Rust Parquet reader of
 * Apache Arrow (compiled to WebAssembly, `parquet-wasm`) into Apache Arrow's
 * JavaScript tables, as pyarrow, polars and Spark map Parquet types to Arrow.
 */
import { readFile } from 'node:fs/promises';
import { tableFromIPC, type Table } from 'apache-arrow';
import { readParquet, readSchema } from 'parquet-wasm/node';

/** A Parquet file read whole into an Arrow table. */
export async function arrowTable(file: string): Promise<Table> {
  const wasm = readParquet(new Uint8Array(await readFile(file)));
  return tableFromIPC(wasm.intoIPCStream());
}

/** The Arrow schema of a Parquet file (field name -> Arrow type, as text), and its key-value metadata. */
export async function arrowSchema(
  file: string,
): Promise<{ fields: Map<string, string>; metadata: Map<string, string> }> {
  const schema = tableFromIPC(
    readSchema(new Uint8Array(await readFile(file))).intoIPCStream(),
  ).schema;
  return {
    fields: new Map(schema.fields.map((f) => [f.name, String(f.type)])),
    metadata: schema.metadata,
  };
}
