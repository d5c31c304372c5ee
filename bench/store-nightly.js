// A night to an output folder in S3 (s3rver, in this process) on an empty worker, after
// twelve months of history, against the same night after one month: what a night costs
// and transfers follows that night, not the history in the bucket.
//
//   node bench/store-nightly.js [locations]     (default 200 bicycle locations)
//
// LOGS=folder keeps each night's log there (JSON lines), to time its phases.
//
// Two folders are filled on disk with pipelines/bicycle.yaml (2025-10-01 .. 2026-10-01,
// and 2026-09-01 .. 2026-10-01) and put into the bucket as road-etl puts a folder
// (src/store/sync.ts). Then the same five nights (2026-10-01 .. 2026-10-06) run on each
// prefix in turn, each in a fresh TMPDIR; the medians of their wall time, client CPU (user +
// system of the road-etl process) and bytes transferred (fetched at the start, fetched when
// read, put back) are compared.
//
// Nights are a day apart in production, each on a fresh worker; here they share one disk.
// An ext4 without a journal makes a file slowly for one to six minutes after thousands were
// removed (it skips inodes removed in the last 60 s, 360 s while their table is not written
// back: recently_deleted() in fs/ext4/ialloc.c, only where s_journal is NULL), as each night
// removes its local copy. SCRATCH (default: the system's temporary folder) is where the
// bucket and each night's TMPDIR go: a journaled ext4 (mkfs.ext4's default, that of CI
// runners) or a tmpfs has no such wait. The disk is given NIGHT_GAP seconds (default 65)
// before each night.
import { execFileSync, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { argv, execArgv, execPath, exit } from 'node:process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { BIN, ROOT, runPipeline, startSimulator } from './lib.js';

// s3rver makes its listings' continuation tokens (past 1000 objects) with DES, which Node's
// OpenSSL 3 offers only with its legacy provider: the benchmark runs itself again with it.
if (!execArgv.includes('--openssl-legacy-provider')) {
  const again = spawn(execPath, ['--openssl-legacy-provider', ...argv.slice(1)], {
    stdio: 'inherit',
  });
  const [code] = await once(again, 'exit');
  exit(code ?? 1);
}

const { openStore } = await import('../dist/store/open.js');
const { putFolder } = await import('../dist/store/put-folder.js');
const { LocalStore } = await import('../dist/store/local-store.js');
const { fetchFolder } = await import('../dist/store/sync.js');
const { WorkingCopy } = await import('../dist/store/working-copy.js');

const locations = Number(process.argv[2] ?? 200);
const scratch = process.env.SCRATCH ?? tmpdir();
const yaml = (await readFile(join(ROOT, 'pipelines', 'bicycle.yaml'), 'utf8')).replace(
  /^# yaml-language-server.*\n/,
  '',
);
const definition = yaml
  .replace(/^name: bicycle$/m, 'name: bicycle\nsql_dir: SQL_DIR')
  .replaceAll('SQL_DIR', join(ROOT, 'sql'));
const params = (start, end) => ({ start, end, prefixes: 'GAL,UTR,RTD,ZHO,NBR,GLD,GRN,FRL' });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

const simulator = await startSimulator([
  '--seed', '3', '--locations', String(locations), '--now', '2026-11-01T00:00:00Z',
  '--max-locations', '100', '--max-period-days', '62',
]); // prettier-ignore
const served = await mkdtemp(join(scratch, 'road-etl-s3rver-'));
const s3 = new S3rver({
  port: 0,
  address: '127.0.0.1',
  silent: true,
  directory: served,
  configureBuckets: [{ name: 'bench', configs: [] }],
});
const { port } = await s3.run();
const aws = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REGION: 'eu-west-1',
  AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
};

