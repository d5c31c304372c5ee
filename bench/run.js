// Runs every benchmark: node bench/run.js (npm run bench).
await import('./signs.js');
await import('./bicycle.js');
