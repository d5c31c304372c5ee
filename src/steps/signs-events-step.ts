/**
 * Step kind `signs.events`: the traffic-sign event feed into signs/events,
 * exactly once. The first run backfills the history in parallel time ranges
 * (sources/signs/ranges.ts; a reader that finishes takes half of the largest
 * range left); later runs continue from the end. Every unit of events is landed
 * atomically before the checkpoint that covers it is saved (sources/signs/
 * events-run.ts).
 */
import { rm } from 'node:fs/promises';
import { SignsClient } from '../sources/signs/client.js';
import {
  compactionPaths,
  describeEvents,
  planEvents,
  readFeed,
  removeStepFiles,
  type EventsPlan,
} from '../sources/signs/events.js';
import { signsEventsOptions, type SignsEventsOptions } from '../sources/signs/events-options.js';
import { EVENTS_VIEW_COLUMNS } from '../sources/signs/schema.js';
import { feedIdentityHooks } from './feed-identity.js';
import { defineStepKind, upstreamOf } from './step-kind.js';

export { signsEventsOptions, type SignsEventsOptions };
export type { Gap } from '../sources/signs/checkpoint.js';

export const signsEventsStep = defineStepKind<SignsEventsOptions, EventsPlan>({
  kind: 'signs.events',
  description: 'Read the traffic-sign event feed into signs/events (exactly once, resumable)',
  options: signsEventsOptions,
  source: 'signs',
  views: { signs_events: EVENTS_VIEW_COLUMNS },
  plan: planEvents,
  describe: describeEvents,
  upstreamIdentity: feedIdentityHooks(true),
  async reset(_options, context) {
    await rm(compactionPaths(context).journal, { force: true });
    await removeStepFiles(context.output, context.stepId);
  },
  async run(options, context, plan) {
    const upstream = upstreamOf(context, 'signs', 'signs.events');
    const http = context.http(options);
    const client = new SignsClient(http, upstream.url);
    // One DuckDB thread per statement: units land on connections of their own, beside the readers.
    const db = await context.database();
    return db.withThreads(1, () => readFeed(options, context, { db, client, http, plan }));
  },
});
