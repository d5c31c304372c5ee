/** A step's report: before it runs, and the log line that ends it. */
import type { Logger } from '../log.js';
import type { StepReport } from '../manifest.js';
import type { PipelineStep } from './build.js';

/** A report of a step that has not run (yet). */
export function pendingReport(step: PipelineStep): StepReport {
  return {
    id: step.id,
    kind: step.kind.kind,
    status: 'skipped',
    started_at: undefined,
    finished_at: undefined,
    duration_ms: 0,
    cpu_ms: 0,
    peak_rss_bytes: 0,
    rows_in: 0,
    rows_out: 0,
    files: [],
  };
}

export function logEnd(logger: Logger, step: PipelineStep, report: StepReport): void {
  logger.log(
    report.status === 'succeeded' ? 'info' : 'error',
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
}
