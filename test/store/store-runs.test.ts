/**
 * Nightly runs whose output folder is in an object store (S3 as s3rver
 * serves it, Azure Blob as Azurite does), each on an empty worker (a fresh HOME
 * and TMPDIR), against one run over the whole period on a local disk.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  gateUploads,
  startAzure,
  startS3,
  type StoreServer,
  type UploadGate,
  copyOfPrefix,
} from '../helpers/object-stores.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { plainDuckDb } from '../helpers/plain-duckdb.js';
import { COMMIT_KEY, readCommit } from '../../src/store/commit.js';
import { putFolder } from '../../src/store/put-folder.js';
import { ROOT, collect, runCli, startCli } from '../helpers/cli.js';
import { readManifest } from '../helpers/pipeline.js';
import type { StepDecision } from '../../src/steps/step-kind.js';
import { ONE_COMMIT, fetchCommit } from '../helpers/committed.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, duck, fileDir, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 22,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 40, maxLocations: 10, maxPeriodDays: 7 },
});

let servers: StoreServer[];
let aws: Record<string, string>;
/** Each server behind a proxy that stops uploads where a test asks, and the variables through them. */
let gates: UploadGate[];
let gated: Record<string, string>;

beforeAll(async () => {
  servers = await Promise.all([startS3(['nightly']), startAzure(['nightly'])]);
  aws = Object.assign({}, ...servers.map((server) => server.env)) as Record<string, string>;
  gates = await Promise.all(servers.map(gateUploads));
  gated = Object.assign({}, ...gates.map((gate) => gate.env)) as Record<string, string>;
});
afterAll(async () => {
  await Promise.all(gates.map((gate) => gate.close()));
  await Promise.all(servers.map((server) => server.close()));
});

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const DAY = 86_400_000;
const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
const params = (start: number, end: number) => [
  '--param', `start=${iso(start)}`, '--param', `end=${iso(end)}`, '--param', 'prefixes=UTR',
]; // prettier-ignore

/** The JSON lines of a run's log. */
const logEvents = (stderr: string): Record<string, unknown>[] =>
  stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** A run as on a worker whose disk is empty at its start: a process of its own, a fresh HOME and TMPDIR. */
async function onEmptyWorker(args: string[], through: Record<string, string> = {}) {
  const home = await testDir();
  return runCli(args, {
    process: true,
    env: { ...simulator.env, ...aws, ...through, HOME: home, TMPDIR: home },
    timeoutMs: 300_000,
  });
}

