/** The one-line JSON summary that ends stdout on every exit of `run`. */
import { EXIT_FAILED, InterruptedError, RoadEtlError } from '../errors.js';
import { redactor } from '../log.js';
import type { PipelineRun } from '../manifest.js';
import type { Pipeline } from './build.js';
import { selectSteps } from './plan.js';

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
  /** The figures steps count (a sql step's `counts`, e.g. faulty_location_days), summed by name. */
  counts?: Record<string, number>;
  error?: string;
  /** The process's exit code: 0 success, 1 the run failed, 2 bad input. */
  exit_code: number;
}

/** The figures the steps counted (their notes' `counts`), summed by name; undefined when none did. */
export function stepCounts(
  reports: readonly { notes?: Record<string, unknown> | undefined }[],
): Record<string, number> | undefined {
  const sums: Record<string, number> = {};
  for (const report of reports) {
    const counts = report.notes?.['counts'];
    if (typeof counts !== 'object' || counts === null) continue;
    for (const [name, value] of Object.entries(counts))
      if (typeof value === 'number') sums[name] = (sums[name] ?? 0) + value;
  }
  return Object.keys(sums).length > 0 ? sums : undefined;
}

/** CPU time (user + system) of this process since it started, in ms. */
export function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000);
}

/** The exit code an error ends the process with (a bug or an unknown error: 1). */
export function exitCodeOf(error: unknown): number {
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
    // A signal before the run took the folder (while it waited for it) still ends it interrupted.
    status: error instanceof InterruptedError ? 'interrupted' : 'refused',
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
