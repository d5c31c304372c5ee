/**
 * Failures met by a rerun on an output folder that already holds data: every
 * row starts from a copy of a whole run's output, meets one failure in a step
 * of one kind (upstream 5xx for some requests or for all, a refused 400,
 * SIGTERM, SIGKILL, a full disk, a read-only folder), and then finds every
 * dataset, export and the snapshot byte-identical to what had landed; a clean
 * rerun then gives the ground truth and the exports of the first run.
 */
import { committed } from '../helpers/committed.js';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RoadEtlError } from '../../src/errors.js';
import { SIGNS_AND_BICYCLE_SOURCE, idsWithPrefix } from '../helpers/bicycle.js';
import { collect, startCli, wholeRunMs } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import {
  BICYCLE_PATH,
  CURRENT_STATE_PATH,
  EVENTS_PATH,
  LOCATIONS_PATH,
  useSimulator,
} from '../helpers/simulator.js';
import { landedEventHashes, truthEventHashes } from '../helpers/signs.js';
import { duck, outputHashes, pipelineProject, testDir } from '../helpers/tmp.js';
import { expectSignsAndBicycleTruth } from '../helpers/truth.js';
import { inMountNamespace, signalDuringStep } from '../helpers/trouble.js';

const START = '2026-03-01T00:00:00Z';
const END = '2026-03-03T00:00:00Z';
const PREFIXES = ['GAL', 'UTR'];

const simulator = await useSimulator({
  seed: 71,
  signs: { signs: 120 },
  bicycle: { locations: 12, maxLocations: 4, maxPeriodDays: 1 },
  faults: { latencyMs: 3 },
});
const env = { ...simulator.env };
/** A feed of its own for the events step's local trouble, landed up to EARLY. */
const growing = await useSimulator({ seed: 72, signs: { signs: 150 } });
const EARLY = new Date(
  growing.world.feed.start + 0.7 * (growing.world.feed.end - growing.world.feed.start),
).toISOString();
const HTTP = { retries: 1, backoff_ms: 1, timeout_ms: 2000 };

const PIPELINE = `name: landed
${SIGNS_AND_BICYCLE_SOURCE}steps:
  - { id: signs_events, kind: signs.events, options: ${JSON.stringify({ ...HTTP, limit: 20, concurrency: 2, unit_rows: 100 })} }
  - { id: signs_snapshot, kind: signs.snapshot, options: ${JSON.stringify({ ...HTTP, refresh: 'always' })} }
  - { id: bicycle_locations, kind: bicycle.locations, options: ${JSON.stringify(HTTP)} }
  - id: bicycle_measurements
    kind: bicycle.measurements
    needs: [bicycle_locations]
    options: ${JSON.stringify({ ...HTTP, start: START, end: END, prefixes: PREFIXES, concurrency: 2 })}
  - id: signs_current_state
    kind: sql
    needs: [signs_events, signs_snapshot]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
  - id: export_signs
    kind: export
    needs: [signs_current_state]
    options:
      query: "SELECT * EXCLUDE (raw_event, typing_issues) FROM signs_current_state ORDER BY id"
      path: exports/signs.geojson
      geometry: { longitude: location_wgs84_longitude, latitude: location_wgs84_latitude, id: id }
  - id: export_measurements
    kind: export
    needs: [bicycle_measurements]
    options: { query: "SELECT location_id, measurement_hour FROM bicycle_measurements ORDER BY ALL", path: exports/measurements.csv }
`;
const SQL = ['signs_current_state.sql'];

/** The step of each kind in PIPELINE. */
const STEP_OF: Record<string, string> = {
  'signs.events': 'signs_events',
  'signs.snapshot': 'signs_snapshot',
  'bicycle.locations': 'bicycle_locations',
  'bicycle.measurements': 'bicycle_measurements',
  sql: 'signs_current_state',
  export: 'export_signs',
};
/** The folder each of those steps writes. */
const FOLDER_OF: Record<string, string> = {
  'signs.events': 'signs/events',
  'signs.snapshot': 'signs/snapshot',
  'bicycle.locations': 'bicycle/locations',
  'bicycle.measurements': 'bicycle/measurements',
  sql: 'derived/signs_current_state',
  export: 'exports',
};
const EXPORTS = ['exports/signs.geojson', 'exports/measurements.csv'];

/**
 * Datasets, exports and the snapshot with their sha256 (not .state, not the
 * manifest). A derived table is rebuilt whole by every run, its rows in no
 * defined order: it is known by the sha256 of its rows in one order.
 */
