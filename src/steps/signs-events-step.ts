/**
 * Step kind `signs.events`: the traffic-sign event feed into signs/events,
 * exactly once. The first run backfills the history in parallel time ranges
 * (sources/signs/ranges.ts; a reader that finishes takes half of the largest
 * range left); later runs continue from the end. Every unit of events is landed
 * atomically before the checkpoint that covers it is saved (sources/signs/
 * events-run.ts).
 */
import { SignsClient } from '../sources/signs/client.js';
import {
  describeEvents,
  planEvents,
  readFeed,
  removeStepFiles,
  type EventsPlan,
} from '../sources/signs/events.js';
import { signsEventsOptions, type SignsEventsOptions } from '../sources/signs/events-options.js';
import { EVENTS_VIEW_COLUMNS } from '../sources/signs/schema.js';
import { feedIdentityHooks } from './feed-identity.js';
import { EVENTS_DATASET } from '../sources/signs/landing.js';
import { formatIsoDate } from '../util/time.js';
import { partitionsThere } from './decisions.js';
import { defineStepKind, upstreamOf } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

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
  decide(options, context, plan) {
    const { first, months, there } = newMonths(context, plan);
    const audit = options.audit_share > 0 && there.length > 0;
    return {
      decision: 'partial',
      why: `reads the feed from its cursor: new events land in the months from ${first}${audit ? '; events an audit of its past finds land in their months' : ''}`,
      builds: [{ dataset: 'signs_events', partitions: months }],
      ...(audit
        ? {
            may_build: [
              { dataset: 'signs_events', partitions: there.filter((m) => !months.includes(m)) },
            ],
          }
        : {}),
      reads: [{ dataset: 'signs_events', partitions: months.filter((m) => there.includes(m)) }],
    };
  },
  upstreamIdentity: feedIdentityHooks(true),
  async reset(_options, context) {
    await removeStepFiles(context.output, context.stepId, folderFilesOf(context));
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

/** The months new events land in: from the last one landed (or the feed's start) to now. */
function newMonths(
  context: Parameters<typeof partitionsThere>[0],
  plan: EventsPlan,
): { first: string; months: string[]; there: string[] } {
  const there = [...partitionsThere(context, EVENTS_DATASET)].sort();
  const first = (there.at(-1) ?? plan.first_run?.start ?? formatIsoDate(Date.now())).slice(0, 7);
  const months: string[] = [];
  for (let at = Date.parse(`${first}-01T00:00:00Z`); at <= Date.now();) {
    const day = new Date(at);
    months.push(formatIsoDate(at));
    at = Date.UTC(day.getUTCFullYear(), day.getUTCMonth() + 1, 1);
  }
  return { first, months, there };
}
