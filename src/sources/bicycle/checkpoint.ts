/**
 * What a measurement step keeps between runs: the limits learned from the
 * service's refusals, and the batches an unfinished run has staged.
 */
import { z } from 'zod';
import type { Batch } from './batches.js';
import { emptyLimits } from './sizing.js';

const limit = z.object({ max_ok: z.number().nullable(), min_fail: z.number().nullable() });

export const measurementsCheckpoint = z.object({
  version: z.literal(1),
  limits: z.object({ locations: limit, period_hours: limit }),
  run: z
    .object({
      key: z.string(),
      start: z.string(),
      end: z.string(),
      batches: z.array(
        z.object({
          from: z.number(),
          to: z.number(),
          ids: z.array(z.string()),
          file: z.string(),
          rows: z.number(),
          quarantined: z.number(),
        }),
      ),
    })
    .nullable(),
});

export type MeasurementsCheckpoint = z.output<typeof measurementsCheckpoint>;

/** A staged batch as the checkpoint lists it. */
export interface StagedRecord extends Batch {
  file: string;
  rows: number;
  quarantined: number;
}

/** The checkpoint of a step that has none yet. */
export function emptyMeasurementsCheckpoint(): MeasurementsCheckpoint {
  return { version: 1, limits: emptyLimits(), run: null };
}
