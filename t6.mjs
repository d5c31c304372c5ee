import { Database } from './dist/duckdb/database.js';
import { discoverDatasets, createDatasetViews } from './dist/duckdb/datasets.js';
const out = '/tmp/nightrun/output';
const db = await Database.open({ tempDirectory: out + '/.state/duckdb-tmp' });
await createDatasetViews(db, await discoverDatasets(out));
const q = `(SELECT * FROM (SELECT * FROM bicycle_daily ORDER BY location_id, local_date, category, subcategory) WHERE local_date >= DATE '2026-10-01' AND local_date < DATE '2026-10-01' + INTERVAL 1 MONTH)`;
const ts=[]; for (let i = 0; i < 5; i++) { const t0 = performance.now(); await db.all(`DESCRIBE ${q}`); ts.push((performance.now() - t0).toFixed(1)); } console.log(ts.join(' '));
