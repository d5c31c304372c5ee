// The landing floor of the events step: DuckDB alone typing staged events (a
// line each, as the step stages them) with the step's own typing
// (sql/sign_typing.sql) into one zstd Parquet file, raw_event kept, on one
// thread as the step lands. Run as a process of its own:
//   node bench/signs-floor.js EVENTS.jsonl OUT.parquet [--by-month]
// prints {"rows": N, "cpu_ms": M, "ms": T, "files": F} of the COPY alone.
// --by-month writes the events as the layout has them instead, a file for each
// publication month (OUT is then a folder): what the layout alone costs above
// the one file, however the events are read and landed.
import { Database, PARQUET_FORMAT, quotedString } from '../dist/duckdb/database.js';
import { signTyping } from '../dist/sources/signs/schema.js';

const [lines, out, mode] = process.argv.slice(2);
const byMonth = mode === '--by-month';
const db = await Database.open({ threads: 1 });
const records = `(SELECT e AS raw, f AS feed_index, md5(e::VARCHAR) AS event_hash
  FROM read_json(${quotedString(lines)}, format = 'newline_delimited', columns = {f: 'INTEGER', e: 'JSON'}))`;
const typed = await signTyping(db, records, 'nested');
const before = process.cpuUsage();
const started = performance.now();
const [written] = await db.all(
  byMonth
    ? `COPY (SELECT * EXCLUDE (_problem), CAST(publication_timestamp AS DATE) AS publication_date,
         CAST(date_trunc('month', publication_timestamp) AS DATE) AS publication_month FROM ${typed} WHERE _problem IS NULL)
       TO ${quotedString(out)} (${PARQUET_FORMAT}, PARTITION_BY (publication_month), RETURN_FILES true)`
    : `COPY (SELECT * EXCLUDE (_problem) FROM ${typed} WHERE _problem IS NULL) TO ${quotedString(out)} (${PARQUET_FORMAT}, RETURN_FILES true)`,
);
const ms = performance.now() - started;
const used = process.cpuUsage(before);
db.close();
const rows = Number(written?.['Count'] ?? 0);
const files = /** @type {string[]} */ (written?.['Files'] ?? []).length;
console.log(JSON.stringify({ rows, cpu_ms: (used.user + used.system) / 1000, ms, files }));
