/**
 * The command as one file: `npm run build` bundles what tsc wrote to dist/
 * (the code and its npm dependencies, about 500 modules) into dist/bundle/,
 * which bin/road-etl.js runs. Node then reads one file instead of resolving,
 * reading and compiling each module. What is imported lazily (the S3 and
 * Azure SDKs, for a URL of theirs) goes into chunks of its own, compiled only
 * when loaded: a command on a local folder starts in about 0.45 s of CPU
 * (0.85 s with the SDKs compiled at every start). DuckDB's native binding
 * stays outside, loaded by Node.
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
