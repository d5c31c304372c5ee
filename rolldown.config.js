/**
 * The command as one file: `npm run build` bundles what tsc wrote to dist/
 * (the code and its npm dependencies, about 500 modules) into dist/bundle/,
 * which bin/road-etl.js runs. Node then reads one file instead of resolving,
 * reading and compiling each module: the command starts in about 0.3 s of CPU
 * instead of 0.6 s. DuckDB's native binding stays outside, loaded by Node.
 * The bundle sits two folders below the install folder, as the modules do
 * (src/util/root.ts).
 */
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'dist/cli/main.js',
  platform: 'node',
  external: ['@duckdb/node-bindings'],
  // The simulator is imported lazily by runs that start it, and eagerly by `simulate`.
  checks: { ineffectiveDynamicImport: false },
  output: { dir: 'dist/bundle', format: 'esm', sourcemap: true },
});
