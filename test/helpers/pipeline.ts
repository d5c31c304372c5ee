import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { manifestSchema, type Manifest, type PipelineRun } from '../../src/manifest.js';
import { createMemoryLogger } from '../../src/log.js';
import { buildPipeline } from '../../src/pipeline/build.js';
import { runPipeline, type RunResult } from '../../src/pipeline/run.js';
import { silentProgress } from '../../src/progress.js';
import { writeFiles } from './tmp.js';
import { scratchCopy } from '../../src/store/scratch.js';
import { shownAt } from '../../src/pipeline/session.js';
import { LocalStore } from '../../src/store/local-store.js';
import { commitId, putFolder } from '../../src/store/put-folder.js';
import { WorkingCopy } from '../../src/store/working-copy.js';
import { recordWritten } from '../../src/duckdb/folder-files.js';
import { fetchFolder } from '../../src/store/sync.js';
import { readCommit } from '../../src/store/commit.js';

export interface RunDefinitionOptions {
  params?: Record<string, string>;
  env?: Record<string, string | undefined>;
  select?: string[];
  reset?: string[];
  acceptUpstream?: string[];
  signal?: AbortSignal;
}

/**
 * The files a test wrote into a folder by hand (input datasets; before the
 * first commit, checkpoints too) made part of the folder's commit, as a run
 * would have landed them: the folder's next commit names them.
 */
export async function commitAsFound(output: string): Promise<void> {
  if (!existsSync(output)) return;
  const store = new LocalStore(output);
  const commit = await readCommit(store);
  const named = new Set(Object.values(commit?.files ?? {}).map((file) => file.key));
  const found = (await store.list())
    .map((object) => object.key)
    .filter(
      (key) =>
        !named.has(key) &&
        key !== '.gitkeep' &&
        (commit ? !key.startsWith('.state/') : key !== '.state/lock'),
    );
  if (found.length === 0) return;
  const staged = `${output}.found`;
  const working = new WorkingCopy(store, staged);
  const fetched = commit
    ? await fetchFolder(store, staged, working)
    : { commit: undefined, parent: undefined, listed: [] as string[] };
  for (const key of found) {
    const to = join(staged, ...key.split('/'));
    await mkdir(dirname(to), { recursive: true });
    await rename(join(output, ...key.split('/')), to);
    if (!key.startsWith('.state/')) await recordWritten(working, to);
  }
  await putFolder(store, staged, working, fetched);
  await rm(staged, { recursive: true, force: true });
}

/**
 * Writes pipelines/p.yaml (and any sql files) under dir, then builds and runs
 * it in-process as `road-etl run --output dir/output` does: on a copy of the
 * folder's last commit, put back as its next commit (failed or not).
 */
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
  await commitAsFound(output);
  const store = new LocalStore(output);
  const scratch = await scratchCopy(store);
  await scratch.make();
  const local = scratch.folder;
  try {
    const files = new WorkingCopy(store, local);
    const fetched = await fetchFolder(store, local, files);
    const pipeline = await buildPipeline(join(dir, 'pipelines/p.yaml'), {
      params: options.params ?? {},
      env: options.env ?? {},
      output: local,
    });
    const logger = createMemoryLogger();
    const commit = commitId();
    const result = await runPipeline(pipeline, {
      commit,
      output: local,
      select: options.select,
      reset: options.reset,
      acceptUpstream: options.acceptUpstream,
      logger,
      progress: silentProgress,
      signal: options.signal,
      files,
    });
    await putFolder(store, local, files, fetched, { id: commit });
    return { ...result, summary: shownAt(result.summary, local, output), logger, output };
  } finally {
    await scratch.remove();
  }
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