// Nights in S3; Azure Blob's runs on empty workers are the kills' and the backfill's below.
describe('an output folder in S3 (s3rver)', () => {
  const root = 's3://nightly';
  it('nightly runs, each on an empty worker, give what one local run over the period gives, building only what a night touched', async () => {
    const start = Date.parse('2026-10-01T00:00:00Z');
    const nights = 3;
    const once = join(await testDir(), 'output');
    const local = await runCli(
      ['run', BICYCLE, '--output', once, ...params(start, start + nights * DAY)],
      {
        env: { ...simulator.env },
      },
    );
    expect(local.code, local.stderr).toBe(0);

    const url = `${root}/road-etl`;
    const summaries: Record<string, unknown>[] = [];
    for (let night = 0; night < nights; night++) {
      const run = await onEmptyWorker([
        'run', BICYCLE, '--output', url, '--log-format', 'json',
        ...params(start + night * DAY, start + (night + 1) * DAY),
      ]); // prettier-ignore
      expect(run.code, run.stderr).toBe(0);
      // s3rver ignores conditional writes: the run says its lock is advisory; Azurite enforces them.
      expect(/"event":"store.lock".*advisory/.test(run.stderr)).toBe(root.startsWith('s3:'));
      summaries.push(JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>);
    }
    expect(summaries.at(-1)).toMatchObject({
      status: 'succeeded',
      output: url,
      manifest: `${url}/manifest.json`,
    });

    const store = await openStore(url, aws);
    const fetched = join(await testDir(), 'fetched');
    await fetchCommit(store, fetched);
    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
      'derived/bicycle_location_months',
    ])
      expect(await datasetDifference(once, fetched, dataset), dataset).toBe(0);
    const exported = (await readdir(join(once, 'exports'), { recursive: true })).map(String).sort();
    expect(
      (await readdir(join(fetched, 'exports'), { recursive: true })).map(String).sort(),
    ).toEqual(exported);
    for (const name of exported.filter((f) => f.endsWith('.csv')))
      expect(await readFile(join(fetched, 'exports', name), 'utf8'), name).toBe(
        await readFile(join(once, 'exports', name), 'utf8'),
      );
    // The last night rebuilt only the local dates it touched: the times of what it fetched held.
    const { run } = await readManifest(fetched);
    const last = start + (nights - 1) * DAY;
    // No hour the lookback asked for again arrived late: the night's date alone was rewritten.
    const measured = run.steps.find((s) => s.id === 'bicycle_measurements')?.notes as {
      dates_rewritten: string[];
      lookback?: { dates_rewritten: string[] };
    };
    expect(measured.lookback?.dates_rewritten ?? []).toEqual([]);
    expect(measured.dates_rewritten).toEqual([new Date(last).toISOString().slice(0, 10)]);
    expect(run.steps.find((s) => s.id === 'bicycle_hourly')?.notes).toEqual({
      build: 'partial',
      partitions: 2,
    });
    // query reads the folder's last commit; report writes its page into the folder.
    const counted = await onEmptyWorker([
      'query', 'SELECT count(*) AS n FROM bicycle_hourly', '--output', url, '--format', 'json',
    ]); // prettier-ignore
    expect(counted.code, counted.stderr).toBe(0);
    const [row] = await duck(
      `SELECT count(*) AS n FROM read_parquet('${once}/derived/bicycle_hourly/**/*.parquet')`,
    );
    expect((JSON.parse(counted.stdout) as { n: number }[])[0]!.n).toBe(Number(row!['n']));
    // A put killed once it had uploaded a new version of a file, before its commit: views.sql
    // over a copy of the prefix reads the last commit's objects alone; the report's put that
    // follows removes that version.
    const killed = join(await testDir(), 'killed');
    const before = await fetchCommit(store, killed);
    const daily = (await readdir(join(killed, 'derived/bicycle_daily'), { recursive: true }))
      .map(String)
      .find((file) => file.endsWith('.parquet'))!;
    // (recorded as rewritten: the put uploads it as a new version)
    before.working.record(join(killed, 'derived/bicycle_daily', daily), {
      bytes: (await stat(join(killed, 'derived/bicycle_daily', daily))).size,
      sha256: '0'.repeat(64),
    });
    const kill = (phase: string) => {
      if (phase === 'uploaded') throw new Error('killed');
    };
    await expect(
      putFolder(store, killed, before.working, before.fetched, { passed: kill }),
    ).rejects.toThrow('killed');
    const committed = new Set(Object.values((await readCommit(store))!.files).map((f) => f.key));
    const [read] = await plainDuckDb(
      await copyOfPrefix(store),
      // (the files views.sql gives the view of bicycle_daily)
      [`SELECT unnest(getvariable('road_etl_files')['derived/bicycle_daily']) AS filename`],
      { views: true },
    );
    expect(read!.length).toBeGreaterThan(0);
    expect(
      read!.map((row) => String(row['filename'])).filter((key) => !committed.has(key)),
    ).toEqual([]);
    const uploaded = (await store.list()).filter(
      (o) => o.key.startsWith('derived/bicycle_daily/') && !committed.has(o.key),
    );
    expect(uploaded.length).toBe(1);
    const reported = await onEmptyWorker(['report', '--output', url]);
    expect(reported.code, reported.stderr).toBe(0);
    expect(JSON.parse(reported.stdout.trim())).toMatchObject({
      report: `${url}/report/index.html`,
    });
    expect((await store.read('report/index.html'))?.toString()).toMatch(/^<!doctype html>/i);
    const [[viewed]] = (await plainDuckDb(await copyOfPrefix(store), [ONE_COMMIT], {
      views: true,
    })) as [[{ daily: string; apart: string }]];
    const [days] = await duck(
      `SELECT count(*) AS n FROM read_parquet('${once}/derived/bicycle_daily/**/*.parquet')`,
    );
    expect(Number(viewed.daily)).toBe(Number(days!['n']));
    expect(Number(viewed.apart)).toBe(0);
    expect((await store.list()).filter((o) => o.key === uploaded[0]!.key)).toEqual([]);
    // The bucket holds the folder and its commit, nothing of a run's own.
    const keys = (await store.list()).map((o) => o.key);
    expect(keys).toContain(COMMIT_KEY);
    expect(keys).toContain('manifest.json');
    expect(keys.filter((k) => k.startsWith('.state/') && k !== COMMIT_KEY)).toEqual([]);
  }, 600_000);
});

