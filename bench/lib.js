// Helpers for the benchmarks: a simulator in its own process, a road-etl run
// with its peak memory, and the raw fetch-and-parse baseline.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'road-etl.js');

/** Starts `road-etl simulate ARGS` in a child process; resolves once it prints its env lines. */
export async function startSimulator(args) {
  const child = spawn(process.execPath, [BIN, 'simulate', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let text = '';
  while (text.split('\n').length <= 7) {
    const [chunk] = await once(child.stdout, 'data');
    text += chunk.toString();
  }
  const env = Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => line.split(/=(.*)/s).slice(0, 2)),
  );
  return {
    env,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

function peakRss(pid) {
  return readFile(`/proc/${pid}/status`, 'utf8').then(
    (status) => Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024,
    () => 0,
  );
}

/**
 * Runs a pipeline definition with the CLI; resolves to wall time, peak RSS, the process's
 * CPU time, the manifest and its folder.
 */
export async function runPipeline(
  yaml,
  env,
  { keep = false, dir: reuse, failing = false, params = {}, args = [] } = {},
) {
  // `dir`: run again in the folder of an earlier (kept) run, on its output and checkpoints;
  // `args`: more arguments of `road-etl run`.
  const dir = reuse ?? (await mkdtemp(join(tmpdir(), 'road-etl-bench-')));
  await writeFile(join(dir, 'p.yaml'), yaml.replaceAll('SQL_DIR', join(ROOT, 'sql')));
  const output = join(dir, 'output');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      BIN,
      'run',
      join(dir, 'p.yaml'),
      '--output',
      output,
      '--log-format',
      'json',
      '--log-level',
      'warn',
      ...Object.entries(params).flatMap(([k, v]) => ['--param', `${k}=${v}`]),
      ...args,
    ],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  let rss = 0;
  const timer = setInterval(async () => (rss = Math.max(rss, await peakRss(child.pid))), 100);
  const [code] = await once(child, 'exit');
  clearInterval(timer);
  const ms = performance.now() - started;
  // `failing`: a failed run is reported (its manifest says which step failed), not thrown.
  if (code !== 0 && !failing) throw new Error(`road-etl exited ${code}: ${stdout}`);
  const folder = JSON.parse(await readFile(join(output, 'manifest.json'), 'utf8'));
  if (!keep) await rm(dir, { recursive: true, force: true });
  // The summary line's cpu_ms: the road-etl process's user + system time, start-up included.
  const summary = JSON.parse(stdout.trim().split('\n').at(-1));
  // `manifest`: this pipeline's entry of the folder's manifest (its steps, status, exports).
  const manifest = folder.pipelines[summary.pipeline];
  return { ms, rss, cpuMs: summary.cpu_ms, manifest, folder, dir };
}

/** The baseline: fetch every page of the feed in turn and JSON.parse it; nothing else. */
export async function rawFeedLoop(signsUrl, limit = 100) {
  const agent = new Agent({ connections: 1 });
  const base = `${signsUrl}/api/rest/static-road-data/traffic-signs/v1/events`;
  let offset = '1970-01-01T00:00:00.000Z';
  let events = 0;
  let pages = 0;
  const started = performance.now();
  for (;;) {
    const response = await request(`${base}?offset=${encodeURIComponent(offset)}&limit=${limit}`, {
      dispatcher: agent,
    });
    const page = JSON.parse(await response.body.text());
    pages++;
    events += page.length;
    if (page.length < limit) break;
    offset = page[page.length - 1].publication_timestamp;
  }
  await agent.close();
  return { ms: performance.now() - started, events, pages };
}

export const mb = (bytes) => `${Math.round(bytes / 1024 / 1024)} MB`;
export const rate = (count, ms) => Math.round((count / ms) * 1000);

/** Runs fn and resolves to its result and the CPU time (user + system) of this process meanwhile, in ms. */
export async function withCpu(fn) {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return { result, cpuMs: (used.user + used.system) / 1000 };
}

/** Client CPU per row in µs: a step's CPU time (from the manifest) over its rows. */
export const cpuPerRow = (cpuMs, rows) => (cpuMs * 1000) / Math.max(1, rows);

/**
 * The events of the feed, every page in turn as the raw loop reads them, into
 * `file`: a line per event as the events step stages them ({"f": its index
 * in the page, "e": the event}). Not timed: the floor's input.
 */
export async function feedToLines(signsUrl, file, limit = 100) {
  const agent = new Agent({ connections: 1 });
  const base = `${signsUrl}/api/rest/static-road-data/traffic-signs/v1/events`;
  const lines = [];
  let offset = '1970-01-01T00:00:00.000Z';
  for (;;) {
    const response = await request(`${base}?offset=${encodeURIComponent(offset)}&limit=${limit}`, {
      dispatcher: agent,
    });
    const page = JSON.parse(await response.body.text());
    page.forEach((e, f) => lines.push(JSON.stringify({ f, e })));
    if (page.length < limit) break;
    offset = page[page.length - 1].publication_timestamp;
  }
  await agent.close();
  await writeFile(file, `${lines.join('\n')}\n`);
  return lines.length;
}

/** Runs bench/<script> ARGS in a process of its own; resolves to the JSON line it prints. */
export async function runFloor(script, ...args) {
  const child = spawn(process.execPath, [join(ROOT, 'bench', script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${script} exited ${code}`);
  return JSON.parse(stdout.trim());
}

/** A Markdown table: the header's names, then one line per row of cells. */
export function markdownTable(header, rows) {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
