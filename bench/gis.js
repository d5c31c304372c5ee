// The GIS extracts of the signs' current state at national scale (issue: GIS-native output).
// Not part of `npm test`.
//   node bench/gis.js [--signs N]
// Lands the simulator's national feed (3M signs, --seed 7) and builds the
// current state under `duckdb: { memory_limit: 1GB }`, then writes each
// extract of the 2.9M signs in a run of its own on that folder (so that each
// run's peak RSS is its extract's): GeoJSON, FlatGeobuf, GeoParquet and CSV.
// Beside them, where GDAL is installed: GeoPackage written by GDAL itself
// (ogr2ogr from the FlatGeobuf, with its R*Tree), the reference for that
// format, and the time GDAL takes to find the signs of a box (a city) in each.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { mb, runPipeline, startSimulator, markdownTable } from './lib.js';

const run = promisify(execFile);
const signsArg = process.argv.indexOf('--signs');
const scale = signsArg > 0 ? ['--signs', process.argv[signsArg + 1]] : ['--scale', 'national'];
const GDAL = existsSync('/usr/bin/ogr2ogr');
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
/** Utrecht and surroundings: a box of about 20 × 15 km. */
const BOX = [5.0, 52.03, 5.2, 52.15];

const head = `sql_dir: SQL_DIR
duckdb: { memory_limit: 1GB }
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}' }
`;
const LAND = `name: land
${head}steps:
  - { id: events, kind: signs.events, options: { concurrency: 4 } }
  - id: current_state
    kind: sql
    needs: [events]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
`;
const QUERY = 'SELECT * EXCLUDE (raw_event, event_hash) FROM signs_current_state';
const GEOMETRY =
  'geometry: { longitude: location_wgs84_longitude, latitude: location_wgs84_latitude, id: id }';
const EXTRACTS = [
  ['GeoJSON', 'signs.geojson', `query: ${QUERY} ORDER BY id\n      ${GEOMETRY}`],
  ['FlatGeobuf', 'signs.fgb', `query: ${QUERY}\n      ${GEOMETRY}`],
  ['GeoParquet', 'signs.parquet', `query: ${QUERY} ORDER BY id`],
  ['CSV (WKT)', 'signs.csv', `query: ${QUERY} ORDER BY id`],
];
const extract = (file, options) => `name: extract
${head}steps:
  - id: extract
    kind: export
    options:
      path: exports/${file}
      ${options}
`;

/** Runs a command under GNU time: wall, CPU (user + system) and peak RSS. */
async function timed(command, args) {
  if (!TIME) throw new Error('no /usr/bin/time');
  const { stderr } = await run(TIME, ['-f', 'TIME %e %U %S %M', command, ...args], {
    maxBuffer: 256 * 1024 * 1024,
  });
  const [wall, user, system, kb] = /TIME (\S+) (\S+) (\S+) (\S+)/.exec(stderr).slice(1).map(Number);
  return { ms: wall * 1000, cpuMs: (user + system) * 1000, rss: kb * 1024 };
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const sim = await startSimulator([...scale, '--seed', '7']);
const rows = [];
let dir;
try {
  const landed = await runPipeline(LAND, sim.env, { keep: true });
  dir = landed.dir;
  const signs = landed.manifest.steps.find((s) => s.id === 'current_state').rows_out;
  console.error(`landed ${signs} signs in ${seconds(landed.ms)}`);
  for (const [format, file, options] of EXTRACTS) {
    const r = await runPipeline(extract(file, options), sim.env, { keep: true, dir });
    const step = r.manifest.steps[0];
    const bytes = (await stat(join(dir, 'output', 'exports', file))).size;
    rows.push([
      format,
      'road-etl',
      seconds(step.duration_ms),
      seconds(step.cpu_ms),
      mb(r.rss),
      mb(bytes),
    ]);
    console.error(rows.at(-1).join(' | '));
  }
  if (GDAL && TIME) {
    const exports = join(dir, 'output', 'exports');
    const gpkg = join(exports, 'signs.gpkg');
    const g = await timed('ogr2ogr', ['-f', 'GPKG', gpkg, join(exports, 'signs.fgb')]);
    const bytes = (await stat(gpkg)).size;
    rows.push([
      'GeoPackage',
      'GDAL ogr2ogr',
      seconds(g.ms),
      seconds(g.cpuMs),
      mb(g.rss),
      mb(bytes),
    ]);
    console.error(rows.at(-1).join(' | '));
    // How long GDAL takes to find the signs in a box, in each file it can open.
    for (const [format, file] of [
      ['FlatGeobuf', 'signs.fgb'],
      ['GeoPackage', 'signs.gpkg'],
      ['GeoJSON', 'signs.geojson'],
    ]) {
      const path = join(exports, file);
      const spat = ['-ro', '-so', '-al', '-spat', ...BOX.map(String), path];
      const q = await timed('ogrinfo', spat);
      const { stdout } = await run('ogrinfo', spat, { maxBuffer: 64 * 1024 * 1024 });
      const found = /Feature Count: (\d+)/.exec(stdout)?.[1];
      rows.push([
        `${format}: signs in a box`,
        'GDAL ogrinfo',
        seconds(q.ms),
        seconds(q.cpuMs),
        mb(q.rss),
        `${found} found`,
      ]);
      console.error(rows.at(-1).join(' | '));
    }
  }
} finally {
  await sim.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}

console.log(markdownTable(['extract', 'written by', 'time', 'CPU', 'peak RSS', 'size'], rows));
