/**
 * One run of pipelines/demo.yaml (at log level debug) for the test files that
 * look at what it gives: its output, its manifest and report, its logs. The
 * first file to ask runs it, in its worker, into the test run's shared folder
 * (global-setup.ts); the files of other workers wait for it. The demo takes
 * about 19 s of CPU: run once instead of once per file.
 */
import { once } from 'node:events';
import { watch } from 'node:fs';
import { cp, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import { ROOT, runCli, type CliResult } from './cli.js';
import { testDir } from './tmp.js';

export interface DemoRun extends CliResult {
  /** The output folder the demo ran into: read it, do not change it (copyOfDemo). */
  output: string;
}

/** The arguments of the shared run, less the output folder. */
const DEMO_ARGS = ['run', join(ROOT, 'pipelines', 'demo.yaml'), '--log-level', 'debug'];

/** The shared run of each test run (its shared folder), as this worker has it. */
const runs = new Map<string, Promise<DemoRun>>();

/** The shared run of the demo (running it, or waiting for the worker that does). */
export function sharedDemo(): Promise<DemoRun> {
  const shared = inject('sharedFolder');
  let run = runs.get(shared);
  if (!run) {
    run = fetchDemo(shared);
    runs.set(shared, run);
  }
  return run;
}

/** A copy of the shared demo's output in a folder of the current test, for a test that changes it. */
export async function copyOfDemo(): Promise<{ run: DemoRun; output: string }> {
  const run = await sharedDemo();
  const output = join(await testDir(), 'output');
  await cp(run.output, output, { recursive: true, preserveTimestamps: true });
  return { run, output };
}

async function fetchDemo(shared: string): Promise<DemoRun> {
  const folder = join(shared, 'demo');
  const result = join(folder, 'run.json');
  try {
    // Whoever creates the folder runs the demo.
    await mkdir(folder);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return JSON.parse(await whenWritten(folder, 'run.json')) as DemoRun;
  }
  // (a folder named like the pipeline: its name, paths and messages stay in the clear)
  const output = join(folder, 'demo-output');
  const run: DemoRun = {
    ...(await runCli([...DEMO_ARGS, '--output', output], { env: {} })),
    output,
  };
  await writeFile(`${result}.tmp`, JSON.stringify(run));
  await rename(`${result}.tmp`, result);
  return run;
}

/** The text of `folder/name` once it is there (it is written whole, by a rename). */
async function whenWritten(folder: string, name: string): Promise<string> {
  const path = join(folder, name);
  const read = (): Promise<string | undefined> =>
    readFile(path, 'utf8').catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
  const watcher = watch(folder);
  try {
    for (;;) {
      // Listening before looking: a rename between the two is not missed.
      const changed = once(watcher, 'change');
      const text = await read();
      if (text !== undefined) return text;
      await changed;
    }
  } finally {
    watcher.close();
  }
}
