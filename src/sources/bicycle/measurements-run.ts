/**
 * One run of a `bicycle.measurements` step: the selection resolved against the
 * catalog, the unfinished run resumed, batches fetched and staged at the sizes
 * the service allows, each date partition rewritten once the staged batches
 * cover it, the quarantine written.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { Database } from '../../duckdb/database.js';
import { RunError, UpstreamError } from '../../errors.js';
import { CheckpointWriter, type RunContext, type RunOutcome } from '../context.js';
import { WorkPlan, type Batch } from './batches.js';
import {
  readMeasurementsCheckpoint,
  resumeRun,
  startingCheckpoint,
  type MeasurementsCheckpoint,
} from './checkpoint.js';
import { BicycleClient } from './client.js';
import { DateCommits } from './date-commits.js';
import { fetchBatch } from './fetch-batch.js';
import { FailingLocations } from './failing.js';
import { runOutcome } from './run-outcome.js';
import { BICYCLE_QUARANTINE_DATASET, writeQuarantine } from './landing.js';
import { requestsLeft, runKey } from './plan.js';
import { requestSelection, type SelectionSpec } from './selection.js';
import { Sizing, type Probes } from './sizing.js';
import { HOUR_MS, formatSecondTimestamp } from '../../util/time.js';
import { drain } from '../../util/work-queue.js';
import { sizeGuesses, type BicycleMeasurementsOptions } from './measurements-options.js';
import { folderFilesOf } from '../../duckdb/folder-files.js';

export interface RunScope {
  spec: SelectionSpec;
  ids: string[];
  from: number;
  to: number;
  /**
   * The plan's requests, made in order when the plan still holds (the same
   * staged batches); otherwise the work is cut as the run goes.
   */
  planned: { batches: Batch[]; staged: number } | undefined;
}

/** What the fetching of one run shares. */
interface Session {
  client: BicycleClient;
  db: Database;
  /** Staging runs one batch at a time on the run's connection. */
  land: ReturnType<typeof pLimit>;
  work: WorkPlan;
  sizing: Sizing;
  current: MeasurementsCheckpoint;
  /** Undefined when the batches are fetched ahead, not landed. */
  commits: DateCommits | undefined;
  /** Requests still expected, for the progress display. */
  expected: () => number;
  stats: { boundary: number; refusals: number; rowsIn: number; requests: number; ok: number };
  /** Locations whose requests keep failing: left out of the run. */
  failing: FailingLocations;
}

export class MeasurementsRun {
  readonly #options: BicycleMeasurementsOptions;
  readonly #context: RunContext;
  readonly #scope: RunScope;
  readonly #checkpoints: CheckpointWriter<MeasurementsCheckpoint>;

  constructor(options: BicycleMeasurementsOptions, context: RunContext, scope: RunScope) {
    this.#options = options;
    this.#context = context;
    this.#scope = scope;
    this.#checkpoints = new CheckpointWriter(context.state);
  }

  async fetchAndCommit(
    client: BicycleClient,
    http: { requests: number },
    db: Database,
    committer: Database,
  ): Promise<RunOutcome> {
    const options = this.#options;
    const context = this.#context;
    const { spec, ids, from, to } = this.#scope;
    const key = runKey(spec, options.server_side, ids, from, to);
    const { current, staged } = await resumeRun(
      await startingCheckpoint(readMeasurementsCheckpoint(context), context.ahead, {
        staging: context.staging,
        key,
        log: context.log,
      }),
      {
        staging: context.staging,
        key,
        start: formatSecondTimestamp(from),
        end: formatSecondTimestamp(to),
      },
      context.log,
    );
    await this.#checkpoints.save(current);
    const limits = current.limits;
    const batches = current.run!.batches;
    const guesses = sizeGuesses(options);
    const planned = this.#scope.planned;
    const work =
      planned && planned.staged === staged.length
        ? WorkPlan.of(planned.batches)
        : new WorkPlan(ids, [from, to], staged);
    const sizing = new Sizing(limits, guesses, options.server_side && spec.mode !== 'locations');
    const expected = (): number =>
      requestsLeft(work, limits, guesses, sizing.serverSide, ids.length);
    context.progress.setTotal(staged.length + expected());
    // A date is rewritten (on `committer`) as soon as the staged batches cover every
    // location of the run over its hours of that date.
    const stagedFiles = (): { file: string; from: number; to: number }[] =>
      batches.map((b) => ({ file: join(context.staging, b.file), from: b.from, to: b.to }));
    // Fetched ahead for a later run (context.ahead), nothing is landed.
    const commits =
      context.ahead?.mode === 'stage'
        ? undefined
        : await DateCommits.open(
            committer,
            { output: context.output, files: folderFilesOf(context), ids, from, to },
            stagedFiles,
            staged,
          );
    const session: Session = {
      client,
      db,
      // Batches are staged one at a time on the run's connection.
      land: pLimit(1),
      work,
      sizing,
      current,
      commits,
      expected,
      stats: { boundary: 0, refusals: 0, rowsIn: 0, requests: 0, ok: 0 },
      failing: new FailingLocations(ids.length, context.log),
    };
    let failure: unknown;
    try {
      await this.#fetchAll(session);
    } catch (error) {
      failure = error;
    }
    await this.#checkpoints.settled();
    await commits?.settle().catch((error: unknown) => (failure ??= error));
    if (failure !== undefined) throw failure as Error;
    if (!commits) return runOutcome(session, this.#scope.ids.length, http.requests, 0);
    const outcome = await this.#commit({ ...session, commits }, key, stagedFiles(), http.requests);
    session.failing.throwIfAny();
    return outcome;
  }

  /** Once every batch is staged: the dates' files recorded, the quarantine written, the run closed. */
  async #commit(
    session: Session & { commits: DateCommits },
    key: string,
    staged: readonly { file: string }[],
    httpRequests: number,
  ): Promise<RunOutcome> {
    const context = this.#context;
    const { commits, current } = session;
    const batches = current.run!.batches;
    context.signal.throwIfAborted();
    if (commits.uncovered > 0)
      throw new RunError(
        `${commits.uncovered} date(s) of the period are not covered by the staged batches`,
      );
    this.#log(
      'commit',
      `${batches.length} batch(es) staged, ${commits.files.length} date partition(s) rewritten`,
    );
    for (const file of commits.files) await context.recordFile(file);
    const quarantined = batches.reduce((sum, b) => sum + b.quarantined, 0);
    const quarantine = await writeQuarantine(
      session.db,
      { ...context, key, quarantined },
      staged.map((f) => f.file),
    );
    if (quarantine) {
      await context.recordFile(quarantine);
      context.log.log(
        'warn',
        'bicycle.quarantine',
        `${quarantined} row(s) could not be kept; see ${BICYCLE_QUARANTINE_DATASET} for each with its reason`,
        { quarantined },
      );
    }
    await this.#checkpoints.save({ version: 1, limits: current.limits, run: null });
    await rm(context.staging, { recursive: true, force: true });
    return runOutcome(session, this.#scope.ids.length, httpRequests, quarantined);
  }