const KILLED_START = Date.parse('2026-10-10T00:00:00Z');
const killedOnceDir = fileDir();
let killedOnce: Promise<string> | undefined;
/** One local run over the two nights the kill tests run, made once for both stores. */
const onceOverKilledNights = (): Promise<string> =>
  (killedOnce ??= (async () => {
    const once = join(await killedOnceDir(), 'output');
    const local = await runCli(
      ['run', BICYCLE, '--output', once, ...params(KILLED_START, KILLED_START + 2 * DAY)],
      { env: { ...simulator.env } },
    );
    expect(local.code, local.stderr).toBe(0);
    return once;
  })());

describe.each([
  ['S3 (s3rver)', 's3://nightly'],
  ['Azure Blob (Azurite)', 'az://nightly'],
])('an output folder in %s', (_name, root) => {
  it('killed at random moments (six over both stores): after each, query and views.sql over a copy of the prefix read one commit; run again on another empty worker, it lands exactly one run’s data, and the manifest’s every extract is there with its sha256', async () => {
    const start = KILLED_START;
    const once = await onceOverKilledNights();

    const url = `${root}/killed`;
    const night = (n: number) => [
      'run', BICYCLE, '--output', url, ...params(start + n * DAY, start + (n + 1) * DAY),
    ]; // prettier-ignore
    // A random moment is one within the time the first night takes.
    const began = Date.now();
    const first = await onEmptyWorker(night(0));
    expect(first.code, first.stderr).toBe(0);
    const whole = Date.now() - began;
    const store = await openStore(url, aws);
    let killed = 0;
    // Six kills in all: four in S3, two in Azure (one of each pair in the upload); the commit's
    // own boundaries are each met in commit-boundaries.test.ts.
    for (let round = 0; round < (root.startsWith('s3:') ? 4 : 2); round++) {
      const home = await testDir();
      const child = startCli(night(1), {
        env: { ...simulator.env, ...gated, HOME: home, TMPDIR: home },
      });
      const done = collect(child, 300_000);
      if (round % 2 === 0) {
        // A moment of the night...
        await new Promise((wake) => setTimeout(wake, 200 + Math.random() * whole));
      } else {
        // ... or of its upload: when one of its first ten data objects is on its way.
        const gate = gates[root.startsWith('s3:') ? 0 : 1]!;
        await Promise.race([gate.uploads(1 + Math.floor(Math.random() * 10)), done]);
      }
      child.kill('SIGKILL');
      if ((await done).signal === 'SIGKILL') killed++;
      // query on the URL, and plain DuckDB through views.sql over a copy of the prefix, read one commit.
      const queried = await runCli(['query', ONE_COMMIT, '--output', url, '--format', 'json'], {
        env: aws,
      });
      expect(queried.code, queried.stderr).toBe(0);
      const [read] = JSON.parse(queried.stdout) as { daily: number; apart: number }[];
      expect(read!.daily).toBeGreaterThan(0);
      expect(read!.apart, `round ${round}: query`).toBe(0);
      const [[plain]] = (await plainDuckDb(await copyOfPrefix(store), [ONE_COMMIT], {
        views: true,
      })) as [[{ daily: string; apart: string }]];
      expect(Number(plain.daily)).toBeGreaterThan(0);
      expect(Number(plain.apart), `round ${round}: views.sql`).toBe(0);
    }
    expect(killed).toBeGreaterThan(root.startsWith('s3:') ? 1 : 0);
    const final = await onEmptyWorker(night(1));
    expect(final.code, final.stderr).toBe(0);
    // The report, drawn on a worker of its own, lands in the folder.
    const reported = await onEmptyWorker(['report', '--output', url]);
    expect(reported.code, reported.stderr).toBe(0);
    expect((await store.read('report/index.html'))?.toString()).toMatch(/^<!doctype html>/i);

    const fetched = join(await testDir(), 'fetched');
    await fetchCommit(store, fetched);
    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
    ])
      expect(await datasetDifference(once, fetched, dataset), dataset).toBe(0);
    const { manifest } = await readManifest(fetched);
    const objects = new Set((await store.list()).map((o) => o.key));
    expect(manifest.exports.length).toBeGreaterThan(0);
    for (const extract of manifest.exports) {
      expect(objects.has(extract.path), extract.path).toBe(true);
      const bytes = await readFile(join(fetched, extract.path));
      expect(createHash('sha256').update(bytes).digest('hex'), extract.path).toBe(extract.sha256);
    }
  }, 900_000);
});

