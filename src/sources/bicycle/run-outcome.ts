/** What a `bicycle.measurements` run did, as its step's outcome and the manifest's notes. */
import type { RunOutcome } from '../context.js';
import type { MeasurementsCheckpoint } from './checkpoint.js';

export interface RunTally {
  stats: { boundary: number; refusals: number; rowsIn: number; requests: number };
  commits: { files: readonly string[]; removed: number; changed: readonly string[] } | undefined;
  current: MeasurementsCheckpoint;
}

/** The step's outcome, with what the manifest notes of the run. */
export function runOutcome(
  { stats, commits, current }: RunTally,
  locations: number,
  httpRequests: number,
  quarantined: number,
): RunOutcome {
  const batches = current.run!.batches;
  return {
    rowsIn: stats.rowsIn,
    rowsOut: batches.reduce((sum, b) => sum + b.rows, 0),
    notes: {
      locations,
      batches: batches.length,
      requests: stats.requests,
      http_requests: httpRequests,
      refusals: stats.refusals,
      quarantined,
      partitions_written: commits?.files.length ?? 0,
      partitions_removed: commits?.removed ?? 0,
      dates_rewritten: [...(commits?.changed ?? [])].sort(),
      rows_at_period_end_left_to_next_window: stats.boundary,
      learned_limits: {
        locations_per_request: current.limits.locations,
        hours_per_request: current.limits.period_hours,
      },
    },
  };
}
