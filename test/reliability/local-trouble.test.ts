/**
 * Local trouble: two runs on one output folder, a state file damaged by hand, a
 * dataset file that is not Parquet, the disk running full and a read-only
 * output folder. Each gives a clear error (exit 1), leaves the datasets and
 * exports as they were, and, once the trouble is gone, a rerun completes with
 * the ground truth.
 *
 * The disk, the read-only folder and the folders mounted apart are real: small
 * tmpfs and a read-only bind mount, in a mount namespace of the test's own (unshare), so that nothing is
 * simulated inside road-etl.
 */
import { readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collect, runCli, startCli } from '../helpers/cli.js';
import { committed, committedPaths } from '../helpers/committed.js';
import { expectStateGroundTruth, stateExportPipeline, truthEventHashes } from '../helpers/signs.js';
import { LONG_FEED, useSimulator } from '../helpers/simulator.js';
import { duck, outputHashes, pipelineProject } from '../helpers/tmp.js';
import { inMountNamespace } from '../helpers/trouble.js';

// The five-year feed: its day files are what fills the small disks below.
const simulator = await useSimulator(LONG_FEED, {
  seed: 43,
  signs: { signs: 300 },
  faults: { latencyMs: 2 },
});
const env = { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL };

const PIPELINE = stateExportPipeline(
  { limit: 25, concurrency: 2, unit_rows: 150 },
  'id, type, rvv_code, location_county_code',
);

const setUp = () => pipelineProject(PIPELINE, ['signs_current_state.sql']);

/** Every file of the datasets and exports (not .state, not the manifest), with its sha256. */
const contents = (output: string) => outputHashes(output, ['manifest.json']);

const expectGroundTruth = (output: string) => expectStateGroundTruth(simulator, output);

async function goodRun(file: string, output: string): Promise<void> {
  const run = await runCli(['run', file, '--output', output], { env });
  expect(run.code, run.stderr).toBe(0);
}