async function contents(output: string): Promise<Map<string, string>> {
  const hashes = await outputHashes(output, ['manifest.json']);
  for (const path of hashes.keys()) {
    if (!path.startsWith('derived/')) continue;
    const rows = await duck(
      `SELECT * FROM read_parquet('${committed(output, path)}') ORDER BY ALL`,
    );
    hashes.set(path, `rows ${createHash('sha256').update(JSON.stringify(rows)).digest('hex')}`);
  }
  return hashes;
}

let landed: string;
let reference: Map<string, string>;
const cleanUps: (() => Promise<void>)[] = [];
afterAll(() => Promise.all(cleanUps.map((f) => f())));

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-landed-'));
  cleanUps.push(() => rm(dir, { recursive: true, force: true }));
  const { output } = await pipelineProject(PIPELINE, SQL, dir);
  const run = await runDefinition(dir, PIPELINE, {}, { env });
  if (run.failure) throw run.failure;
  landed = output;
  reference = await contents(output);
}, 60_000);

/** A project whose output folder is a copy of the landed one. */
async function withLandedData(): Promise<{ dir: string; file: string; output: string }> {
  const project = await pipelineProject(PIPELINE, SQL);
  await cp(landed, project.output, { recursive: true, preserveTimestamps: true });
  expect(await contents(project.output)).toEqual(reference);
  return project;
}

async function expectGroundTruth(output: string): Promise<void> {
  await expectSignsAndBicycleTruth(simulator, output, {
    prefixes: PREFIXES,
    start: START,
    end: END,
  });
  const snapshot = await duck(
    `SELECT count(*)::INTEGER AS n FROM read_parquet('${committed(output, 'signs/snapshot/data.parquet')}')`,
  );
  expect(snapshot[0]!['n']).toBe(
    [...simulator.world.currentState(simulator.world.snapshotMoment)].length,
  );
  const now = await contents(output);
  for (const name of EXPORTS) expect(now.get(name), name).toBe(reference.get(name));
}

/** After the failure: what had landed is byte-identical; a clean rerun gives the ground truth. */
async function expectKeptThenCompleted(dir: string, output: string): Promise<void> {
  expect(await contents(output)).toEqual(reference);
  const rerun = await runDefinition(dir, PIPELINE, {}, { env });
  expect(rerun.failure?.message).toBeUndefined();
  await expectGroundTruth(output);
}

describe('the landed run', () => {
  it('holds the ground truth', async () => {
    expect([...reference.keys()]).toEqual(expect.arrayContaining(EXPORTS));
    await expectGroundTruth(landed);
  });
});

/** Upstream failures, as queued on the simulator for the rerun. */
const UPSTREAM: [
  kind: string,
  failure: string,
  path: string,
  contains: () => string | undefined,
  status: number,
][] = [
  ['signs.events', 'lasting 5xx', EVENTS_PATH, () => undefined, 500],
  ['signs.events', 'a refused 400', EVENTS_PATH, () => undefined, 400],
  ['signs.snapshot', 'lasting 5xx', CURRENT_STATE_PATH, () => undefined, 502],
  ['signs.snapshot', 'a refused 400', CURRENT_STATE_PATH, () => undefined, 400],
  ['bicycle.locations', 'lasting 5xx', LOCATIONS_PATH, () => undefined, 500],
  ['bicycle.locations', 'a refused 400', LOCATIONS_PATH, () => undefined, 400],
  [
    'bicycle.measurements',
    'lasting 5xx for the requests naming one location',
    BICYCLE_PATH,
    () => idsWithPrefix(simulator, 'UTR')[0],
    500,
  ],
  ['bicycle.measurements', 'lasting 5xx for all requests', BICYCLE_PATH, () => undefined, 503],
  ['bicycle.measurements', 'a refused 400', BICYCLE_PATH, () => undefined, 400],
];

