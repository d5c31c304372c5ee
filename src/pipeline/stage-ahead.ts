/**
 * What a run does while it waits for a folder another run holds (parallel
 * backfills): the steps whose kind stages ahead fetch their work into a folder
 * of the run's own, landing nothing; once the run has the folder, each such
 * step takes that work up when it is still the same (its period, selection and
 * locations), and fetches only what is missing. The extraction of runs over
 * disjoint periods so goes on at the same time; landing, derived tables,
 * extracts and the manifest still take turns.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stagingFolder } from '../layout.js';
import type { Logger } from '../log.js';
import { silentProgress } from '../progress.js';
import type { AheadWork } from '../steps/step-kind.js';
import type { Pipeline } from './build.js';
import { selectSteps } from './plan.js';
import { StateStore } from './state.js';
import { StepRunner } from './step-runner.js';
import { pendingReport } from './step-report.js';
import { startUpstream } from './upstream-start.js';

/** What was fetched ahead, by step id; `close` removes it. */
export interface StagedAhead {
  work: ReadonlyMap<string, AheadWork>;
  close(): Promise<void>;
}

export const NOTHING_AHEAD: StagedAhead = { work: new Map(), close: () => Promise.resolve() };

/**
 * The log of the work ahead: its lines marked (`ahead`), its info demoted to
 * debug and its errors to warnings (a step that cannot fetch ahead is fetched
 * by the run itself).
 */
function aheadLogger(logger: Logger): Logger {
  return {
    interactive: false,
    log(level, event, message, fields) {
      const demoted = level === 'info' ? 'debug' : level === 'error' ? 'warn' : level;
      logger.log(demoted, event, `(fetched ahead) ${message}`, { ...fields, ahead: true });
    },
  };
}

/**
 * Fetches ahead the work of the selected steps that stage ahead, in a folder
 * of its own, starting from what `output`'s checkpoints learned (the limits of
 * the service); a step that fails is left to the run.
 */
export async function stageAhead(
  pipeline: Pipeline,
  options: {
    output: string;
    select: readonly string[] | undefined;
    logger: Logger;
    signal: AbortSignal;
  },
): Promise<StagedAhead> {
  const { logger, signal } = options;
  const steps = selectSteps(pipeline, options.select).selected.filter((s) => s.kind.stagesAhead);
  if (steps.length === 0 || signal.aborted) return NOTHING_AHEAD;
  let folder: string | undefined;
  const close = async (): Promise<void> => {
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  };
  const work = new Map<string, AheadWork>();
  const log = aheadLogger(logger);
  const known = new StateStore(options.output);
  try {
    folder = await mkdtemp(join(tmpdir(), 'road-etl-ahead-'));
    const store = new StateStore(folder);
    const { upstream, simulator } = await startUpstream(pipeline, log);
    const runner = new StepRunner({
      pipeline,
      output: folder,
      upstream,
      store,
      resets: new Set(),
      accepted: new Set(),
      logger: log,
      progress: silentProgress,
      signal,
      ahead: new Map(steps.map((s) => [s.id, { mode: 'stage' }])),
    });
    try {
      for (const step of steps) {
        // What the folder's runs learned of the service (its limits) is where this one starts.
        const learned = await known.read(step.id).catch(() => undefined);
        if (learned)
          await store.write(step.id, {
            status: learned.status,
            finished_at: learned.finished_at,
            checkpoint: learned.checkpoint,
          });
        const report = pendingReport(step);
        const failure = await runner.run(step, report);
        if (failure) continue;
        const staged = await store.read(step.id);
        work.set(step.id, {
          mode: 'adopt',
          staging: stagingFolder(folder, step.id),
          checkpoint: staged?.checkpoint ?? {},
        });
        logger.log(
          'info',
          'ahead.staged',
          `${step.id}: ${report.rows_out.toLocaleString('en')} rows fetched while waiting for the folder, landed once the run has it`,
          { step: step.id, rows: report.rows_out, duration_ms: report.duration_ms },
        );
      }
    } finally {
      runner.close();
      await simulator?.close();
    }
  } catch (error) {
    logger.log(
      'warn',
      'ahead.failed',
      `Nothing could be fetched ahead (${(error as Error).message}); the run fetches it once it has the folder`,
    );
  }
  return { work, close };
}
