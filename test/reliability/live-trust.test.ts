/**
 * Today's API, night after night, with a fault-injecting proxy in front of the
 * simulator: every case starts from a folder that holds a landed night, meets
 * a spoiled answer on the next one, and must leave the folder as it was (an
 * answer that cannot be the day's truth) or land the day exactly (an answer
 * asked for again). The next healthy night is then compared with the
 * simulator's ground truth, the day's added and removed signs included. The
 * bicycle answers meet the same: a body broken in the middle, and a token
 * endpoint that echoes the password it was sent.
 */
import { committed, stateNames, stateText } from '../helpers/committed.js';
import { cp, readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveState, type LiveFeature } from '../../src/simulator/index.js';
import { BICYCLE_PATHS, SIGNS_PATHS } from '../../src/endpoints.js';
import {
  idsWithPrefix,
  landedMeasurements,
  measurementsPipeline,
  truthMeasurements,
} from '../helpers/bicycle.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { useProxy, type Spoil } from '../helpers/proxy.js';
import {
  changeLines,
  landedEventHashes,
  signsPipeline,
  truthLiveChanges,
  landedLive,
  truthLive,
} from '../helpers/signs.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, fileDir, outputHashes, pipelineProject, testDir } from '../helpers/tmp.js';

const DAY = 86_400_000;
const simulator = await useSimulator({ seed: 29, signs: { signs: 700 } });
const proxy = await useProxy(simulator.env.ROAD_ETL_SIGNS_URL);
const env = proxy.env({
  ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL,
  ROAD_ETL_SIGNS_V5_URL: simulator.env.ROAD_ETL_SIGNS_V5_URL,
});
const V5 = SIGNS_PATHS.live.v5;
const bicycle = await useSimulator({
  seed: 31,
  bicycle: { locations: 12 },
  auth: { password: 'p@ss w0rd/+%&x=1', username: 'svc-trust' },
});
const bicycleProxy = await useProxy(bicycle.env.ROAD_ETL_BICYCLE_URL);
const bicycleEnv = bicycleProxy.env({ ...bicycle.env });

/** The shipped pipeline, with few quick retries and a short window for the least rate. */
async function project(dir?: string): Promise<{ file: string; output: string }> {
  const shipped = await readFile(join(ROOT, 'pipelines/traffic-signs-live.yaml'), 'utf8');
  const yaml = shipped.replace(
    '      max_gone: ${params.max_gone}\n',
    '      max_gone: ${params.max_gone}\n      retries: 2\n      backoff_ms: 20\n      min_rate: 2048\n      rate_window_ms: 1000\n',
  );
  expect(yaml).not.toBe(shipped);
  return pipelineProject(yaml, ['signs_live_changes.sql'], dir);
}

async function night(file: string, output: string) {
  const result = await runCli(['run', file, '--output', output, '--log-format', 'json'], { env });
  const summary = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  return { ...result, summary };
}

/**
 * Every file of the folder with its hash, and what each step's state keeps
 * (its checkpoint: the Last-Modified of the last download; its upstream's
 * identity), not when it last ran or how that ended.
 */
async function folderState(output: string): Promise<Map<string, string>> {
  const files = await outputHashes(output, ['manifest.json']);
  for (const name of stateNames(output)) {
    if (!name.endsWith('.json') || name === 'runs.json') continue;
    const record = JSON.parse(stateText(output, name)) as {
      checkpoint?: unknown;
      upstream?: unknown;
    };
    files.set(join('.state', name), JSON.stringify([record.checkpoint, record.upstream]));
  }
  return files;
}

async function landedChanges(output: string): Promise<string[]> {
  const rows = await duck(
    `SELECT dense_rank() OVER (ORDER BY to_moment) AS pair, sign_id::VARCHAR AS sign_id, change, changed_fields
     FROM read_parquet('${output}/derived/signs_live_changes/**/*.parquet', hive_partitioning = true)`,
  );
  return changeLines(rows);
}

/** Runs `body` with the simulator's clock at `days` after its start, then sets it back. */
async function withDays<T>(days: number, body: () => Promise<T>): Promise<T> {
  const start = simulator.world.now;
  simulator.world.setNow(new Date(start + days * DAY).toISOString());
  try {
    return await body();
  } finally {
    simulator.world.setNow(new Date(start).toISOString());
  }
}