describe('a rerun on landed data meets upstream trouble', () => {
  it.each(UPSTREAM)(
    '%s, %s: exit 1, what landed is unchanged, a clean rerun gives the ground truth',
    async (kind, _failure, path, contains, status) => {
      const { dir, output } = await withLandedData();
      const matching = contains();
      simulator.inject({
        kind: 'error',
        status,
        path,
        count: 100_000,
        ...(matching ? { contains: matching } : {}),
      });
      // Where the fault is on the path the folder's identity is asked by (the feed's first
      // event, the catalog), the run fails at that question, before it takes the folder.
      const atCheck = kind === 'signs.events' || kind === 'bicycle.locations';
      const run = await runDefinition(dir, PIPELINE, {}, { env }).then(
        (result) => result,
        (error: unknown) => error as RoadEtlError,
      );
      simulator.faults.clearQueue();
      // What ended the run: the question before it, or the step that met the fault.
      const ended =
        run instanceof Error
          ? { at: 'check', error: run.name, exit: run.exitCode }
          : {
              at: run.summary.steps.find((s) => s.status === 'failed')?.id,
              error: run.summary.status,
              exit: (run.failure as RoadEtlError | undefined)?.exitCode,
            };
      expect(ended).toEqual(
        atCheck
          ? { at: 'check', error: 'UpstreamError', exit: 1 }
          : { at: STEP_OF[kind], error: 'failed', exit: 1 },
      );
      await expectKeptThenCompleted(dir, output);
    },
    60_000,
  );
});

describe('a rerun on landed data is stopped by a signal', () => {
  // SIGTERM: each kind stops at its own pace. A kill at any moment is the commit's
  // (the random rounds below, local-commit.test.ts and store-runs.test.ts).
  it.each(Object.keys(STEP_OF))(
    'in a %s step, by SIGTERM: exit 1, what landed is unchanged, a clean rerun gives the ground truth',
    async (kind) => {
      const { dir, file, output } = await withLandedData();
      const { result, sent } = await signalDuringStep(
        file,
        output,
        (e) => e.step === STEP_OF[kind],
        'SIGTERM',
        env,
        // The exports of this small pipeline take a few ms: a later signal would find the run done.
        kind === 'export' ? 5 : 100,
      );
      expect(sent).toBe(true);
      // The unit in hand is finished or abandoned; the run says so and exits 1.
      const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as { status: string };
      expect([result.code, summary.status]).toEqual([1, 'interrupted']);
      expect(result.stderr).toMatch(/SIGTERM received/);
      // Stopped cleanly, it let go of the folder and removed its copy.
      expect(existsSync(join(output, '.state', 'lock'))).toBe(false);
      expect(await readdir(join(output, '.state', 'work')).catch(() => [])).toEqual([]);
      await expectKeptThenCompleted(dir, output);
    },
    60_000,
  );
});

describe('killed again and again on landed data', () => {
  it('12 rounds of SIGKILL at a random moment, each followed at once by the next run: none is refused, nothing landed is lost', async () => {
    const { dir, file, output } = await withLandedData();
    // A random moment is one before the run would have ended: within the time a whole
    // rerun on landed data takes, timed on a copy of its own (the faster of two: the first
    // pays for cold caches, and a moment past the run's end kills nothing).
    const timed = await withLandedData();
    const rerun = () => wholeRunMs(['run', timed.file, '--output', timed.output], { env });
    const whole = Math.min(await rerun(), await rerun());
    const span = 0.9 * whole - 100;
    const refused: string[] = [];
    let killed = 0;
    for (let round = 0; round < 12; round++) {
      const child = startCli(['run', file, '--output', output], { env });
      const done = collect(child);
      await sleep(100 + Math.floor(Math.random() * span));
      child.kill('SIGKILL');
      const result = await done;
      if (result.signal === 'SIGKILL') killed++;
      if (/in use by another road-etl run/.test(result.stderr)) refused.push(result.stderr);
    }
    expect(refused).toEqual([]);
    expect(killed).toBeGreaterThan(6);
    await expectKeptThenCompleted(dir, output);
  }, 180_000);
});

/**
 * Runs `road-etl run FILE ARGS` on a copy of the project's output that lies on
 * a small disk of its own, filled up but for a few KB; the output is copied
 * back afterwards. Resolves to the exit code and stderr.
 */
async function runOnFullDisk(
  dir: string,
  file: string,
  args: string,
  environment: Record<string, string>,
): Promise<{ code: string; stderr: string }> {
  const disk = join(dir, 'disk');
  const output = join(disk, 'output');
  const printed = await inMountNamespace(
    `
    set -u
    mkdir -p ${disk} && mount -t tmpfs -o size=24m tmpfs ${disk}
    cp -a ${join(dir, 'output')} ${output}
    room=$(df --output=avail -k ${disk} | tail -1)
    dd if=/dev/zero of=${disk}/filler bs=1k count=$((room - 8)) 2> /dev/null
    "$NODE" "$CLI" run ${file} --output ${output} ${args} > ${dir}/run.out 2> ${dir}/run.err; echo $?
    rm -rf ${join(dir, 'output')} && cp -a ${output} ${join(dir, 'output')}
  `,
    environment,
  );
  return { code: printed.trim(), stderr: await readFile(join(dir, 'run.err'), 'utf8') };
}

