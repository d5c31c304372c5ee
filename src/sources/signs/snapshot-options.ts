/** The options of a `signs.snapshot` step: the v1 current-state download (4.6) and its filters. */
import { z } from 'zod';
import { rateOptions } from '../../http/options.js';
import { TOWN_CODE, TOWN_CODE_HELP } from './client.js';

export const signsSnapshotOptions = z.strictObject({
  format: z
    .enum(['json', 'csv'])
    .default('json')
    .describe('Download as JSON (default) or CSV; both gzip-compressed on the wire'),
  town_code: z.string().regex(TOWN_CODE, TOWN_CODE_HELP).optional().describe('Only this town code'),
  rvv_code: z.string().min(1).optional().describe('Only signs with this RVV code'),
  road_section_ids: z
    .array(z.number().int().nonnegative())
    .optional()
    .describe('Only these road sections (wvk_id)'),
  refresh: z
    .enum(['if-modified', 'always'])
    .default('if-modified')
    .describe('Download only when the service has a newer snapshot (default), or always'),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .default(120_000)
    .describe('Longest silence during the download. Default 120000.'),
  retries: z.number().int().min(0).default(3).describe('Retries of the whole download. Default 3.'),
  backoff_ms: z.number().int().min(0).default(500).describe('First retry backoff. Default 500.'),
  ...rateOptions(),
});

export type SignsSnapshotOptions = z.output<typeof signsSnapshotOptions>;

/** The options that shape the answer: only the same request may skip the download. */
export function snapshotRequestKey(options: SignsSnapshotOptions): unknown[] {
  return [options.format, options.town_code, options.rvv_code, options.road_section_ids];
}
