/**
 * Carries out a checked pipeline: takes the output folder's lock, clears what a
 * killed run left half-written, runs the selected steps in order with their
 * checkpoints, and writes manifest.json at the end, also when a step failed.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Database } from '../duckdb/database.js';
import { openOutputFolder, type OutputFolder, type PlaceholderViews } from '../duckdb/folder.js';
import { explainOutOfMemory, formatSize, parseSize } from '../duckdb/memory.js';
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import {
  EXIT_FAILED,
  InputError,
  InterruptedError,
  RoadEtlError,
  RunError,
  explainIoError,
} from '../errors.js';
import { redactor, type Logger } from '../log.js';
import type { Progress } from '../progress.js';
import {
  describeFile,
  exists,
  makeFolder,
  removeTemporaryFiles,
  type FileRecord,
} from '../util/fs.js';
import { VERSION } from '../version.js';
import type { Pipeline, PipelineStep } from './build.js';
import { ManifestWriter, type PipelineRun } from './manifest.js';
import type { ExportRecord, StepReport } from '../manifest.js';
import { describeRunReport, writeRunReport } from './run-report.js';
import { REPORT_PATH } from '../report/index.js';
import { STEP_KINDS } from '../steps/registry.js';
import { StepMeter } from './resources.js';
import { STATE_FOLDER, scratchFolder, stagingFolder } from '../layout.js';
import { StateStore, acquireLock, type StepState } from './state.js';
import { checkUpstreams } from './upstream-check.js';
import type { PlanContext, StepContext, Upstream } from '../steps/step-kind.js';
import { DATASET_VIEWS } from '../sources/views.js';

export interface Selection {
  /** Steps that run, in order. */
  selected: PipelineStep[];
  /** Needs of selected steps that do not run: their earlier output is read. */
  reused: { step: string; need: string }[];
}

/** Resolves --select; unknown names are bad input. */
function selectSteps(pipeline: Pipeline, select: readonly string[] | undefined): Selection {
  if (!select || select.length === 0) return { selected: pipeline.steps, reused: [] };
  const known = new Set(pipeline.steps.map((s) => s.id));
  const unknown = select.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new InputError(
      `--select: no step named ${unknown.join(', ')} in ${pipeline.file} (steps: ${[...known].join(', ')})`,
    );
  }
  const chosen = new Set(select);
  const selected = pipeline.steps.filter((s) => chosen.has(s.id));
  const reused = selected.flatMap((s) =>
    s.needs.filter((n) => !chosen.has(n)).map((need) => ({ step: s.id, need })),
  );
  return { selected, reused };
}

