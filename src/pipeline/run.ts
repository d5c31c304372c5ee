/**
 * Carries out a checked pipeline on the run's copy of the folder (the store's
 * lock held: pipeline/session.ts), in four stages: prepare (the steps selected,
 * checked against what earlier runs left), take the folder (start the upstream
 * and ask whether it serves the folder's data), run the steps
 * (step-runner.ts), and finish (manifest.json and the report, written also
 * when a step failed, and the summary).
 */
import { InputError, InterruptedError, explainIoError } from '../errors.js';
import { redactor, type Logger } from '../log.js';
import type { StepReport } from '../manifest.js';
import type { Progress } from '../progress.js';
import { REPORT_PATH } from '../report/index.js';
import type { AheadWork } from '../steps/step-kind.js';
import type { Pipeline, PipelineStep } from './build.js';
import { describeFolder } from './folder-description.js';
import { publicationWarnings } from './dataset-description.js';
import { removeRepaired, repairPath } from './repair.js';
import { writeFolderFormat } from '../store/folder-format.js';
import { ManifestWriter, pipelineRun, type PipelineRun, type RunRecord } from './manifest.js';
import { selectSteps } from './plan.js';
import { writeRunReport } from './run-report.js';
import { StateStore } from './state.js';
import { bringDatasets } from './fetch-reads.js';
import { StepRunner } from './step-runner.js';
import { pendingReport } from './step-report.js';
import { exitCodeOf, processCpuMs, stepCounts, type RunSummary } from './summary.js';
import { checkUpstreams } from './upstream-check.js';
import { startUpstream } from './upstream-start.js';
import { recordWritten, type FolderFiles } from '../duckdb/folder-files.js';
import { PartitionIndex } from '../duckdb/partitions.js';

export interface RunOptions {
  /** Absolute output folder. */
  output: string;
  select?: readonly string[] | undefined;
  /** Steps to start over (their checkpoints and data forgotten first). */
  reset?: readonly string[] | undefined;
  /** Steps whose upstream the user says is the one their data came from: not asked, their data kept. */
  acceptUpstream?: readonly string[] | undefined;
  logger: Logger;
  progress: Progress;
  signal?: AbortSignal | undefined;
  /** Work fetched ahead while the run waited for the folder (stage-ahead.ts), by step id. */
  ahead?: ReadonlyMap<string, AheadWork> | undefined;
  /** Data files to remove before the steps run (--repair), relative; checked as bad input first. */
  repair?: readonly string[] | undefined;
  /** The output folder as the user named it (a store's URL), for the commands road-etl prints. */
  shown?: string | undefined;
  /** The folder's listing (the run's copy of its commit), which fetches what a step reads. */
  files: FolderFiles;
  /** The id of the commit the run's put makes (the manifest names it). */
  commit: string;
}

export interface RunResult {
  summary: RunSummary;
  /** Why the run failed (the manifest was written all the same); undefined when it succeeded. */
  failure: Error | undefined;
}

/** What the run will do, checked before anything is touched. */
interface Prepared {
  selected: PipelineStep[];
  resets: Set<string>;
  accepted: Set<string>;
  store: StateStore;
}

/** What the run holds once it has the folder. */
interface Taken {
  runner: StepRunner;
  simulator: { close(): Promise<void> } | undefined;
}

/** Runs the pipeline. Bad input found before the steps run is thrown (InputError); later failures are returned. */
export async function runPipeline(pipeline: Pipeline, options: RunOptions): Promise<RunResult> {
  const prepared = await prepare(pipeline, options);
  const started = new Date();
  const taken = await takeFolder(pipeline, prepared, options);
  const reports = prepared.selected.map(pendingReport);
  const failure = await runSteps(prepared.selected, reports, taken, options);
  return finish(pipeline, options, {
    started,
    reports,
    exports: taken.runner.exports,
    failure,
  });
}

/**
 * The steps selected, and every step or file the options name checked against
 * the definition: bad input, found before the folder is asked anything.
 */
export function checkRunOptions(
  pipeline: Pipeline,
  options: Pick<RunOptions, 'select' | 'reset' | 'acceptUpstream' | 'repair'>,
) {
  const selection = selectSteps(pipeline, options.select);
  const { selected } = selection;
  const resets = new Set(options.reset ?? []);
  const accepted = new Set(options.acceptUpstream ?? []);
  for (const [flag, ids] of [
    ['--reset', resets],
    ['--accept-upstream', accepted],
  ] as const) {
    const unknown = [...ids].filter((id) => !selected.some((s) => s.id === id));
    if (unknown.length > 0) {
      throw new InputError(
        `${flag}: ${unknown.join(', ')} is not among the steps that run (${selected.map((s) => s.id).join(', ')})`,
      );
    }
  }
  // Each --repair names a data file of the folder: anything else is bad input.
  for (const path of options.repair ?? []) repairPath(path);
  return { ...selection, resets, accepted };
}

/** The steps selected, the resets asked for, and the earlier outputs reused (each must be there). */
async function prepare(pipeline: Pipeline, options: RunOptions): Promise<Prepared> {
  const { output, logger } = options;
  const { selected, reused, resets, accepted } = checkRunOptions(pipeline, options);
  const store = new StateStore(output);
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
  return { selected, resets, accepted, store };
}