describe('local trouble', () => {
  it('refuses a second run on the same output folder while the first is at work', async () => {
    const { file, output } = await setUp();
    const first = startCli(['run', file, '--output', output, '--log-format', 'json'], { env });
    const firstDone = collect(first);
    // Wait until the first run holds the lock and is extracting.
    await new Promise<void>((resolve) => {
      first.stderr?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('"step.start"')) resolve();
      });
    });
    const second = await runCli(['run', file, '--output', output], { env });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(
        `The output folder ${output} is in use by another road-etl run \\(pipeline signs_test, pid ${first.pid}`,
      ),
    );
    // Refused, it still ends stdout with its summary line: status, error and exit code.
    const lines = second.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      status: 'refused',
      pipeline: 'signs_test',
      exit_code: 1,
      error: expect.stringMatching(/is in use by another road-etl run/) as unknown,
    });
    const done = await firstDone;
    expect(done.code, done.stderr).toBe(0);
    await expectGroundTruth(output);
  });

  it('stops at a commit damaged by hand, says what to do, and leaves the data alone', async () => {
    const { file, output } = await setUp();
    await goodRun(file, output);
    const before = await contents(output);
    const commit = join(output, '.state', 'commit.json');
    const text = await readFile(commit, 'utf8');
    await writeFile(commit, text.slice(0, 200));
    const run = await runCli(['run', file, '--output', output], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${commit} is damaged (200 bytes, not JSON`);
    expect(run.stderr).toMatch(/restore it from .* a backup/);
    // The data files are those of the commit as it was: restored, it names them all unchanged.
    expect(await readFile(commit, 'utf8')).toBe(text.slice(0, 200));
    await writeFile(commit, text);
    expect(await contents(output)).toEqual(before);
    const again = await runCli(['run', file, '--output', output], { env });
    expect(again.code, again.stderr).toBe(0);
    await expectGroundTruth(output);
  });

  it('names a dataset file that is not Parquet instead of failing obscurely', async () => {
    const { file, output } = await setUp();
    await goodRun(file, output);
    const events = join(output, 'signs', 'events');
    const day = (await readdir(events)).sort()[0]!;
    const damaged = join(events, day, (await readdir(join(events, day)))[0]!);
    // Damaged where it lies (a disk's fault): its size and time kept, its bytes no Parquet.
    const { size, mtime } = await stat(damaged);
    await writeFile(damaged, Buffer.alloc(size, 0x2a));
    await utimes(damaged, mtime, mtime);
    const before = await contents(output);
    const run = await runCli(['run', file, '--output', output], { env });
    expect(run.code).toBe(1);
    // The file (as its commit names it), its dataset, and the command that repairs the folder.
    const path = relative(output, damaged).replace(
      /\.v\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/,
      '.parquet',
    );
    expect(run.stderr).toContain(
      `The file ${path} of dataset signs_events cannot be read: it is damaged or not Parquet`,
    );
    // A repair that removes that file alone, never a --reset that removes the whole feed.
    expect(run.stderr).toMatch(
      /To repair the folder, run: road-etl run \S+ --output \S+ .*--repair signs\/events\/\S+\.parquet/,
    );
    expect(run.stderr).not.toContain('--reset');
    expect(run.stderr).not.toMatch(/unexpected error/);
    expect(await contents(output)).toEqual(before);
  });

  it('stops with "the disk is full", keeps the datasets and exports it had, and completes once there is room', async () => {
    const { dir, file } = await setUp();
    const disk = join(dir, 'disk');
    const output = join(disk, 'output');
    // A run on a tiny disk; the same with room; then the disk is filled up and the pipeline
    // run again (its sql and export steps rewrite their tables and files); then room is made.
    const printed = await inMountNamespace(
      `
      set -u
      mkdir -p ${disk} && mount -t tmpfs -o size=256k tmpfs ${disk}
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/tiny.out 2> ${dir}/tiny.err; echo "tiny $?"
      cp -a ${output} ${dir}/tiny
      mount -o remount,size=24m ${disk}
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/first.out 2> ${dir}/first.err; echo "first $?"
      cp -a ${output} ${dir}/before
      room=$(df --output=avail -k ${disk} | tail -1)
      dd if=/dev/zero of=${disk}/filler bs=1k count=$((room - 48)) 2> /dev/null
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/full.out 2> ${dir}/full.err; echo "full $?"
      cp -a ${output} ${dir}/after
      rm ${disk}/filler
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/room.out 2> ${dir}/room.err; echo "room $?"
      cp -a ${output} ${dir}/final
    `,
      env,
    );
    expect(printed).toBe('tiny 1\nfirst 0\nfull 1\nroom 0\n');
    // Full while extracting: the units its commit holds are whole, each event once (none
    // when the disk had no room left for the commit itself: the folder is then as it was).
    const tiny = await readFile(join(dir, 'tiny.err'), 'utf8');
    expect(tiny).toMatch(/: the disk is full/);
    const units = committedPaths(join(dir, 'tiny'))
      .filter((path) => path.startsWith('signs/events/'))
      .map((path) => `'${committed(join(dir, 'tiny'), path)}'`);
    const landed =
      units.length === 0
        ? []
        : (await duck(`SELECT event_hash FROM read_parquet([${units.join(', ')}])`)).map((r) =>
            String(r['event_hash']),
          );
    expect(new Set(landed).size).toBe(landed.length);
    expect(truthEventHashes(simulator)).toEqual(expect.arrayContaining(landed));
    const leftovers = [...(await contents(join(dir, 'tiny'))).keys()].filter((f) =>
      /\.tmp-/.test(f),
    );
    expect(leftovers).toEqual([]);
    // The failed step's temporary file went at once, so it holds none of the room a rerun needs.
    expect(await readdir(join(dir, 'tiny', '.state', 'tmp')).catch(() => [])).toEqual([]);
    // Full while rebuilding the current state: the old table and export stay as they were.
    const full = await readFile(join(dir, 'full.err'), 'utf8');
    expect(full).toMatch(/: the disk is full/);
    expect(full).not.toMatch(/unexpected error/);
    expect(await contents(join(dir, 'after'))).toEqual(await contents(join(dir, 'before')));
    await expectGroundTruth(join(dir, 'final'));
  });

  it('stops with "read-only" on a read-only output folder and changes nothing in it', async () => {
    const { dir, file, output } = await setUp();
    await goodRun(file, output);
    const before = await contents(output);
    const printed = await inMountNamespace(
      `
      set -u
      mount --bind ${output} ${output} && mount -o remount,bind,ro ${output}
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/ro.out 2> ${dir}/ro.err; echo "ro $?"
    `,
      env,
    );
    const stderr = await readFile(join(dir, 'ro.err'), 'utf8');
    expect(printed, stderr).toBe('ro 1\n');
    expect(stderr).toMatch(/read-only/);
    expect(stderr).not.toMatch(/unexpected error/);
    expect(await contents(output)).toEqual(before);
    await goodRun(file, output);
    await expectGroundTruth(output);
  });

  it('lands whole files in folders mounted apart from the output folder (exports, a dataset)', async () => {
    const { dir, file, output } = await setUp();
    // Files are written in .state/tmp and renamed into place; across file systems the
    // rename cannot be done, so they are copied beside their final name and renamed there.
    const printed = await inMountNamespace(
      `
      set -u
      mkdir -p ${output}/exports ${output}/signs/events
      mount -t tmpfs -o size=8m tmpfs ${output}/exports
      mount -t tmpfs -o size=8m tmpfs ${output}/signs/events
      "$NODE" "$CLI" run ${file} --output ${output} > ${dir}/apart.out 2> ${dir}/apart.err; echo "apart $?"
      cp -a ${output} ${dir}/apart
    `,
      env,
    );
    const stderr = await readFile(join(dir, 'apart.err'), 'utf8');
    expect(printed, stderr).toBe('apart 0\n');
    const copy = join(dir, 'apart');
    await expectGroundTruth(copy);
    expect([...(await contents(copy)).keys()].filter((f) => /\.tmp-/.test(f))).toEqual([]);
    expect(await readdir(join(copy, '.state', 'tmp')).catch(() => [])).toEqual([]);
  });
});