/** What a run would do, step by step: for validate and --dry-run. Touches nothing. */
export async function describePlan(
  pipeline: Pipeline,
  output: string,
  select?: readonly string[],
): Promise<string[]> {
  const { selected, reused } = selectSteps(pipeline, select);
  const store = new StateStore(output);
  const lines = [`Pipeline ${pipeline.name} (${pipeline.file})`];
  const params = Object.entries(pipeline.params).map(
    ([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`,
  );
  if (params.length > 0) lines.push(`Params: ${params.join(' ')}`);
  lines.push(`Output: ${output}`);
  if (pipeline.simulator)
    lines.push(`Upstream: embedded simulator (seed ${pipeline.simulator.seed})`);
  const { signs, bicycle } = pipeline.upstream;
  if (signs?.url)
    lines.push(
      `Upstream: traffic signs at ${signs.url}${signs.v5Url && signs.v5Url !== signs.url ? ` (v5 current state at ${signs.v5Url})` : ''}`,
    );
  if (bicycle)
    lines.push(
      `Upstream: bicycle data at ${bicycle.url}, token from ${bicycle.authUrl} (client ${bicycle.clientId})`,
    );
  if (pipeline.missingEnv.length > 0)
    lines.push(
      `A run needs ${pipeline.missingEnv.join(', ')} in the environment (not set now; a run refuses without them).`,
    );
  lines.push('Steps, in order:');
  for (const [i, step] of selected.entries()) {
    const context: PlanContext = {
      stepId: step.id,
      output,
      sqlDir: pipeline.sqlDir,
      checkpoint: (await store.read(step.id).catch(() => undefined))?.checkpoint,
    };
    const needs = step.needs.length > 0 ? ` (after ${step.needs.join(', ')})` : '';
    lines.push(`  ${i + 1}. ${step.id} [${step.kind.kind}]${needs}`);
    for (const line of await step.kind.describe(step.options, context))
      lines.push(`       ${line}`);
  }
  for (const { step, need } of reused)
    lines.push(`Reuses the output of ${need} from an earlier run (needed by ${step}).`);
  if (pipeline.report) lines.push(describeRunReport(pipeline.report, output));
  return lines;
}

/**
 * A problem of the input found only once the run has started (a selection that
 * matches nothing in the catalog just fetched): the lock, state and manifest
 * are written by then, so it is a failed run (exit 1), not bad input (exit 2,
 * which promises that nothing was written).
 */
function afterStart(error: unknown): unknown {
  return error instanceof InputError ? new RunError(error.message, { cause: error }) : error;
}

/** Read through a call, so that the compiler does not narrow it from an earlier check. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

export interface RunOptions {
  /** Absolute output folder. */
  output: string;
  select?: readonly string[] | undefined;
  /** Steps to start over (their checkpoints and data forgotten first). */
  reset?: readonly string[] | undefined;
  logger: Logger;
  progress: Progress;
  signal?: AbortSignal | undefined;
}

export interface RunSummary {
  /**
   * How the run ended; `refused`: it did not start (bad input, a held lock),
   * nothing was written; `planned`: --dry-run, the plan printed, nothing run.
   */
  status: PipelineRun['status'] | 'refused' | 'planned';
  /** The pipeline's name; null when the definition could not be read. */
  pipeline: string | null;
  output: string;
  /** manifest.json, when the run wrote it. */
  manifest?: string;
  /** The report page (report/index.html), when the definition asks for one. */
  report?: string;
  duration_ms: number;
  /** CPU time (user + system) of the road-etl process so far, its threads' and DuckDB's included. */
  cpu_ms: number;
  steps: { id: string; status: string; rows_out: number }[];
  rows_out: number;
  exports: number;
  error?: string;
  /** The process's exit code: 0 success, 1 the run failed, 2 bad input. */
  exit_code: number;
}

/** CPU time (user + system) of this process since it started, in ms. */
function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000);
}

/** The exit code an error ends the process with (a bug or an unknown error: 1). */
function exitCodeOf(error: unknown): number {
  return error instanceof RoadEtlError ? error.exitCode : EXIT_FAILED;
}

/** The summary of a --dry-run: the steps that would run, nothing written. */
export function plannedSummary(
  pipeline: Pipeline,
  output: string,
  select: readonly string[] | undefined,
): RunSummary {
  return {
    status: 'planned',
    pipeline: pipeline.name,
    output,
    duration_ms: 0,
    cpu_ms: processCpuMs(),
    steps: selectSteps(pipeline, select).selected.map((s) => ({
      id: s.id,
      status: 'planned',
      rows_out: 0,
    })),
    rows_out: 0,
    exports: 0,
    exit_code: 0,
  };
}

/** The summary of a run that was refused before it started: nothing was written. */
export function refusedSummary(
  error: unknown,
  context: { pipeline: string | null; output: string },
): RunSummary {
  const message = error instanceof Error ? error.message : String(error);
  return {
    status: 'refused',
    pipeline: context.pipeline,
    output: context.output,
    duration_ms: 0,
    cpu_ms: processCpuMs(),
    steps: [],
    rows_out: 0,
    exports: 0,
    error: redactor.text(message),
    exit_code: exitCodeOf(error),
  };
}

export interface RunResult {
  summary: RunSummary;
  /** Why the run failed (the manifest was written all the same); undefined when it succeeded. */
  failure: Error | undefined;
}

/** The run's upstream: the definition's, or the embedded simulator started for the run. */
async function startUpstream(
  pipeline: Pipeline,
  logger: Logger,
): Promise<{ upstream: Upstream; simulator: { close(): Promise<void> } | undefined }> {
  if (!pipeline.simulator) return { upstream: pipeline.upstream, simulator: undefined };
  const { Simulator, SCALES } = await import('../simulator/index.js');
  const options = pipeline.simulator;
  const started = await Simulator.start(SCALES[options.scale], {
    seed: options.seed,
    now: options.now,
    signs: { signs: options.signs },
    bicycle: { locations: options.locations },
    // A password of its own: every secret is masked in what road-etl writes, and the
    // simulator's default ("demo") would mask that word wherever it appears.
    auth: { password: randomBytes(12).toString('base64url') },
  });
  const env = started.env;
  logger.log('info', 'simulator.started', `Embedded simulator at ${started.url}`, {
    url: started.url,
  });
  return {
    simulator: started,
    upstream: {
      signs: { url: env.ROAD_ETL_SIGNS_URL, v5Url: env.ROAD_ETL_SIGNS_V5_URL },
      bicycle: {
        url: env.ROAD_ETL_BICYCLE_URL,
        authUrl: env.ROAD_ETL_AUTH_URL,
        username: env.ROAD_ETL_USERNAME,
        password: env.ROAD_ETL_PASSWORD,
        clientId: env.ROAD_ETL_CLIENT_ID,
      },
    },
  };
}

/** The run's DuckDB over the output folder, within the definition's budget, spilling under .state/. */
async function openRunFolder(
  pipeline: Pipeline,
  output: string,
  logger: Logger,
): Promise<OutputFolder> {
  const tempDirectory = join(output, STATE_FOLDER, 'duckdb-tmp');
  await makeFolder(tempDirectory);
  // Every dataset road-etl knows is a view, empty until extracted, so SQL can name it.
  const placeholders: PlaceholderViews = Object.fromEntries(
    [...STEP_KINDS.values()].flatMap((k) => Object.entries(k.views ?? {})),
  );
  const folder = await openOutputFolder(output, {
    database: {
      budget:
        pipeline.duckdb.memory_limit === undefined
          ? undefined
          : parseSize(pipeline.duckdb.memory_limit),
      threads: pipeline.duckdb.threads,
      tempDirectory,
    },
    derived: DATASET_VIEWS,
    placeholders,
    views: false,
  });
  const { budget, memoryLimit, threads, wanted } = folder.db.memory;
  logger.log(
    'info',
    'duckdb.memory',
    `Memory budget ${formatSize(budget)}: DuckDB ${formatSize(memoryLimit)}, ${threads} thread${threads === 1 ? '' : 's'}` +
      (threads < wanted ? ` (of ${wanted}: the budget feeds no more)` : ''),
    { budget, memory_limit: memoryLimit, threads, threads_wanted: wanted },
  );
  return folder;
}

/** Runs the pipeline. Bad input found before the lock is thrown (InputError); later failures are returned. */
export async function runPipeline(pipeline: Pipeline, options: RunOptions): Promise<RunResult> {
  const { output, logger } = options;
  const signal = options.signal ?? new AbortController().signal;
  const { selected, reused } = selectSteps(pipeline, options.select);
  const store = new StateStore(output);
  const resets = new Set(options.reset ?? []);
  const unknownResets = [...resets].filter((id) => !selected.some((s) => s.id === id));
  if (unknownResets.length > 0) {
    throw new InputError(
      `--reset: ${unknownResets.join(', ')} is not among the steps that run (${selected.map((s) => s.id).join(', ')})`,
    );
  }
  for (const { step, need } of reused) {
    const record = await store.read(need);
    if (record?.status !== 'succeeded') {
      throw new InputError(
        `--select: step ${step} needs ${need}, which has not run successfully in ${output}; select it too`,
      );
    }
    logger.log('info', 'step.reused', `${step} reuses the output of ${need} from an earlier run`, {
      step,
      need,
    });
  }

  const started = new Date();
  // The upstream is started (the embedded simulator) and asked whether it serves the
  // folder's data before the run takes the folder: a refusal writes nothing.
  const { upstream, simulator } = await startUpstream(pipeline, logger);
  let release: (() => Promise<void>) | undefined;
  try {
    await checkUpstreams(selected, {
      output,
      sqlDir: pipeline.sqlDir,
      store,
      resets,
      upstream,
      log: logger,
      signal,
    });
    release = await acquireLock(output, pipeline.name).catch((error: unknown) => {
      throw explainIoError(error, `Cannot use the output folder ${output}`);
    });
  } catch (error) {
    await simulator?.close();
    throw error;
  }
  const reports: StepReport[] = selected.map((s) => ({
    id: s.id,
    kind: s.kind.kind,
    status: 'skipped',
    started_at: undefined,
    finished_at: undefined,
    duration_ms: 0,
    cpu_ms: 0,
    peak_rss_bytes: 0,
    rows_in: 0,
    rows_out: 0,
    files: [],
  }));
  const exports: ExportRecord[] = [];
  let folder: OutputFolder | undefined;
  let failure: Error | undefined;
  try {
    const leftovers = await removeTemporaryFiles(output);
    if (leftovers.length > 0) {
      logger.log(
        'info',
        'run.cleanup',
        `Removed ${leftovers.length} half-written file(s) of an interrupted run`,
        { files: leftovers.length },
      );
    }
    // The run's DuckDB over the folder, made once: by the upgrade of earlier versions'
    // datasets (before any view reads them) or by the first step that asks for it.
    const openInstance = async (): Promise<Database> => {
      folder ??= await openRunFolder(pipeline, output, logger);
      return folder.db;
    };
    await upgradeDatasets(pipeline, output, logger, openInstance);
    // The folder's datasets, looked for once a step and again after it records a file.
    let discovered: Promise<readonly Dataset[]> | undefined;
    const datasets = (): Promise<readonly Dataset[]> =>
      (discovered ??= discoverDatasets(output).catch((error: unknown) => {
        discovered = undefined;
        throw error;
      }));
    const openDatabase = async (): Promise<Database> => {
      const db = await openInstance();
      await folder!.refresh(await datasets());
      return db;
    };

    for (const [i, step] of selected.entries()) {
      const report = reports[i]!;
      if (signal.aborted) break;
      discovered = undefined;
      const t0 = performance.now();
      const meter = new StepMeter();
      report.started_at = new Date().toISOString();
      logger.log('info', 'step.start', `${step.id} [${step.kind.kind}] started`, {
        step: step.id,
        kind: step.kind.kind,
      });
      const files: FileRecord[] = [];
      // A step started over does not read its state: it may be the damaged thing being fixed.
      let record = resets.has(step.id) ? undefined : await store.read(step.id);
      let state = store.step(step.id, record);
      const context: StepContext = {
        stepId: step.id,
        output,
        sqlDir: pipeline.sqlDir,
        checkpoint: record?.checkpoint,
        state,
        scratch: scratchFolder(output),
        staging: stagingFolder(output, step.id),
        upstream,
        log: logger,
        progress: options.progress,
        signal,
        datasets,
        database: openDatabase,
        recordFile: async (path) => {
          discovered = undefined;
          const file = await describeFile(path, output);
          files.push(file);
          return file;
        },
      };
      try {
        if (resets.has(step.id)) {
          await step.kind.reset?.(step.options, context);
          discovered = undefined;
          await store.remove(step.id);
          record = undefined;
          context.checkpoint = undefined;
          state = store.step(step.id, undefined);
          context.state = state;
          logger.log('info', 'step.reset', `${step.id}: started over (--reset)`, { step: step.id });
        }
        options.progress.start(step.id);
        const outcome = await step.kind.run(step.options, context);
        options.progress.finish();
        await identifyUpstream(step, context, state, logger);
        await state.finish('succeeded');
        Object.assign(report, {
          status: 'succeeded',
          rows_in: outcome.rowsIn,
          rows_out: outcome.rowsOut,
          ...(outcome.notes ? { notes: outcome.notes } : {}),
        });
        const writtenAt = new Date().toISOString();
        exports.push(
          ...(outcome.exports ?? []).map((e) => ({
            ...e,
            pipeline: pipeline.name,
            step: step.id,
            written_at: writtenAt,
          })),
        );
      } catch (error) {
        options.progress.finish();
        const interrupted = aborted(signal);
        report.status = interrupted ? 'interrupted' : 'failed';
        failure = interrupted
          ? new InterruptedError(String(signal.reason ?? 'a signal'))
          : (explainOutOfMemory(error, `step ${step.id}`, folder?.db.memory) ??
            explainIoError(afterStart(error), `step ${step.id}`));
        report.error = failure.message;
        // A file the step was writing when it failed is no use and may hold the space a rerun
        // needs (a full disk): it goes now, not at the start of the next run.
        await removeTemporaryFiles(output).catch(() => undefined);
        await state.finish('failed').catch(() => undefined);
      } finally {
        // What the step's statements freed goes back to the system before the next step.
        await folder?.db.releaseMemory().catch(() => undefined);
        // A file the step replaced later in its run (merged into another) is not reported.
        report.files = await stillThere(files, output);
        report.finished_at = new Date().toISOString();
        report.duration_ms = Math.round(performance.now() - t0);
        Object.assign(report, meter.stop());
      }
      const level = report.status === 'succeeded' ? 'info' : 'error';
      logger.log(
        level,
        'step.end',
        `${step.id} ${report.status}: ${report.rows_out.toLocaleString('en')} rows out in ${(report.duration_ms / 1000).toFixed(1)} s`,
        {
          step: step.id,
          status: report.status,
          rows_in: report.rows_in,
          rows_out: report.rows_out,
          duration_ms: report.duration_ms,
          cpu_ms: report.cpu_ms,
          peak_rss_bytes: report.peak_rss_bytes,
        },
      );
      if (failure) break;
    }
    if (!failure && signal.aborted)
      failure = new InterruptedError(String(signal.reason ?? 'a signal'));
  } catch (error) {
    failure = explainIoError(error, 'run');
  } finally {
    folder?.close();
    await simulator?.close();
  }

  const runNow = (report: string | undefined): PipelineRun => {
    const finished = new Date();
    return {
      pipeline: pipeline.name,
      definition: pipeline.file,
      params: pipeline.params,
      road_etl_version: VERSION,
      status: !failure
        ? 'succeeded'
        : failure instanceof InterruptedError
          ? 'interrupted'
          : 'failed',
      started_at: started.toISOString(),
      finished_at: finished.toISOString(),
      duration_ms: finished.getTime() - started.getTime(),
      steps: reports,
      exports,
      ...(report ? { report } : {}),
      ...(failure ? { error: failure.message } : {}),
    };
  };
  let writer: ManifestWriter | undefined;
  try {
    writer = await ManifestWriter.open(output, exports);
  } catch (error) {
    failure ??= explainIoError(error, 'writing manifest.json');
  }
  let report: string | undefined;
  if (writer && pipeline.report && !(failure instanceof InterruptedError)) {
    try {
      const manifest = writer.manifest(runNow(REPORT_PATH), REPORT_PATH);
      report = await writeRunReport(pipeline, pipeline.report, output, manifest, logger);
    } catch (error) {
      failure ??= error as Error;
    }
  }
  const run = runNow(report ? REPORT_PATH : undefined);
  let manifestPath: string | undefined;
  try {
    if (writer) manifestPath = (await writer.write(run)).path;
  } catch (error) {
    failure ??= explainIoError(error, 'writing manifest.json');
  }
  const status = failure && run.status === 'succeeded' ? 'failed' : run.status;
  await release();
  const summary: RunSummary = {
    status,
    pipeline: pipeline.name,
    output,
    ...(manifestPath ? { manifest: manifestPath } : {}),
    ...(report ? { report } : {}),
    duration_ms: run.duration_ms,
    cpu_ms: processCpuMs(),
    steps: reports.map((r) => ({ id: r.id, status: r.status, rows_out: r.rows_out })),
    rows_out: reports.reduce((sum, r) => sum + r.rows_out, 0),
    exports: exports.length,
    ...(failure ? { error: redactor.text(failure.message) } : {}),
    exit_code: failure ? exitCodeOf(failure) : 0,
  };
  return { summary, failure };
}

/**
 * Brings the datasets an earlier version wrote to today's layout, for every
 * kind of the definition (selected or not: a later step may read them), before
 * any view is made over them.
 */
async function upgradeDatasets(
  pipeline: Pipeline,
  output: string,
  logger: Logger,
  open: () => Promise<Database>,
): Promise<void> {
  const kinds = [...new Set(pipeline.steps.map((s) => s.kind))].filter(
    (k) => k.upgrade !== undefined,
  );
  if (kinds.length === 0) return;
  // The run's own DuckDB, before it has any view: the files change under it here.
  const db = await open();
  for (const kind of kinds)
    await kind.upgrade?.({ output, scratch: scratchFolder(output), db, log: logger });
}

/** Records what identifies the upstream's data a step has just read (for the next run's check). */
async function identifyUpstream(
  step: PipelineStep,
  context: StepContext,
  state: StepState,
  logger: Logger,
): Promise<void> {
  const hooks = step.kind.upstreamIdentity;
  if (!hooks) return;
  try {
    state.identify(await hooks.identify(step.options, context));
  } catch (error) {
    // The data has landed; the next run checks against what was known before.
    logger.log(
      'warn',
      'upstream.unidentified',
      `${step.id}: could not record what identifies its upstream's data (${(error as Error).message.split('\n')[0]!})`,
      { step: step.id },
    );
  }
}

/** What a dataset's view is made of: its folder and the types of its partitions. */
async function stillThere(files: readonly FileRecord[], output: string): Promise<FileRecord[]> {
  const kept: FileRecord[] = [];
  for (const file of files) if (await exists(join(output, file.path))) kept.push(file);
  return kept;
}
