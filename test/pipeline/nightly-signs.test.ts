import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveState, type LiveFeature } from '../../src/simulator/index.js';
import type { Plan } from '../../src/pipeline/plan.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { partings } from '../helpers/plans.js';
import { readManifest, runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { changeLines, truthLiveChanges } from '../helpers/signs.js';
import { duck, testDir, writeFiles } from '../helpers/tmp.js';

// A world whose feed goes on past its laid-out end: each simulated day brings new events.
const simulator = await useSimulator({
  seed: 41,
  signs: { signs: 600, feedStart: '2026-01-01T00:00:00.000Z' },
});
const DAY = 86_400_000;

async function sql(names: string[]): Promise<Record<string, string>> {
  return Object.fromEntries(
    await Promise.all(names.map(async (f) => [f, await readFile(join(ROOT, 'sql', f), 'utf8')])),
  ) as Record<string, string>;
}

/**
 * What `road-etl plan --format json` says a shipped pipeline will do on
 * dir/output against the simulator as it is now (the definition written
 * where the run that follows takes it).
 */
async function planOf(dir: string, pipeline: string, sqlFiles: string[]): Promise<Plan> {
  const file = join(dir, 'pipelines', 'p.yaml');
  await writeFiles(dir, {
    'pipelines/p.yaml': await readFile(join(ROOT, 'pipelines', pipeline), 'utf8'),
    ...Object.fromEntries(Object.entries(await sql(sqlFiles)).map(([k, v]) => [`sql/${k}`, v])),
  });
  const printed = await runCli(
    ['plan', file, '--output', join(dir, 'output'), '--format', 'json'],
    {
      env: { ...simulator.env },
    },
  );
  expect(printed.code, printed.stderr).toBe(0);
  return JSON.parse(printed.stdout) as Plan;
}

/** Runs a shipped pipeline on dir/output against the simulator as it is now. */
async function run(
  dir: string,
  pipeline: string,
  sqlFiles: string[],
  options: { select?: string[]; reset?: string[]; params?: Record<string, string> } = {},
) {
  const result = await runDefinition(
    dir,
    await readFile(join(ROOT, 'pipelines', pipeline), 'utf8'),
    await sql(sqlFiles),
    { env: { ...simulator.env }, ...options },
  );
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

const V1 = [
  'traffic-signs.yaml',
  ['signs_current_state.sql', 'signs_current_state_fold.sql', 'signs_reconcile.sql'],
] as const;

/** How the last run built signs_current_state: full, fold or unchanged (the manifest's notes). */
async function currentStateBuild(output: string): Promise<unknown> {
  const { manifest } = await readManifest(output);
  const step = manifest.pipelines['traffic_signs']?.steps.find(
    (s) => s.id === 'signs_current_state',
  );
  return step?.notes?.['build'];
}
const LIVE = ['traffic-signs-live.yaml', ['signs_live_changes.sql']] as const;

/** Rows in one folder's dataset and not in the other's, both ways. */
async function difference(a: string, b: string, dataset: string, columns = '*'): Promise<number> {
  const read = (folder: string) =>
    `(SELECT ${columns} FROM read_parquet('${folder}/${dataset}/**/*.parquet', hive_partitioning = true))`;
  const [row] = await duck(
    `SELECT count(*) AS n FROM ((FROM ${read(a)} EXCEPT ALL FROM ${read(b)}) UNION ALL (FROM ${read(b)} EXCEPT ALL FROM ${read(a)}))`,
  );
  return Number(row?.['n']);
}

/** signs_live_changes as "pair id change fields", a pair numbered by its later snapshot (1: the second). */
async function landedChanges(output: string): Promise<string[]> {
  const rows = await duck(
    `WITH snapshots AS (
       SELECT snapshot, row_number() OVER (ORDER BY snapshot) - 1 AS pair
       FROM (SELECT DISTINCT snapshot FROM read_parquet('${output}/signs/live_snapshots/**/*.parquet'))
     )
     SELECT s.pair, sign_id::VARCHAR AS sign_id, change, changed_fields
     FROM read_parquet('${output}/derived/signs_live_changes/**/*.parquet') c
     JOIN snapshots s ON s.snapshot = c.to_moment`,
  );
  return changeLines(rows);
}

/** The live pipeline's extracts (SHA-256). */
async function liveExtracts(output: string) {
  const exports = join(output, 'exports');
  const names = ['signs_live.csv', 'signs_live.fgb'];
  const files = Object.fromEntries(
    await Promise.all(
      names.map(async (n) => [
        n,
        createHash('sha256')
          .update(await readFile(join(exports, n)))
          .digest('hex'),
      ]),
    ),
  ) as Record<string, string>;
  return files;
}

describe('nightly runs of the sign pipelines', () => {
  it('over several simulated days on one folder give the events, current state and history of one run, and the day-to-day changes', async () => {
    const start = simulator.world.now;
    const nightlyDir = await testDir();
    const states: LiveFeature[][] = [];
    const extracts: Awaited<ReturnType<typeof liveExtracts>>[] = [];
    const builds: unknown[] = [];
    // Each night of each pipeline did what `road-etl plan` said before it, or stayed within its bound.
    const parted: string[] = [];
    let nightly = '';
    try {
      for (let day = 0; day < 4; day++) {
        simulator.world.setNow(new Date(start + day * DAY).toISOString());
        // Both pipelines share the folder, as a scheduler runs them.
        let plan = await planOf(nightlyDir, V1[0], [...V1[1]]);
        nightly = await run(nightlyDir, V1[0], [...V1[1]]);
        parted.push(...partings(plan, (await readManifest(nightly)).run.steps, `v1 night ${day}`));
        builds.push(await currentStateBuild(nightly));
        plan = await planOf(nightlyDir, LIVE[0], [...LIVE[1]]);
        const live = await run(nightlyDir, LIVE[0], [...LIVE[1]]);
        parted.push(...partings(plan, (await readManifest(live)).run.steps, `live night ${day}`));
        states.push([...liveState(simulator.world, simulator.world.now, 'v5')]);
        extracts.push(await liveExtracts(live));
      }
      // The extracts of the last night are the files one run writes, byte for byte.
      const onceLive = await run(await testDir(), LIVE[0], [...LIVE[1]]);
      expect(extracts.at(-1)).toEqual(await liveExtracts(onceLive));
      // The current state changed from night to night, and so did the extracts.
      expect(new Set(extracts.map((e) => e['signs_live.csv'])).size).toBe(extracts.length);
      // One run at the last night's clock, on a folder of its own.
      const once = await run(await testDir(), V1[0], [...V1[1]]);
      for (const dataset of ['signs/events', 'derived/signs_current_state'])
        expect(await difference(once, nightly, dataset), dataset).toBe(0);
      // After the first night, each folded its new events into the state it kept.
      expect(builds).toEqual(['full', 'fold', 'fold', 'fold']);
      expect(parted).toEqual([]);
      const [counted] = await duck(
        `SELECT count(*) AS n FROM read_parquet('${nightly}/signs/events/**/*.parquet')`,
      );
      const [before] = await duck(
        `SELECT count(*) AS n FROM read_parquet('${nightly}/signs/events/**/*.parquet') WHERE publication_timestamp <= make_timestamptz(${start * 1000})`,
      );
      // The nights after the first brought events of their own.
      expect(Number(counted?.['n'])).toBeGreaterThan(Number(before?.['n']));
      expect(await readFile(join(nightly, 'exports/signs_current_state.csv'), 'utf8')).toBe(
        await readFile(join(once, 'exports/signs_current_state.csv'), 'utf8'),
      );
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }

    // The history, built a pair a night, is the simulator's day-to-day differences...
    const want = truthLiveChanges(states);
    expect(want.length).toBeGreaterThan(0);
    expect(await landedChanges(nightly)).toEqual(want);
    // ... and what one build over all the snapshots gives (started over: every pair at once).
    await run(nightlyDir, LIVE[0], [...LIVE[1]], {
      select: ['signs_live_changes'],
      reset: ['signs_live_changes'],
    });
    expect(await landedChanges(nightly)).toEqual(want);
  }, 180_000);

  it('fold the new events into the current state taken from the snapshot as one run builds it', async () => {
    const start = simulator.world.now;
    const params = { current_state_from: 'snapshot' };
    const nightlyDir = await testDir();
    const builds: unknown[] = [];
    let nightly = '';
    try {
      for (let day = 0; day < 3; day++) {
        simulator.world.setNow(new Date(start + day * DAY).toISOString());
        nightly = await run(nightlyDir, V1[0], [...V1[1]], { params });
        builds.push(await currentStateBuild(nightly));
      }
      const once = await run(await testDir(), V1[0], [...V1[1]], { params });
      expect(await difference(once, nightly, 'derived/signs_current_state')).toBe(0);
      expect(builds).toEqual(['full', 'fold', 'fold']);
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }
  });
});
