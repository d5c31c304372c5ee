/**
 * Runs the selected steps of a run one after the other: each with its context
 * (its checkpoint, its staging folder, the upstream, the run's DuckDB over the
 * output folder, made once and its views kept up to date), measured, logged
 * and reported for the manifest.
 */
import { rm } from 'node:fs/promises';
import type { Database } from '../duckdb/database.js';
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import type { OutputFolder } from '../duckdb/folder.js';
import { formatSize, threadsFor } from '../duckdb/memory.js';
import { PartitionIndex } from '../duckdb/partitions.js';
import type { FolderFiles } from '../duckdb/folder-files.js';
import { InterruptedError } from '../errors.js';
import { scratchFolder, stagingFolder } from '../layout.js';
import type { Logger } from '../log.js';
import type { ExportRecord, StepReport } from '../manifest.js';
import { logEnd } from './step-report.js';
import type { Progress } from '../progress.js';
import type {
  AheadWork,
  PartitionSet,
  StepContext,
  StepOutcome,
  Upstream,
} from '../steps/step-kind.js';
import { describeFile, filesThere, removeTemporaryFiles, type FileRecord } from '../util/fs.js';
import type { Pipeline, PipelineStep } from './build.js';
import { HttpClients } from '../http/options.js';
import { bringReads } from './fetch-reads.js';
import { addPending, planStep } from './plan.js';
import { stepFailure } from './step-failure.js';
import { identifyUpstream } from './upstream-check.js';
import { StepMeter } from './resources.js';
import { openRunFolder } from './run-folder.js';
import type { StateStore, StepState } from './state.js';

/** What every step of a run shares. */
export interface RunScope {
  pipeline: Pipeline;
  output: string;
  upstream: Upstream;
  store: StateStore;
  /** Steps to start over (--reset). */
  resets: ReadonlySet<string>;
  /** Steps whose upstream the user accepted as their data's (--accept-upstream). */
  accepted: ReadonlySet<string>;
  logger: Logger;
  progress: Progress;
  signal: AbortSignal;
  /** Work fetched ahead for steps (stage-ahead.ts), by step id. */
  ahead?: ReadonlyMap<string, AheadWork> | undefined;
  /** The output folder as the user named it (a store's URL), for the commands road-etl prints. */
  shown?: string | undefined;
  /** Where the folder is listed (default: the disk). */
  files?: FolderFiles | undefined;
  /** The data files removed before the steps (--repair), relative. */
  repaired?: readonly string[] | undefined;
}

export class StepRunner {
  readonly #scope: RunScope;
  #folder: OutputFolder | undefined;
  /** The folder's datasets, looked for once a step and again after it records a file. */
  #discovered: Promise<readonly Dataset[]> | undefined;
  /** The extracts the steps wrote, for the manifest. */
  readonly exports: ExportRecord[] = [];
  /** The datasets' partitions as the steps found them, kept while sql steps write what they record. */
  readonly #partitions: PartitionIndex;
  /** What the steps run so far built, by dataset: a later step counts it as changed (plan.ts). */
  readonly #pending = new Map<string, readonly string[] | 'all'>();
  /** DuckDB's threads as a step last set them (undefined: as configured, never set). */
  #threads: number | undefined;
  /** The bytes the step in progress has read (context.bring). */
  #bytesRead = 0;

  constructor(scope: RunScope) {
    this.#scope = scope;
    this.#partitions = new PartitionIndex(scope.files);
  }

