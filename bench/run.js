// Runs every benchmark: node bench/run.js (npm run bench). The national one takes about 20 minutes.
await import('./signs.js');
await import('./bicycle.js');
await import('./live.js');
await import('./national.js');