/** Runs `road-etl run FILE ARGS` with `folder` (below the output) mounted read-only. */
async function runWithReadOnly(
  dir: string,
  file: string,
  folder: string,
  args: string,
  environment: Record<string, string>,
): Promise<{ code: string; stderr: string }> {
  const output = join(dir, 'output');
  const printed = await inMountNamespace(
    `
    set -u
    mount --bind ${folder} ${folder} && mount -o remount,bind,ro ${folder}
    "$NODE" "$CLI" run ${file} --output ${output} ${args} > ${dir}/run.out 2> ${dir}/run.err; echo $?
  `,
    environment,
  );
  return { code: printed.trim(), stderr: await readFile(join(dir, 'run.err'), 'utf8') };
}

/** The last lines of stderr: the run's own word on how it ended. */
const ending = (stderr: string): string => stderr.split('\n').slice(-3).join('\n');

// The events step is left to the feed that grows below: on this landed data it has nothing new to write.
const WRITING_KINDS = Object.keys(STEP_OF).filter((kind) => kind !== 'signs.events');

describe('a rerun on landed data meets local trouble', () => {
  it.each(WRITING_KINDS)(
    'in a %s step, the disk fills up: exit 1, what landed is unchanged, and a run with room completes',
    async (kind) => {
      const { dir, file } = await withLandedData();
      // The step runs again alone: what it needs is reused from the landed run.
      const { code, stderr } = await runOnFullDisk(dir, file, `--select ${STEP_OF[kind]}`, env);
      expect(code, stderr).toBe('1');
      expect(ending(stderr)).toMatch(/the disk is full/);
      expect(stderr).not.toMatch(/unexpected error/);
      await expectKeptThenCompleted(dir, join(dir, 'output'));
    },
    60_000,
  );

  // A rerun of the measurements over the same hours brings nothing new: their date
  // partitions are left as they were, so a read-only folder of theirs is not met. A rerun
  // that writes the bytes its folder holds writes nothing there either: the step is made to
  // write others (started over: a new version of its dataset; the sql step's table of other rows).
  it.each(WRITING_KINDS.filter((kind) => kind !== 'bicycle.measurements'))(
    'in a %s step, the folder it writes is read-only: exit 1, nothing changes, and a writable run completes',
    async (kind) => {
      const { dir, file, output } = await withLandedData();
      // (the sql step's table made by another file: other rows)
      const other = join(dir, 'pipelines', 'other.yaml');
      await writeFile(other, PIPELINE.replace('file: signs_current_state.sql', 'file: other.sql'));
      await writeFile(
        join(dir, 'sql', 'other.sql'),
        'CREATE TABLE signs_current_state AS SELECT * FROM signs_events LIMIT 5;\n',
      );
      // Only the step's own folder is read-only: the lock and checkpoints can be written,
      // so the step itself meets the trouble.
      const folder = join(output, FOLDER_OF[kind]!);
      const step = STEP_OF[kind]!;
      const { code, stderr } = await runWithReadOnly(
        dir,
        kind === 'sql' ? other : file,
        folder,
        `--select ${step}${kind.includes('.') ? ` --reset ${step}` : ''}`,
        env,
      );
      expect(code, stderr).toBe('1');
      expect(ending(stderr)).toMatch(new RegExp(`the file system is read-only \\(${folder}/`));
      expect(stderr).not.toMatch(/unexpected error/);
      await expectKeptThenCompleted(dir, output);
    },
    60_000,
  );
});