const state = () => [...liveState(simulator.world, simulator.world.now, 'v5')];

/** The whole selection's download, not the identity probe of a municipality. */
const whole = (query: URLSearchParams) => !query.has('countyCode');
/** The identity probe. */
const probe = (query: URLSearchParams) => query.has('countyCode');

/** Every feature's properties cut to its RVV code. */
const stripped = (features: unknown[]) =>
  (features as LiveFeature[]).map((f) => ({
    ...f,
    properties: { rvvCode: f.properties['rvvCode'] },
  }));

/** The first 40 features served again, `edit` making their content. */
const servedTwice = (edit: (f: LiveFeature) => LiveFeature) => (features: unknown[]) => [
  ...features,
  ...(features as LiveFeature[]).slice(0, 40).map(edit),
];

const nightBefore = fileDir();
let dayBefore: Promise<{ file: string; output: string; state: LiveFeature[] }> | undefined;

/** A copy (times kept) of a folder that holds the night of the day before, which is made once. */
async function afterDayBefore(): Promise<{ file: string; output: string; day1: LiveFeature[] }> {
  dayBefore ??= (async () => {
    const { file, output } = await project(await nightBefore());
    const day1 = await withDays(-1, async () => {
      expect((await night(file, output)).code).toBe(0);
      return state();
    });
    return { file, output, state: day1 };
  })();
  const made = await dayBefore;
  const output = join(await testDir(), 'output');
  await cp(made.output, output, { recursive: true, preserveTimestamps: true });
  return { file: made.file, output, day1: made.state };
}