/**
 * Starts the upstream (the embedded simulator) and asks whether it serves the
 * folder's data before the run takes the folder: a refusal writes nothing.
 */
async function takeFolder(
  pipeline: Pipeline,
  { selected, resets, accepted, store }: Prepared,
  options: RunOptions,
): Promise<Taken> {
  const { output, logger } = options;
  const signal = options.signal ?? new AbortController().signal;
  const { upstream, simulator } = await startUpstream(pipeline, logger);
  try {
    await checkUpstreams(selected, {
      output,
      sqlDir: pipeline.sqlDir,
      store,
      resets,
      accepted,
      upstream,
      log: logger,
      signal,
    });
    for (const step of selected)
      if (!resets.has(step.id))
        step.kind.checkFolder?.(step.options, {
          stepId: step.id,
          output,
          sqlDir: pipeline.sqlDir,
          checkpoint: undefined,
          partitions: new PartitionIndex(options.files),
        });
    await writeFolderFormat(output).catch((error: unknown) => {
      throw explainIoError(error, `Cannot use the output folder ${output}`);
    });
    await removeRepaired(pipeline, output, options.repair ?? [], { logger, files: options.files });
    const runner = new StepRunner({
      pipeline,
      output,
      upstream,
      store,
      resets,
      accepted,
      logger,
      progress: options.progress,
      signal,
      ahead: options.ahead,
      shown: options.shown,
      files: options.files,
      repaired: (options.repair ?? []).map(repairPath),
    });
    return { runner, simulator };
  } catch (error) {
    await simulator?.close();
    throw error;
  }
}

/** Runs the steps in order until one fails or a signal stops the run; resolves to the failure. */
async function runSteps(
  selected: readonly PipelineStep[],
  reports: StepReport[],
  { runner, simulator }: Taken,
  options: RunOptions,
): Promise<Error | undefined> {
  const signal = options.signal;
  try {
    // The run's copy of the folder was made from its last commit just now: nothing in it is half-written.
    for (const [i, step] of selected.entries()) {
      if (signal?.aborted) break;
      const failure = await runner.run(step, reports[i]!);
      if (failure) return failure;
    }
    if (signal?.aborted) return new InterruptedError(String(signal.reason ?? 'a signal'));
    return undefined;
  } catch (error) {
    return explainIoError(error, 'run');
  } finally {
    runner.close();
    await simulator?.close();
  }
}

/** Writes manifest.json (and the report), releases the folder, and sums the run up. */
async function finish(
  pipeline: Pipeline,
  options: RunOptions,
  ended: RunRecord,
): Promise<RunResult> {
  const { output, logger } = options;
  const { started, reports, exports } = ended;
  let failure = ended.failure;
  const runNow = (report: string | undefined): PipelineRun =>
    pipelineRun(pipeline, { started, reports, exports, failure }, report);
  let writer: ManifestWriter | undefined;
  try {
    writer = await ManifestWriter.open(output, exports, options.files, options.commit);
  } catch (error) {
    failure ??= explainIoError(error, 'writing manifest.json');
  }
  // A signal after the last step still ends the run as interrupted (exit 1), whatever phase it meets.
  const interrupted = (): void => {
    if (options.signal?.aborted && !(failure instanceof InterruptedError))
      failure ??= new InterruptedError(String(options.signal.reason ?? 'a signal'));
  };
  interrupted();
  let report: string | undefined;
  if (writer && pipeline.report && !(failure instanceof InterruptedError)) {
    try {
      const manifest = writer.manifest(runNow(REPORT_PATH), REPORT_PATH);
      // The report reads every dataset: a local copy of a folder in a store fetches them first.
      await bringDatasets(output, options.files, { reader: 'the report', logger });
      report = await writeRunReport(pipeline, pipeline.report, output, manifest, logger);
      if (report) await recordWritten(options.files, report);
    } catch (error) {
      failure ??= error as Error;
    }
    interrupted();
  }
  // views.sql and dataset.jsonld follow what has landed, whatever the run's end: a failed step may have landed some.
  if (!(failure instanceof InterruptedError))
    failure ??= await describeFolder(output, pipeline, writer, options.files);
  // What a data portal will miss in that description, while the operator has not named it.
  if (exports.length > 0)
    for (const warning of publicationWarnings(pipeline.publication))
      logger.log('warn', 'publication', warning);
  const run = runNow(report ? REPORT_PATH : undefined);
  let manifestPath: string | undefined;
  try {
    if (writer) manifestPath = (await writer.write(run)).path;
  } catch (error) {
    failure ??= explainIoError(error, 'writing manifest.json');
  }
  const counts = stepCounts(reports);
  const summary: RunSummary = {
    status: failure && run.status === 'succeeded' ? 'failed' : run.status,
    pipeline: pipeline.name,
    output,
    ...(manifestPath ? { manifest: manifestPath } : {}),
    ...(report ? { report } : {}),
    duration_ms: run.duration_ms,
    cpu_ms: processCpuMs(),
    steps: reports.map((r) => ({ id: r.id, status: r.status, rows_out: r.rows_out })),
    rows_out: reports.reduce((sum, r) => sum + r.rows_out, 0),
    exports: exports.length,
    ...(counts ? { counts } : {}),
    ...(failure ? { error: redactor.text(failure.message) } : {}),
    exit_code: failure ? exitCodeOf(failure) : 0,
  };
  return { summary, failure };
}
