import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
fs.rmSync('/tmp/snaps',{recursive:true,force:true});
for (let d=1; d<=30; d++) {
  const date = `2026-10-${String(d).padStart(2,'0')}`;
  fs.mkdirSync(`/tmp/snaps/snapshot_date=${date}`,{recursive:true});
  await c.run(`COPY (SELECT uuid()::VARCHAR sign_id, random() x, md5(i::VARCHAR) t, TIMESTAMPTZ '${date} 06:00:00+00' AS snapshot FROM range(300000) r(i)) TO '/tmp/snaps/snapshot_date=${date}/s-${d}.parquet'`);
}
await c.run(`CREATE VIEW allv AS SELECT * FROM read_parquet('/tmp/snaps/*/*.parquet', hive_partitioning=true)`);
const q = {
 a: `SELECT count(*), max(x) FROM (SELECT * EXCLUDE (snapshot, snapshot_date) FROM allv WHERE snapshot = (SELECT max(snapshot) FROM allv))`,
 b: `SELECT count(*), max(x) FROM (SELECT * EXCLUDE (snapshot, snapshot_date) FROM allv WHERE snapshot = (SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM allv)))`,
 c: `SELECT count(*), max(x) FROM (WITH d AS (SELECT max(snapshot_date) d FROM (SELECT DISTINCT snapshot_date FROM allv)) SELECT * EXCLUDE (snapshot, snapshot_date) FROM allv WHERE snapshot_date = (SELECT d FROM d) AND snapshot = (SELECT max(snapshot) FROM allv WHERE snapshot_date = (SELECT d FROM d)))`,
};
for (const [k,s] of Object.entries(q)) { for (let i=0;i<2;i++){ const t=Date.now(); const r = await c.runAndReadAll(s); console.log(k, Date.now()-t, 'ms', r.getRows()); } }
const r = await c.runAndReadAll('EXPLAIN ANALYZE '+q.c); console.log(r.getRows()[0][1].slice(0,6000));