describe('a parallel backfill on a folder in Azure Blob (Azurite, which enforces the lock)', () => {
  it('fetches both weeks at once, lands them in turn (--wait-for-lock), and gives what one run over both weeks gives', async () => {
    const start = Date.parse('2026-10-01T00:00:00Z');
    const once = join(await testDir(), 'output');
    const local = await runCli(
      ['run', BICYCLE, '--output', once, ...params(start, start + 14 * DAY)],
      {
        env: { ...simulator.env },
      },
    );
    expect(local.code, local.stderr).toBe(0);
    const url = 'az://nightly/backfill';
    const runs = await Promise.all(
      [0, 7].map(
        (d) =>
        onEmptyWorker([
          'run', BICYCLE, '--output', url, '--wait-for-lock', '600', '--log-format', 'json',
          ...params(start + d * DAY, start + (d + 7) * DAY),
        ]), // prettier-ignore
      ),
    );
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const waited = runs.filter((r) => r.stderr.includes('"event":"lock.wait"'));
    expect(waited.length).toBe(1);
    // The run that waited fetched its week meanwhile, and landed what it had fetched.
    expect(waited[0]!.stderr).toContain('"event":"ahead.staged"');
    expect(waited[0]!.stderr).toContain('"event":"bicycle.adopted"');
    const fetched = join(await testDir(), 'fetched');
    await fetchCommit(await openStore(url, aws), fetched);
    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
    ])
      expect(await datasetDifference(once, fetched, dataset), dataset).toBe(0);
  }, 600_000);
});

