// Runs every benchmark: node bench/run.js (npm run bench). The national ones take about 40 minutes.
await import('./signs.js');
await import('./bicycle.js');
await import('./live.js');
await import('./national.js');
await import('./national-live.js');
await import('./report.js');
await import('./nightly.js');
await import('./store-nightly.js');
await import('./backfill.js');
