// The floor of the signs.live step: DuckDB alone typing the same features, one
// per line, into one zstd Parquet file (the id, the position, every property
// as its own column, as DuckDB infers them). Run as a process of its own:
//   node bench/live-floor.js FEATURES.jsonl OUT.parquet
// prints {"rows": N, "cpu_ms": M, "ms": T}: the CPU time (user + system, every
// DuckDB thread) and the wall time of the COPY alone.
import { DuckDBInstance } from '@duckdb/node-api';

const [features, out] = process.argv.slice(2);
const instance = await DuckDBInstance.create(':memory:', { memory_limit: '1GB' });
const connection = await instance.connect();
const before = process.cpuUsage();
const started = performance.now();
const reader = await connection.runAndReadAll(
  `COPY (
     SELECT id, geometry.coordinates[1] AS longitude, geometry.coordinates[2] AS latitude, properties.*
     FROM read_json($features, format = 'newline_delimited')
   ) TO $out (FORMAT parquet, COMPRESSION zstd)`,
  { features, out },
);
const ms = performance.now() - started;
const used = process.cpuUsage(before);
const rows = Number(reader.getRows()[0]?.[0] ?? 0);
console.log(JSON.stringify({ rows, cpu_ms: (used.user + used.system) / 1000, ms }));