describe('a spoiled current state on the next night', () => {
  const spoiled: [string, Spoil, (query: URLSearchParams) => boolean, RegExp][] = [
    [
      'an empty FeatureCollection',
      { kind: 'features', keep: () => [] },
      whole,
      /after 3 attempts \(the answer holds no sign.*GET http:\/\/127\.0\.0\.1:\d+\/signs\/.*v5\/current-state with status 200/,
    ],
    [
      'half of the features',
      { kind: 'features', keep: (f) => f.slice(0, Math.floor(f.length / 2)) },
      whole,
      /after 3 attempts \(the answer is implausible: it holds \d+ sign\(s\), and leaves out \d+ of the \d+ signs of the last snapshot.*GET http:\/\/127\.0\.0\.1:\d+\/signs\/.*v5\/current-state with status 200/,
    ],
    [
      'half of the features, the identity probe too (not another upstream)',
      { kind: 'features', keep: (f) => f.slice(0, Math.floor(f.length / 2)) },
      () => true,
      /after 3 attempts \(of the \d+ signs of GM\d{4}.* serves \d+ \(\d+%\) now, more than another service would, fewer than the same one does: upstream trouble\).*countyCode=GM\d{4} with status 200/,
    ],
    [
      'an empty answer to the identity probe',
      { kind: 'features', keep: () => [] },
      probe,
      /after 3 attempts \(the answer holds no sign of GM\d{4}, which had \d+ in the last snapshot\).*countyCode=GM\d{4} with status 200/,
    ],
    [
      "every sign's properties cut to its RVV code",
      { kind: 'features', keep: stripped },
      whole,
      /after 3 attempts \(the answer is implausible: its signs lack properties the signs of the last snapshot .* had: county_code \(100% of the last snapshot's signs, 0% of the answer's\)/,
    ],
    [
      'cut by 4%',
      { kind: 'features', keep: (f) => f.slice(0, Math.floor(f.length * 0.96)) },
      whole,
      /after 3 attempts \(the answer is implausible: it holds \d+ sign\(s\), and leaves out 2\d of the \d+ signs of the last snapshot .*, 4(\.\d)?%, far more than what 1 day\(s\) at 1% a day remove/,
    ],
    [
      '40 signs served twice, with other content',
      {
        kind: 'features',
        keep: servedTwice((f) => ({ ...f, properties: { ...f.properties, roadName: 'Elders' } })),
      },
      whole,
      /after 3 attempts \(the answer holds 40 sign\(s\) more than once with different content/,
    ],
  ];
  it.each(spoiled)(
    '%s, every attempt: exit 1, the folder as it was; the next healthy night lands the day exactly',
    async (_name, spoil, when, message) => {
      const { file, output, day1 } = await afterDayBefore();
      const before = await folderState(output);

      const day2 = state();
      proxy.spoil(V5, spoil, 100, when);
      const failed = await night(file, output);
      proxy.clear();
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.summary['exit_code']).toBe(1);
      expect(String(failed.summary['error'])).toMatch(message);
      expect(await folderState(output)).toEqual(before);

      // The service's Last-Modified has not moved since the spoiled answer: the day lands all the same.
      const healthy = await night(file, output);
      expect(healthy.code, healthy.stderr).toBe(0);
      expect(await landedLive(output)).toEqual(truthLive(day2));
      const want = truthLiveChanges([day1, day2]);
      expect(want.some((w) => w.includes(' added'))).toBe(true);
      expect(want.some((w) => w.includes(' removed'))).toBe(true);
      expect(await landedChanges(output)).toEqual(want);
    },
  );

  it('40 signs served twice with the same content: each kept once, with a warning', async () => {
    const { file, output, day1 } = await afterDayBefore();
    proxy.spoil(V5, { kind: 'features', keep: servedTwice((f) => f) }, 1, whole);
    const result = await night(file, output);
    expect(result.code, result.stderr).toBe(0);
    expect(proxy.spoiled).toBeGreaterThan(0);
    expect(result.stderr).toMatch(
      /"event":"signs.live.properties".*holds 40 sign\(s\) more than once with the same content/,
    );
    expect(await landedLive(output)).toEqual(truthLive(state()));
    expect(await landedChanges(output)).toEqual(truthLiveChanges([day1, state()]));
  });

  it('a selection of 21 signs answered with 11: exit 1, the folder as it was', async () => {
    const { file, output } = await project();
    const run = (more: string[] = []) =>
      runCli(['run', file, '--output', output, '--param', 'rvv_codes=L2', ...more], { env });
    const day1 = await withDays(-1, async () => {
      expect((await run()).code).toBe(0);
      return state().filter((f) => f.properties['rvvCode'] === 'L2');
    });
    expect(day1.length).toBeGreaterThan(15);
    const before = await folderState(output);
    proxy.spoil(V5, { kind: 'features', keep: (f) => f.slice(0, day1.length - 10) }, 100, whole);
    const failed = await run();
    proxy.clear();
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/leaves out 1\d of the 2\d signs of the last snapshot/);
    expect(await folderState(output)).toEqual(before);
  });

  it('once, then well: retried, and the day lands exactly', async () => {
    const { file, output } = await afterDayBefore();
    proxy.spoil(V5, { kind: 'features', keep: () => [] }, 1, whole);
    const result = await night(file, output);
    expect(result.code, result.stderr).toBe(0);
    expect(proxy.spoiled).toBeGreaterThan(0);
    expect(result.stderr).toMatch(/"event":"http.retry".*holds no sign/);
    expect(await landedLive(output)).toEqual(truthLive(state()));
  });

  it('a large change that is real is let through with max_gone', async () => {
    const { file, output, day1 } = await afterDayBefore();
    proxy.spoil(V5, { kind: 'features', keep: (f) => f.slice(0, 100) }, 1, whole);
    const result = await runCli(
      ['run', file, '--output', output, '--param', 'max_gone=1', '--log-format', 'json'],
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    const rows = await duck(
      `SELECT count(*) AS n FROM read_parquet('${output}/signs/live_snapshots/*/*.parquet') GROUP BY downloaded_at ORDER BY downloaded_at`,
    );
    expect(rows.map((r) => Number(r['n']))).toEqual([day1.length, 100]);
  });
});

describe('a current state that comes badly on the wire', () => {
  it.each([
    ['cut short, but ended as if whole', { kind: 'cut', fraction: 0.6 } as Spoil],
    ['cut short just after a feature', { kind: 'cut-after-feature' } as Spoil],
    ['trickling, a few bytes at a time', { kind: 'trickle', bytes: 64, everyMs: 100 } as Spoil],
  ])('%s, once: retried, in bounded time, and the day lands exactly', async (_name, spoil) => {
    const { file, output } = await project();
    await withDays(-1, async () => expect((await night(file, output)).code).toBe(0));
    const before = await folderState(output);
    expect(before.size).toBeGreaterThan(0);
    proxy.spoil(V5, spoil, 1, whole);
    const started = Date.now();
    const result = await night(file, output);
    expect(result.code, result.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(result.stderr).toMatch(/"event":"http.retry"/);
    expect(await landedLive(output)).toEqual(truthLive(state()));
  });
});

describe('whose data a folder holds, decided by evidence', () => {
  it('a selection of two signs, one replaced by another the next day: continued, and the change lands', async () => {
    const { file, output } = await project();
    const [a, b] = await withDays(-1, () => Promise.resolve(state()));
    const today = state();
    const c = today.find((f) => f.id !== a!.id && f.id !== b!.id)!;
    const ids = new Set([a!.id, b!.id]);
    const keep = (features: unknown[]) => (features as LiveFeature[]).filter((f) => ids.has(f.id));
    proxy.spoil(V5, { kind: 'features', keep }, 100);
    try {
      await withDays(-1, async () => expect((await night(file, output)).code).toBe(0));
      ids.delete(b!.id);
      ids.add(c.id);
      const next = await night(file, output);
      expect(next.code, next.stderr).toBe(0);
    } finally {
      proxy.clear();
    }
    const day1 = await withDays(-1, () =>
      Promise.resolve(state().filter((f) => f.id === a!.id || f.id === b!.id)),
    );
    const day2 = today.filter((f) => f.id === a!.id || f.id === c.id);
    expect(await landedLive(output)).toEqual(truthLive(day2));
    const want = truthLiveChanges([day1, day2]);
    expect(want).toContain(`1 ${b!.id} removed`);
    expect(want).toContain(`1 ${c.id} added`);
    expect(await landedChanges(output)).toEqual(want);
  });

  it('a v1 feed that shares the first events but not the later history: refused (exit 2, nothing written); kept and continued when the user says it is the same', async () => {
    const project = await pipelineProject(signsPipeline({ limit: 100, concurrency: 2 }));
    const run = (...extra: string[]) =>
      runCli(['run', project.file, '--output', project.output, ...extra], { env });
    expect((await run()).code).toBe(0);
    const landed = await folderState(project.output);
    const events = await landedEventHashes(project.output);
    expect(events.length).toBeGreaterThan(0);

    // Another service: the same feed up to a moment a month back, other signs after it.
    const since = simulator.world.now - 30 * DAY;
    const edit = (events: unknown) =>
      (events as Record<string, unknown>[]).map((e) =>
        Date.parse(String(e['publication_timestamp'])) > since
          ? { ...e, id: String(Number(e['id']) + 1_000_000) }
          : e,
      );
    proxy.spoil(SIGNS_PATHS.events, { kind: 'json', edit }, 10_000);
    try {
      const refused = await run();
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(/does not serve the history the folder holds/);
      expect(refused.stderr).toContain('--reset signs_events');
      expect(refused.stderr).toContain('--accept-upstream signs_events');
      expect(await folderState(project.output)).toEqual(landed);

      const accepted = await run('--accept-upstream', 'signs_events');
      expect(accepted.code, accepted.stderr).toBe(0);
      // The landed history is kept (what the service serves after the cursor is added to
      // it); the service is the folder's from now on.
      const after = new Set(await landedEventHashes(project.output));
      expect(events.filter((hash) => !after.has(hash))).toEqual([]);
      const next = await run();
      expect(next.code, next.stderr).toBe(0);
    } finally {
      proxy.clear();
    }
  });
});

describe('the bicycle answers', () => {
  const START = '2026-10-01T00:00:00Z';
  const END = '2026-10-03T00:00:00Z';
  const definition = measurementsPipeline({
    start: START,
    end: END,
    prefixes: ['GAL', 'UTR'],
    retries: 2,
    backoff_ms: 20,
  });
  const truth = () =>
    truthMeasurements(bicycle, idsWithPrefix(bicycle, 'GAL', 'UTR'), START, END).kept;

  /** A folder with the period landed, and a run of the pipeline on it. */
  async function landed() {
    const { file, output } = await pipelineProject(definition);
    const run = () =>
      runCli(['run', file, '--output', output, '--log-format', 'json'], { env: bicycleEnv });
    expect((await run()).code).toBe(0);
    return { output, run };
  }

  it('a body broken in the middle, every time: retried with backoff, then upstream trouble with endpoint, status and body; what landed stays', async () => {
    const { output, run } = await landed();
    // The datasets and extracts (the state records the run that did not finish).
    const before = await outputHashes(output, ['manifest.json']);
    bicycleProxy.spoil(BICYCLE_PATHS.measurements, { kind: 'break' }, 1000);
    const failed = await run();
    bicycleProxy.clear();
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).not.toMatch(/a bug|UnreadableBodyError|\n\s+at /);
    expect(failed.stderr).toMatch(/asking again \(attempt 3 of 3\)/);
    expect(failed.stdout.trim().split('\n').at(-1)).toMatch(
      /Request failed after 3 attempts \(the body is not a JSON array of objects.*POST http:\/\/127\.0\.0\.1:\d+\/.*with status 200: \[/,
    );
    expect(await outputHashes(output, ['manifest.json'])).toEqual(before);
  });

  it('a body broken once: asked again, and the counts land exactly', async () => {
    const { file, output } = await pipelineProject(definition);
    bicycleProxy.spoil(BICYCLE_PATHS.measurements, { kind: 'break' }, 1);
    const result = await runCli(['run', file, '--output', output, '--log-format', 'json'], {
      env: bicycleEnv,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(bicycleProxy.spoiled).toBeGreaterThan(0);
    expect(await landedMeasurements(output)).toEqual(truth());
  });

  it('a location whose requests answer 500 forever: every other location lands, exit 1 names it, and the night once it is well lands it too', async () => {
    const { output } = await landed();
    const NEXT = '2026-10-04T00:00:00Z';
    const night = measurementsPipeline({
      start: END,
      end: NEXT,
      prefixes: ['GAL', 'UTR'],
      retries: 1,
      backoff_ms: 20,
    });
    const { file } = await pipelineProject(night);
    const run = () =>
      runCli(['run', file, '--output', output, '--log-format', 'json'], { env: bicycleEnv });
    const ids = idsWithPrefix(bicycle, 'GAL', 'UTR');
    const all = truthMeasurements(bicycle, ids, START, NEXT).kept;
    const bad = ids.find((id) => all.some((r) => r.startsWith(`${id} ${END.slice(0, 10)}`)))!;
    const before = all.filter((r) => r < `${bad} ${END}` && r.startsWith(`${bad} `));
    expect(before.length).toBeGreaterThan(0);
    bicycleProxy.spoil(
      BICYCLE_PATHS.measurements,
      { kind: 'status', status: 500 },
      1000,
      (_query, body) => body.includes(`"${bad}"`),
    );
    const failed = await run();
    bicycleProxy.clear();
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `1 of ${ids.length} location\\(s\\) left out, their requests failing after every retry: ${bad}; every other location landed.*POST http://127\\.0\\.0\\.1:\\d+/.* with status 500`,
      ),
    );
    // Its earlier hours as they were, none of the night's; every other location's night landed.
    const landedNow = await landedMeasurements(output);
    expect(landedNow).toEqual(all.filter((r) => !r.startsWith(`${bad} `) || r < `${bad} ${END}`));
    const healed = await run();
    expect(healed.code, healed.stderr).toBe(0);
    expect(await landedMeasurements(output)).toEqual(all);
  });

  it('a token endpoint that echoes the form it was sent: no form of the password anywhere, and what landed stays', async () => {
    const { output, run } = await landed();
    const before = await outputHashes(output, ['manifest.json']);
    bicycleProxy.spoil('/openid-connect/token', { kind: 'echo', status: 500 }, 1000);
    const failed = await run();
    bicycleProxy.clear();
    expect(failed.code).toBe(1);
    expect(await outputHashes(output, ['manifest.json'])).toEqual(before);
    // The echo did reach road-etl: the username beside the password is in the message.
    expect(failed.stderr).toContain('username=svc-trust');
    const password = bicycle.env.ROAD_ETL_PASSWORD;
    const forms = [
      password,
      encodeURIComponent(password),
      new URLSearchParams({ p: password }).toString().slice(2),
      JSON.stringify(password).slice(1, -1),
      Buffer.from(password).toString('base64'),
      Buffer.from(`svc-trust:${password}`).toString('base64'),
    ];
    const places = [failed.stdout, failed.stderr];
    for (const entry of await readdir(output, { recursive: true, withFileTypes: true }))
      if (entry.isFile())
        places.push((await readFile(join(entry.parentPath, entry.name))).toString('latin1'));
    for (const form of forms) for (const text of places) expect(text).not.toContain(form);
  });
});

describe('a file of the folder that cannot be read', () => {
  /** Two landed nights (two days back, and yesterday), their states. */
  async function twoNights(file: string, output: string): Promise<LiveFeature[][]> {
    const states: LiveFeature[][] = [];
    for (const days of [-2, -1])
      states.push(
        await withDays(days, async () => {
          const landed = await night(file, output);
          expect(landed.code, landed.stderr).toBe(0);
          return state();
        }),
      );
    return states;
  }
  const cutInHalf = async (path: string) => {
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, bytes.length >> 1));
  };
  /** Damaged where it lies (a disk's fault): its second half zeros, its size and time kept. */
  const damageInPlace = async (path: string) => {
    const bytes = await readFile(path);
    const { mtime } = await stat(path);
    bytes.fill(0, bytes.length >> 1);
    await writeFile(path, bytes);
    await utimes(path, mtime, mtime);
  };

  it('a landed snapshot: exit 1 naming the file and the command that repairs the folder; that command gives the truth and keeps the other snapshots', async () => {
    const { file, output } = await project();
    await twoNights(file, output);
    const snapshots = join(output, 'signs/live_snapshots');
    const files = (await readdir(snapshots, { recursive: true }))
      .filter((f) => f.endsWith('.parquet'))
      .sort();
    expect(files.length).toBe(2);
    const damaged = join(snapshots, files[0]!);
    await cutInHalf(damaged);
    const other = join(snapshots, files[1]!);
    const kept = await readFile(other);
    const before = await outputHashes(output, ['manifest.json']);

    const failed = await night(file, output);
    expect(failed.code).toBe(1);
    expect(failed.stderr).not.toMatch(/a bug/);
    const error = String(failed.summary['error']);
    // Cut short, it is no longer the object the folder's commit names.
    expect(error).toContain(
      `${damaged}: the folder's last commit names this object, and the store holds another one`,
    );
    const path = relative(output, damaged).replace(
      /\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/,
      '.parquet',
    );
    // The repair removes that file alone, never the whole history (--reset).
    const command = /repair the folder, run: road-etl (run .*?) \(it removes that file alone/.exec(
      error,
    )?.[1];
    expect(command, error).toContain(`--output ${output}`);
    expect(command).toContain(`--repair ${path}`);
    expect(command).not.toContain('--reset');
    expect(await outputHashes(output, ['manifest.json'])).toEqual(before);

    const repaired = await runCli(command!.split(' '), { env });
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(await landedLive(output)).toEqual(truthLive(state()));
    expect(await readFile(other)).toEqual(kept);
  });

  it('a derived partition: its repair builds the table anew from its sources, equal to one build over every night', async () => {
    const { file, output } = await project();
    const states = await twoNights(file, output);
    const changes = join(output, 'derived/signs_live_changes');
    const [partition] = (await readdir(changes)).filter((n) => n.includes('='));
    const path = `derived/signs_live_changes/${partition!}/data.parquet`;
    await damageInPlace(committed(output, path));

    const third = await runCli(
      ['run', file, '--output', output, '--log-format', 'json', '--repair', path],
      { env },
    );
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).toMatch(
      /signs_live_changes: building everything \(an output is missing\)/,
    );
    states.push(state());
    expect(await landedChanges(output)).toEqual(truthLiveChanges(states));
  });
});
