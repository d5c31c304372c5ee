import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestSchema, type Manifest, type PipelineRun } from '../../src/manifest.js';
import { createMemoryLogger } from '../../src/log.js';
import { buildPipeline } from '../../src/pipeline/build.js';
import { runPipeline, type RunResult } from '../../src/pipeline/run.js';
import { StateStore } from '../../src/pipeline/state.js';
import { silentProgress } from '../../src/progress.js';
import { writeFiles } from './tmp.js';

export interface RunDefinitionOptions {
  params?: Record<string, string>;
  env?: Record<string, string | undefined>;
  select?: string[];
  reset?: string[];
  acceptUpstream?: string[];
  signal?: AbortSignal;
}

/** Writes pipelines/p.yaml (and any sql files) under dir, then builds and runs it on dir/output in-process. */
export async function runDefinition(
  dir: string,
  yaml: string,
  sql: Record<string, string> = {},
  options: RunDefinitionOptions = {},
): Promise<RunResult & { logger: ReturnType<typeof createMemoryLogger>; output: string }> {
  await writeFiles(dir, {
    'pipelines/p.yaml': yaml,
    ...Object.fromEntries(Object.entries(sql).map(([k, v]) => [`sql/${k}`, v])),
  });
  const output = join(dir, 'output');
  const pipeline = await buildPipeline(join(dir, 'pipelines/p.yaml'), {
    params: options.params ?? {},
    env: options.env ?? {},
    output,
    state: new StateStore(output),
  });
  const logger = createMemoryLogger();
  const result = await runPipeline(pipeline, {
    output,
    select: options.select,
    reset: options.reset,
    acceptUpstream: options.acceptUpstream,
    logger,
    progress: silentProgress,
    signal: options.signal,
  });
  return { ...result, logger, output };
}

/**
 * The folder's manifest.json, read against its schema (so that a manifest that
 * does not fit fails the test), and the last run in it.
 */
export async function readManifest(
  output: string,
): Promise<{ manifest: Manifest; run: PipelineRun }> {
  const manifest = manifestSchema.parse(
    JSON.parse(await readFile(join(output, 'manifest.json'), 'utf8')),
  );
  const run = manifest.pipelines[manifest.last_run.pipeline];
  if (!run) throw new Error(`manifest.json has no run of ${manifest.last_run.pipeline}`);
  return { manifest, run };
}