  /** Fetches batches, `concurrency` at a time, at the sizes the service allows, until the work is done. */
  async #fetchAll(session: Session): Promise<void> {
    const { ids, from, to } = this.#scope;
    const { sizing, work, current, expected } = session;
    const context = this.#context;
    const totalHours = (to - from) / HOUR_MS;
    await drain({
      concurrency: this.#options.concurrency,
      signal: context.signal,
      next: (running) => {
        const sizes = sizing.next(ids.length, totalHours);
        const batch = session.failing.next(() =>
          sizes.locations === undefined || sizes.hours === undefined
            ? undefined
            : work.next(sizes.locations, sizes.hours),
        );
        if (!batch) {
          if (running === 0 && (sizes.locations === undefined || sizes.hours === undefined))
            throw new RunError('bicycle.measurements: no request size left to try');
          return undefined;
        }
        context.progress.setTotal(current.run!.batches.length + running + 1 + expected());
        return { batch, probes: sizing.sent(batch) };
      },
      run: ({ batch, probes }) => this.#fetchOne(session, batch, probes),
    });
  }

  /** One batch: fetched and staged, or refused and put back for a size the service takes. */
  async #fetchOne(session: Session, batch: Batch, probes: Probes): Promise<void> {
    const options = this.#options;
    const context = this.#context;
    const { spec, ids } = this.#scope;
    const { sizing, stats } = session;
    const sentServerSide = sizing.serverSide;
    const selection = requestSelection(spec, batch, sentServerSide);
    const answer = await fetchBatch(
      { batch, selection },
      {
        client: session.client,
        staging: context.staging,
        stage: (work) =>
          session.land(async () => {
            const result = await work(session.db);
            // What the staging freed goes back to the system before the next batch (once it adds up).
            await session.db.releaseMemory();
            return result;
          }),
        maxCount: options.max_count,
        retries: options.retries,
        backoffMs: options.backoff_ms,
        signal: context.signal,
        onRequest: () => {
          stats.requests++;
          context.progress.add({ requests: 1 });
        },
        onOk: () => sizing.onOk(batch, probes, sentServerSide),
        onFailed: () => sizing.onError(batch, probes),
        onRetry: (message, attempt) =>
          context.log.log(
            'warn',
            'http.retry',
            `${formatSecondTimestamp(batch.from)} .. ${formatSecondTimestamp(batch.to)}: ${message.slice(0, 300)}; asking again (attempt ${attempt} of ${options.retries + 1})`,
          ),
      },
    ).catch(async (error: unknown) => {
      // A batch that kept failing: asked for again in two, or its location left out (failing.ts).
      if (!(error instanceof UpstreamError) || context.signal.aborted) throw error;
      await session.failing.onFailure(batch, error, {
        succeeded: () => stats.ok,
        fetch: (half) => this.#fetchOne(session, half, sizing.sent(half)),
        requeue: (halves) => session.work.requeue(halves),
        leaveOut: (id) => session.commits?.drop(id),
      });
      return undefined;
    });
    if (answer === undefined) return;
    if (!answer.ok) {
      stats.refusals++;
      const { learned, fallback } = sizing.onRefusal(answer.message, batch, probes, sentServerSide);
      if (fallback)
        this.#log(
          'fallback',
          `The service refused the ${spec.mode} as too many locations (${answer.message}); asking for the ${ids.length} matching locations in batches instead`,
        );
      this.#log('limit', learned);
      session.work.requeue([batch]);
      return;
    }
    // A batch staged: the service answers (a 200 whose body cannot be read does not count).
    stats.ok++;
    stats.boundary += answer.staged.boundary;
    stats.rowsIn += answer.staged.rows + answer.staged.quarantined + answer.staged.boundary;
    const { rows, quarantined } = answer.staged;
    session.current.run!.batches.push({ ...batch, file: answer.file, rows, quarantined });
    await this.#checkpoints.save(session.current);
    session.commits?.add(batch);
    context.progress.add({ rows: answer.staged.rows, done: 1 });
  }

  #log(event: string, message: string): void {
    this.#context.log.log('info', `bicycle.${event}`, message);
  }
}
