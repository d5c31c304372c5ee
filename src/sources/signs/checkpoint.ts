/** What the event step keeps between runs: its ranges' cursors, the towns seen, the gaps passed. */
import { z } from 'zod';

export const eventsCheckpoint = z.object({
  version: z.literal(1),
  town_code: z.string().nullable(),
  ranges: z.array(
    z.object({
      start: z.string(),
      end: z.string().nullable(),
      cursor: z.object({ offset: z.string(), seen: z.array(z.string()) }),
    }),
  ),
  towns: z.array(z.string()),
  gaps: z.array(
    z.object({ instant: z.string(), town_code: z.string().nullable(), reason: z.string() }),
  ),
  events: z.number(),
  quarantined: z.number(),
});

export type EventsCheckpoint = z.output<typeof eventsCheckpoint>;

export type Gap = EventsCheckpoint['gaps'][number];