describe('a night on a folder in S3 (s3rver) with five weeks of history', () => {
  it('fetches what each step’s plan reads, not the history; gives what one local run gives and what its plan printed; puts every object whole', async () => {
    const start = Date.parse('2026-09-01T00:00:00Z');
    const days = 36;
    const once = join(await testDir(), 'output');
    const local = await runCli(
      ['run', BICYCLE, '--output', once, ...params(start, start + (days + 1) * DAY)],
      { env: { ...simulator.env } },
    );
    expect(local.code, local.stderr).toBe(0);

    const url = 's3://nightly/history';
    const history = await onEmptyWorker([
      'run', BICYCLE, '--output', url, ...params(start, start + days * DAY),
    ]); // prettier-ignore
    expect(history.code, history.stderr).toBe(0);
    const store = await openStore(url, aws);
    const before = (await store.list()).reduce((sum, o) => sum + o.bytes, 0);

    // The night's plan, printed from the bucket on an empty worker, changing nothing there.
    const objects = await store.list();
    const printed = await onEmptyWorker([
      'plan', BICYCLE, '--output', url, '--format', 'json',
      ...params(start + days * DAY, start + (days + 1) * DAY),
    ]); // prettier-ignore
    expect(printed.code, printed.stderr).toBe(0);
    expect(await store.list()).toEqual(objects);
    const planned = (JSON.parse(printed.stdout) as { steps: { id: string; decision?: unknown }[] })
      .steps;

    // (the gate of the kills above lets every request through again)
    const gate = gates[0]!;
    gate.free();
    const committed = (await readCommit(store))!.files;
    gate.reads();
    const night = await onEmptyWorker(
      [
        'run', BICYCLE, '--output', url, '--log-format', 'json',
        ...params(start + days * DAY, start + (days + 1) * DAY),
      ],
      gate.env,
    ); // prettier-ignore
    expect(night.code, night.stderr).toBe(0);
    // Through a proxy that counts each object read: a data file at most once, and only one
    // of the partitions the plan said a step reads (its certain part or its bound), or the
    // latest file of a dataset, whose metadata the run's view of it is made from.
    const read = [...gate.reads()].map(([path, times]) => ({
      key: path.replace(/^\/nightly\/history\//, ''),
      times,
    }));
    const pathOf = new Map(Object.entries(committed).map(([path, file]) => [file.key, path]));
    const planReads = planned.flatMap((step) => {
      const decision = step.decision as StepDecision;
      return [...decision.reads, ...(decision.may_read ?? [])];
    });
    const latest = new Map<string, string>();
    for (const path of Object.keys(committed).sort())
      if (path.endsWith('.parquet'))
        latest.set(
          path
            .split('/')
            .filter((p) => !p.includes('='))
            .slice(0, -1)
            .join('/'),
          path,
        );
    const samples = new Set(latest.values());
    const unplanned: string[] = [];
    for (const { key, times } of read) {
      const path = pathOf.get(key);
      if (!path?.endsWith('.parquet')) continue;
      expect(times, key).toBe(1);
      const folders = path.split('/').slice(0, -1);
      const partition = folders.find((p) => p.includes('='))?.split('=')[1];
      const names = folders.filter((p) => !p.includes('='));
      const dataset = names[0] === 'derived' ? names[1]! : names.join('_');
      if (
        !samples.has(path) &&
        !planReads.some(
          (r) =>
            r.dataset === dataset &&
            (r.partitions === 'all' || r.partitions.includes(partition ?? '')),
        )
      )
        unplanned.push(path);
    }
    expect(read.filter(({ key }) => pathOf.get(key)?.endsWith('.parquet')).length).toBeGreaterThan(
      0,
    );
    expect(unplanned).toEqual([]);
    // Each step did what the plan printed before the night: its certain part (no late
    // hour arrives here, so none of the bound a plan names where late data may land).
    const recorded = JSON.parse((await store.read('manifest.json'))!.toString('utf8')) as {
      pipelines: Record<string, { steps: { id: string; plan?: unknown }[] }>;
    };
    const certain = (decision: unknown) => {
      const { decision: d, builds, reads, files } = decision as Record<string, unknown>;
      return { decision: d, builds, reads, files };
    };
    const done = recorded.pipelines['bicycle']!.steps;
    expect(done.map((step) => [step.id, certain(step.plan)])).toEqual(
      planned.map((step) => [step.id, certain(step.decision)]),
    );
    const events = logEvents(night.stderr);
    const atStart = events.find((e) => e['event'] === 'store.fetch' && 'fetched' in e)!;
    const whenRead = events.find((e) => e['event'] === 'store.fetched')!;
    const bytes = Number(atStart['bytes']) + Number(whenRead['bytes']);
    // The night reads the dates its builds read and the month it lands, not five weeks of
    // measurements, hourly counts and extracts.
    expect(bytes).toBeGreaterThan(0);
    expect(bytes / before).toBeLessThan(0.5);

    // An export whose query reads a dataset its plan cannot narrow (the second day's counts
    // out of every day's): the whole dataset is fetched before it runs, and the rows are that day's.
    const day = iso(start + DAY).slice(0, 10);
    const definition = join(await testDir(), 'bicycle.yaml');
    await writeFile(
      definition,
      `${(await readFile(BICYCLE, 'utf8')).replace(/^name: bicycle$/m, `name: bicycle\nsql_dir: ${join(ROOT, 'sql')}`)}
  - id: export_one_day
    kind: export
    needs: [bicycle_measurements]
    options:
      query: SELECT location_id, measurement_hour FROM bicycle_measurements WHERE date = DATE '${day}' ORDER BY ALL
      path: exports/one_day.csv
`,
    );
    const again = await onEmptyWorker([
      'run', definition, '--output', url, '--log-format', 'json', '--select', 'export_one_day',
      ...params(start + days * DAY, start + (days + 1) * DAY),
    ]); // prettier-ignore
    expect(again.code, again.stderr).toBe(0);
    const met = logEvents(again.stderr).filter(
      (e) => e['event'] === 'store.fetch' && e['step'] === 'export_one_day',
    );
    // Every file of the dataset, none of which the run had fetched before.
    const measurements = Object.keys((await readCommit(store))!.files).filter((path) =>
      path.startsWith('bicycle/measurements/'),
    );
    expect(met.map((e) => e['fetched'])).toEqual([measurements.length]);

    const fetched = join(await testDir(), 'fetched');
    await fetchCommit(store, fetched);
    const [counted] = await duck(
      `SELECT count(*)::INTEGER AS hours FROM read_parquet('${join(once, 'bicycle/measurements', `date=${day}`, '*.parquet')}')`,
    );
    const lines = (await readFile(join(fetched, 'exports/one_day.csv'), 'utf8')).trim().split('\n');
    expect(lines.length - 1).toBe(counted?.['hours']);
    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_counter_days',
      'derived/bicycle_quality',
      'derived/bicycle_daily',
      'derived/bicycle_location_months',
      'derived/bicycle_location_summary',
    ])
      expect(await datasetDifference(once, fetched, dataset), dataset).toBe(0);
    // Every object is what it says: Parquet files whole, extracts as the manifest hashes them.
    const { manifest } = await readManifest(fetched);
    for (const extract of manifest.exports) {
      const bytes = await readFile(join(fetched, extract.path));
      expect(createHash('sha256').update(bytes).digest('hex'), extract.path).toBe(extract.sha256);
    }
    const parquet = (await readdir(fetched, { recursive: true }))
      .map(String)
      .filter((file) => file.endsWith('.parquet'));
    expect(parquet.length).toBeGreaterThan(0);
    for (const file of parquet) {
      const bytes = await readFile(join(fetched, file));
      expect(bytes.subarray(0, 4).toString('latin1'), file).toBe('PAR1');
      expect(bytes.subarray(-4).toString('latin1'), file).toBe('PAR1');
    }
  }, 600_000);
});