  /** The run's DuckDB, made once: by the upgrade of old datasets or by the first step that asks. */
  async #instance(): Promise<Database> {
    const { pipeline, output, logger } = this.#scope;
    this.#folder ??= await openRunFolder(pipeline, output, logger, this.#partitions.folderFiles);
    return this.#folder.db;
  }

  #datasets(): Promise<readonly Dataset[]> {
    return (this.#discovered ??= discoverDatasets(
      this.#scope.output,
      this.#partitions.folderFiles,
    ).catch((error: unknown) => {
      this.#discovered = undefined;
      throw error;
    }));
  }

  async #database(): Promise<Database> {
    const db = await this.#instance();
    await this.#folder!.refresh(await this.#datasets());
    return db;
  }

  /** Runs one step, filling its report; resolves to why it failed (undefined: it succeeded). */
  async run(step: PipelineStep, report: StepReport): Promise<Error | undefined> {
    const { logger, progress, output, store } = this.#scope;
    this.#discovered = undefined;
    const t0 = performance.now();
    const meter = new StepMeter();
    report.started_at = new Date().toISOString();
    logger.log('info', 'step.start', `${step.id} [${step.kind.kind}] started`, {
      step: step.id,
      kind: step.kind.kind,
    });
    const files: FileRecord[] = [];
    // A step started over does not read its state: it may be the damaged thing being fixed.
    const reset = this.#scope.resets.has(step.id);
    const record = reset ? undefined : await store.read(step.id);
    let state = store.step(step.id, record);
    const clients = new HttpClients(logger);
    const context = this.#context(step, state, record?.checkpoint, { files, clients });
    let failure: Error | undefined;
    try {
      if (reset) state = await this.#reset(step, context);
      const outcome = await this.#planAndRun(step, context);
      await identifyUpstream(step, context, state, logger, this.#scope.accepted.has(step.id));
      await state.finish('succeeded');
      this.#succeeded(step, outcome, report);
      if (outcome.decision) addPending(this.#pending, outcome.decision.builds);
    } catch (error) {
      progress.finish();
      failure = stepFailure(error, step.id, {
        ...this.#scope,
        memory: this.#folder?.db.memory,
      });
      report.status = failure instanceof InterruptedError ? 'interrupted' : 'failed';
      report.error = failure.message;
      // What the step was writing or had fetched but not landed is no use and may hold the
      // space the commit of what did land needs (a full disk): it goes now.
      await removeTemporaryFiles(output).catch(() => undefined);
      await rm(stagingFolder(output, step.id), { recursive: true, force: true }).catch(
        () => undefined,
      );
      await state.finish('failed').catch(() => undefined);
    } finally {
      // A sql step says each file it writes (recordFile); another kind, or a step that
      // failed half-way, may have left others: the partitions are read again.
      if (failure !== undefined || step.kind.kind !== 'sql') this.#partitions.clear();
      await clients.close().catch(() => undefined);
      // What the step's statements freed goes back to the system before the next step
      // (once the run has grown enough to be worth it: Database.releaseMemory).
      await this.#folder?.db.releaseMemory().catch(() => undefined);
      // The files still there at its end (one it merged into another later is not).
      report.files = await filesThere(files, output);
      report.finished_at = new Date().toISOString();
      report.duration_ms = Math.round(performance.now() - t0);
      Object.assign(report, meter.stop());
    }
    logEnd(logger, step, report);
    return failure;
  }

  /**
   * Plans the step (as validate plans it: the folder as the steps before left
   * it), decides what it does to the folder, fetches what that decision reads,
   * and runs the step on that decision: the step decides nothing again.
   */
  async #planAndRun(step: PipelineStep, context: StepContext): Promise<StepOutcome> {
    const { logger, progress } = this.#scope;
    const planned = await planStep(step, context);
    logger.log('debug', 'step.plan', `${step.id}: ${planned.description.join('; ')}`, {
      step: step.id,
    });
    this.#bytesRead = 0;
    // A kind whose threads follow its reads has them set when they are fetched; the others
    // run on the configured ones.
    if (!step.kind.threadsByReads && this.#folder)
      await this.#setThreads(this.#folder.db.memory.threads);
    const decision = await step.kind.decide(step.options, context, planned.plan);
    await context.bring(decision.reads);
    progress.start(step.id);
    try {
      const outcome = await step.kind.run(step.options, context, planned.plan, decision);
      // (a download answered "not modified" says so: it kept what it had)
      return { ...outcome, decision: outcome.decision ?? decision };
    } finally {
      progress.finish();
    }
  }

  /**
   * context.bring: the partitions read brought here, those fetched learnt
   * anew; a kind whose threads follow its reads goes on with as many DuckDB
   * threads as what it reads can keep busy (threadsFor).
   */
  async #bring(step: PipelineStep, reads: readonly PartitionSet[]): Promise<void> {
    const { logger } = this.#scope;
    const { fetched, bytes } = await bringReads(this.#partitions, await this.#datasets(), {
      stepId: step.id,
      reads,
      logger,
    });
    // What was known of the files fetched (from the commit until now) is learnt anew from the disk.
    for (const file of fetched) this.#partitions.forget(file);
    if (!step.kind.threadsByReads) return;
    this.#bytesRead += bytes;
    const db = await this.#instance();
    const threads = threadsFor(this.#bytesRead, db.memory.threads);
    await this.#setThreads(threads);
    logger.log(
      'debug',
      'duckdb.threads',
      `${step.id}: reads ${formatSize(this.#bytesRead)}, on ${threads} DuckDB thread(s)`,
      { step: step.id, bytes_read: this.#bytesRead, threads },
    );
  }

  /** Sets DuckDB's threads, where they are not so already. */
  async #setThreads(threads: number): Promise<void> {
    const db = await this.#instance();
    if (threads === (this.#threads ?? db.memory.threads)) return;
    await db.run(`SET threads = ${threads}`);
    this.#threads = threads;
  }

  #context(
    step: PipelineStep,
    state: StepState,
    checkpoint: Record<string, unknown> | undefined,
    { files, clients }: { files: FileRecord[]; clients: HttpClients },
  ): StepContext {
    const { pipeline, output, upstream, logger, progress, signal } = this.#scope;
    return {
      stepId: step.id,
      output,
      sqlDir: pipeline.sqlDir,
      checkpoint,
      state,
      scratch: scratchFolder(output),
      staging: stagingFolder(output, step.id),
      upstream,
      log: logger,
      progress,
      signal,
      datasets: () => this.#datasets(),
      database: () => this.#database(),
      partitions: this.#partitions,
      pending: new Map(this.#pending),
      repaired: this.#scope.repaired ?? [],
      recordFile: async (path, sha256) => {
        this.#discovered = undefined;
        this.#partitions.forget(path);
        const file = await describeFile(path, output, sha256);
        this.#partitions.folderFiles.record(path, { bytes: file.bytes, sha256: file.sha256 });
        files.push(file);
        return file;
      },
      http: clients.make,
      bring: (reads) => this.#bring(step, reads),
      ahead: this.#scope.ahead?.get(step.id),
    };
  }

  /** --reset: the kind forgets its data, the store the step's state; resolves to the new state. */
  async #reset(step: PipelineStep, context: StepContext): Promise<StepState> {
    const { store, logger } = this.#scope;
    await step.kind.reset?.(step.options, context);
    this.#discovered = undefined;
    this.#partitions.clear();
    await store.remove(step.id);
    const state = store.step(step.id, undefined);
    context.checkpoint = undefined;
    context.state = state;
    logger.log('info', 'step.reset', `${step.id}: started over (--reset)`, { step: step.id });
    return state;
  }

  #succeeded(step: PipelineStep, outcome: StepOutcome, report: StepReport): void {
    Object.assign(report, {
      status: 'succeeded',
      rows_in: outcome.rowsIn,
      rows_out: outcome.rowsOut,
      ...(outcome.notes ? { notes: outcome.notes } : {}),
      ...(outcome.decision ? { plan: outcome.decision } : {}),
    });
    const writtenAt = new Date().toISOString();
    for (const e of outcome.exports ?? [])
      this.exports.push({
        ...e,
        pipeline: this.#scope.pipeline.name,
        step: step.id,
        written_at: writtenAt,
      });
  }

  close(): void {
    this.#folder?.close();
  }
}
