/** Options of the `signs.events` step kind. */
import { z } from 'zod';
import { TOWN_CODE, TOWN_CODE_HELP } from './client.js';
import { toOffset } from './feed.js';
import { requestOptions } from '../../http/options.js';

const timestamp = z
  .string()
  .refine(
    (t) => toOffset(t) !== undefined && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/.test(t),
    'must be a UTC timestamp like 2024-01-01T00:00:00Z',
  );

export const signsEventsOptions = z.strictObject({
  limit: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(100)
    .describe('Events per request (1..100). Default 100.'),
  town_code: z
    .string()
    .regex(TOWN_CODE, TOWN_CODE_HELP)
    .optional()
    .describe('Read only this town code (e.g. GM0363)'),
  start: timestamp
    .optional()
    .describe('Where the first run starts. Default: the beginning of the feed.'),
  concurrency: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(4)
    .describe('Parallel readers during the backfill. Default 4.'),
  unit_rows: z
    .number()
    .int()
    .min(1)
    .default(10_000)
    .describe(
      'Events landed per unit (file set, at most 31 days), up to where the next day begins. Default 10000.',
    ),
  unreachable: z
    .enum(['fail', 'record'])
    .default('fail')
    .describe(
      'An instant that even per-town reads cannot get through: fail (default), or record the gap and go on',
    ),
  audit_share: z
    .number()
    .min(0)
    .max(1)
    .default(0.03)
    .describe(
      "Share of a night's requests spent reading random earlier windows of the feed again, to land events published since in its past (0 turns it off). Default 0.03.",
    ),
  ...requestOptions(60_000),
});

export type SignsEventsOptions = z.output<typeof signsEventsOptions>;