describe('a rerun with new events to land meets local trouble in the signs.events step', () => {
  // A feed that grows: the events up to EARLY have landed, the rerun finds those up to the end.
  const grownEnv = { ROAD_ETL_SIGNS_URL: growing.env.ROAD_ETL_SIGNS_URL };
  const EVENTS_PIPELINE = `name: events
source:
  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }
steps:
  - { id: signs_events, kind: signs.events, options: ${JSON.stringify({ ...HTTP, limit: 20, concurrency: 1, unit_rows: 60 })} }
`;
  let landedEvents: string;
  let eventsReference: Map<string, string>;

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'road-etl-landed-events-'));
    cleanUps.push(() => rm(dir, { recursive: true, force: true }));
    const { output } = await pipelineProject(EVENTS_PIPELINE, [], dir);
    growing.world.setNow(EARLY);
    const run = await runDefinition(dir, EVENTS_PIPELINE, {}, { env: grownEnv });
    if (run.failure) throw run.failure;
    landedEvents = output;
    eventsReference = await contents(output);
  }, 60_000);

  /** The landed events copied into a new project; the feed grown to its end meanwhile. */
  async function withLandedEvents(): Promise<{ dir: string; file: string; output: string }> {
    const project = await pipelineProject(EVENTS_PIPELINE);
    await cp(landedEvents, project.output, { recursive: true, preserveTimestamps: true });
    growing.world.setNow(new Date(growing.world.feed.end).toISOString());
    onTestFinished(() => growing.world.setNow(EARLY));
    return project;
  }

  async function expectKeptThenWholeFeed(dir: string, output: string): Promise<void> {
    expect(await contents(output)).toEqual(eventsReference);
    const rerun = await runDefinition(dir, EVENTS_PIPELINE, {}, { env: grownEnv });
    expect(rerun.failure?.message).toBeUndefined();
    expect(await landedEventHashes(output)).toEqual(truthEventHashes(growing));
  }

  it('the landed events are those up to EARLY, and the feed holds more', async () => {
    const landed = await landedEventHashes(landedEvents);
    expect(landed).toEqual(truthEventHashes(growing));
    growing.world.setNow(new Date(growing.world.feed.end).toISOString());
    onTestFinished(() => growing.world.setNow(EARLY));
    const all = truthEventHashes(growing);
    expect(landed.length).toBeGreaterThan(0);
    expect(all.length).toBeGreaterThan(landed.length);
    expect(all.slice(0, landed.length)).toEqual(landed);
  });

  it('the disk fills up: exit 1, what landed is unchanged, and a run with room lands the whole feed', async () => {
    const { dir, file } = await withLandedEvents();
    const { code, stderr } = await runOnFullDisk(dir, file, '', grownEnv);
    expect(code, stderr).toBe('1');
    expect(ending(stderr)).toMatch(/: the disk is full/);
    await expectKeptThenWholeFeed(dir, join(dir, 'output'));
  }, 60_000);

  it('its folder is read-only: exit 1, nothing changes, and a writable run lands the whole feed', async () => {
    const { dir, file, output } = await withLandedEvents();
    const folder = join(output, FOLDER_OF['signs.events']!);
    const { code, stderr } = await runWithReadOnly(dir, file, folder, '', grownEnv);
    expect(code, stderr).toBe('1');
    expect(ending(stderr)).toMatch(/: the file system is read-only/);
    await expectKeptThenWholeFeed(dir, output);
  }, 60_000);
});

describe('the threads of a derived step', () => {
  it('are as many as what it reads can keep busy, at most the configured ones, after an extraction step too', async () => {
    const dir = await testDir();
    // About 25 MB of Parquet (hashes compress little): 2 threads at 16 MB each.
    const big =
      'CREATE TABLE big AS SELECT i, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS h FROM range(1200000) t(i);\n';
    const setting = (name: string, from: string) =>
      `CREATE TABLE ${name} AS SELECT current_setting('threads') AS threads FROM (SELECT count(*) FROM ${from});\n`;
    const run = await runDefinition(
      dir,
      `name: threads
duckdb: { threads: 4 }
source:
  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }
steps:
  - { id: signs_events, kind: signs.events, options: { concurrency: 2 } }
  - { id: small, kind: sql, needs: [signs_events], options: { file: small.sql, outputs: [small_setting] } }
  - { id: big, kind: sql, needs: [small], options: { file: big.sql, outputs: [big] } }
  - { id: large, kind: sql, needs: [big], options: { file: large.sql, outputs: [large_setting] } }
`,
      {
        'small.sql': setting('small_setting', 'signs_events'),
        'big.sql': big,
        'large.sql': setting('large_setting', 'big'),
      },
      { env },
    );
    expect(run.failure?.message).toBeUndefined();
    const threads = async (table: string) => {
      const [row] = await duck(
        `SELECT threads::INTEGER AS threads FROM read_parquet('${committed(run.output, `derived/${table}/data.parquet`)}')`,
      );
      return row!['threads'];
    };
    const [bigFile] = await duck(
      `SELECT sum(total_compressed_size)::BIGINT AS bytes FROM parquet_metadata('${committed(run.output, 'derived/big/data.parquet')}')`,
    );
    const bytes = Number(bigFile!['bytes']);
    expect(bytes).toBeGreaterThan(16 * 2 ** 20);
    expect(await threads('small_setting')).toBe(1);
    expect(await threads('large_setting')).toBe(Math.min(4, Math.ceil(bytes / (16 * 2 ** 20))));
  });
});