/** One night to `url` in a fresh TMPDIR: wall time, client CPU and bytes from its log. */
async function night(url, start, end) {
  const home = await mkdtemp(join(scratch, 'road-etl-worker-'));
  const file = join(home, 'p.yaml');
  await writeFile(file, definition);
  const began = performance.now();
  const child = spawn(
    process.execPath,
    [BIN, 'run', file, '--output', url, '--log-format', 'json',
     ...Object.entries(params(start, end)).flatMap(([k, v]) => ['--param', `${k}=${v}`])],
    { env: { ...process.env, ...simulator.env, ...aws, HOME: home, TMPDIR: home }, stdio: ['ignore', 'pipe', 'pipe'] },
  ); // prettier-ignore
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(child, 'exit');
  const ms = performance.now() - began;
  await rm(home, { recursive: true, force: true });
  if (process.env.LOGS)
    await writeFile(
      join(process.env.LOGS, `${url.split('/').at(-1)}-${start.slice(0, 10)}.log`),
      stderr,
    );
  if (code !== 0) throw new Error(`road-etl exited ${code}: ${stderr.slice(-2000)}`);
  const events = stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const bytesOf = (test) => events.filter(test).reduce((sum, e) => sum + Number(e.bytes ?? 0), 0);
  const fetched =
    bytesOf((e) => e.event === 'store.fetch' && 'fetched' in e) +
    bytesOf((e) => e.event === 'store.fetched');
  const put = bytesOf((e) => e.event === 'store.put');
  const summary = JSON.parse(stdout.trim().split('\n').at(-1));
  return { ms, cpu: summary.cpu_ms, fetched, put };
}

try {
  console.log(`Filling the folders (${locations} locations) and putting them into the bucket...`);
  const filled = {};
  for (const [name, from] of [
    ['year', '2025-10-01T00:00:00Z'],
    ['month', '2026-09-01T00:00:00Z'],
  ]) {
    const run = await runPipeline(definition, simulator.env, {
      keep: true,
      params: params(from, '2026-10-01T00:00:00Z'),
    });
    const store = await openStore(`s3://bench/${name}`, aws);
    // The local folder's commit, as its files (links), put as the bucket's first commit.
    const work = join(run.dir, 'work');
    const folder = new LocalStore(join(run.dir, 'output'));
    const local = new WorkingCopy(folder, work);
    await fetchFolder(folder, work, local);
    const files = [...local.folder];
    await local.bring(files.map(([path]) => join(work, ...path.split('/'))));
    // Every file written, as a first night writes them.
    const first = new WorkingCopy(store, work);
    for (const [path, { bytes, sha256 }] of files)
      first.record(join(work, ...path.split('/')), { bytes, sha256 });
    const put = await putFolder(store, work, first, { commit: undefined, listed: [] });
    filled[name] = put.bytes;
    await rm(run.dir, { recursive: true, force: true });
  }
  console.log(`  a year: ${mb(filled.year)} in the bucket; a month: ${mb(filled.month)}`);

  const gap = Number(process.env.NIGHT_GAP ?? 65) * 1000;
  const settle = () => {
    execFileSync('sync');
    return sleep(gap);
  };
  const nights = { year: [], month: [] };
  for (const day of ['01', '02', '03', '04', '05']) {
    const start = `2026-10-${day}T00:00:00Z`;
    const end = `2026-10-${String(Number(day) + 1).padStart(2, '0')}T00:00:00Z`;
    for (const name of ['year', 'month']) {
      await settle();
      const one = await night(`s3://bench/${name}`, start, end);
      nights[name].push(one);
      console.log(
        `  ${start.slice(0, 10)} after ${name === 'year' ? '12 months' : '1 month'}: wall ${(one.ms / 1000).toFixed(2)} s, client CPU ${(one.cpu / 1000).toFixed(2)} s`,
      );
    }
  }
  const of = (name, key) => median(nights[name].map((n) => n[key]));
  console.log('\n| history | night: wall | client CPU | fetched | put | peak of fetched |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const name of ['year', 'month'])
    console.log(
      `| ${name === 'year' ? '12 months' : '1 month'} | ${(of(name, 'ms') / 1000).toFixed(2)} s | ${(of(name, 'cpu') / 1000).toFixed(2)} s | ${mb(of(name, 'fetched'))} | ${mb(of(name, 'put'))} | ${mb(Math.max(...nights[name].map((n) => n.fetched)))} |`,
    );
  const ratio = (key) => (of('year', key) / of('month', key)).toFixed(2);
  const bytes = (name) => of(name, 'fetched') + of(name, 'put');
  console.log(
    `\nA year of history against a month: wall ${ratio('ms')}x, client CPU ${ratio('cpu')}x, ` +
      `bytes transferred ${(bytes('year') / bytes('month')).toFixed(2)}x (target: at most 1.3x in time and bytes)`,
  );
} finally {
  await s3.close();
  await rm(served, { recursive: true, force: true });
  await simulator.stop();
}
