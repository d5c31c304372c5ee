/**
 * A `signs.events` step's work: its plan (the checkpoint's ranges with their
 * committed cursors, or a first run), where a run starts (an interrupted run's
 * unrecorded files removed first), the feed read (events-run.ts) and the small
 * files merged after.
 */
import { rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { Database } from '../../duckdb/database.js';
import { RunError } from '../../errors.js';
import { readCheckpoint, type PlanContext, type RunContext, type RunOutcome } from '../context.js';
import { eventsCheckpoint, type EventsCheckpoint } from './checkpoint.js';
import type { SignsClient } from './client.js';
import { compactEvents, type CompactionPaths } from './compaction.js';
import type { SignsEventsOptions } from './events-options.js';
import { EventsRun } from './events-run.js';
import { auditPages, FeedAudit } from './audit.js';
import { offsetMs } from './feed.js';
import {
  EVENTS_DATASET,
  EVENTS_PARTITION,
  eventFolders,
  parseUnitFile,
  removeUncommitted,
} from './landing.js';
import { planRanges, position, rangeStart, type RangeState } from './ranges.js';
import { folderFilesOf, namesIn, type FolderFiles } from '../../duckdb/folder-files.js';

/**
 * What a run of the feed starts from: the ranges of the checkpoint with their
 * committed cursors, or, the first time, the ranges planned at run time from
 * the feed's first event.
 */
export interface EventsPlan {
  limit: number;
  town_code: string | null;
  first_run: { start: string; readers: number } | null;
  ranges: RangeState[] | null;
  events_landed: number | null;
  /** The share of the night's requests that reads random earlier windows again (not on a first run). */
  audit_share: number;
  /** The publication months whose files --repair removes: read from the feed again. */
  repaired_months: string[];
}

/** The publication months (YYYY-MM-01) of the step's event files that --repair removes. */
function repairedMonths(context: PlanContext): string[] {
  const file = new RegExp(
    `^${EVENTS_DATASET.split(sep).join('/')}/${EVENTS_PARTITION}=(\\d{4}-\\d{2}-01)/([^/]+)$`,
  );
  const months = new Set<string>();
  for (const path of context.repaired ?? []) {
    const match = file.exec(path);
    if (match && parseUnitFile(context.stepId, match[2]!)) months.add(match[1]!);
  }
  return [...months].sort();
}

export function planEvents(options: SignsEventsOptions, context: PlanContext): EventsPlan {
  // A damaged checkpoint fails the plan as it fails the run (StateError, naming the repair).
  const checkpoint = readEventsCheckpoint(context);
  return {
    limit: options.limit,
    town_code: options.town_code ?? null,
    first_run: checkpoint
      ? null
      : { start: rangeStart(options.start), readers: options.concurrency },
    ranges: checkpoint ? checkpoint.ranges : null,
    events_landed: checkpoint ? checkpoint.events : null,
    audit_share: checkpoint ? options.audit_share : 0,
    repaired_months: checkpoint ? repairedMonths(context) : [],
  };
}

/** The plan in words. */
export function describeEvents(plan: EventsPlan, options: SignsEventsOptions): string[] {
  const filter = plan.town_code ? `, town-code ${plan.town_code}` : '';
  if (!plan.ranges) {
    return [
      `reads the event feed from ${options.start ?? 'its beginning'} (limit ${plan.limit}${filter})`,
      plan.first_run && plan.first_run.readers > 1
        ? `first run: backfills the history in ${plan.first_run.readers} parallel time ranges, then follows the feed`
        : 'first run: reads the history with one reader',
    ];
  }
  const lines = plan.ranges.map(
    (r) =>
      `${r.end === null ? 'continues' : 'backfill range'} from ${r.cursor.offset}${r.end ? ` to ${r.end}` : ''}`,
  );
  return [
    `reads the event feed (limit ${plan.limit}${filter}); ${(plan.events_landed ?? 0).toLocaleString('en')} events landed so far`,
    ...lines,
    ...(plan.repaired_months.length > 0
      ? [
          `reads the feed again over ${plan.repaired_months.map((m) => m.slice(0, 7)).join(', ')} and lands what the files --repair removes held, as the feed serves it`,
        ]
      : []),
    ...(plan.audit_share > 0
      ? [
          `then reads random earlier windows of what landed again, with ${Math.round(plan.audit_share * 100)}% of its requests (events published there since land)`,
        ]
      : []),
  ];
}

/** The checkpoint of an earlier run, or undefined for a first run. */
function readEventsCheckpoint(context: PlanContext): EventsCheckpoint | undefined {
  return readCheckpoint<EventsCheckpoint | undefined>(context, eventsCheckpoint, () => undefined);
}

/** Where the step merges small files. */
function compactionPaths(context: RunContext): CompactionPaths {
  return { output: context.output, files: folderFilesOf(context), scratch: context.scratch };
}

/**
 * The first run's ranges. With more than one reader the history is cut from
 * the feed's first event to now: that event is asked for first.
 */
async function firstRanges(
  client: SignsClient,
  options: SignsEventsOptions,
  signal: AbortSignal,
): Promise<RangeState[]> {
  const plan = { start: options.start, readers: options.concurrency, now: Date.now() };
  if (options.concurrency === 1) return planRanges({ ...plan, firstInstant: undefined });
  const { events: first } = await client.events({
    offset: rangeStart(options.start),
    limit: 1,
    townCode: options.town_code,
    signal,
  });
  const instant = first[0]?.['publication_timestamp'];
  return planRanges({
    ...plan,
    now: Date.now(),
    firstInstant: typeof instant === 'string' ? instant : undefined,
  });
}

/** Removes every file the step landed (--reset). */
export async function removeStepFiles(
  output: string,
  stepId: string,
  files: FolderFiles,
): Promise<void> {
  for (const folder of eventFolders(files, output))
    for (const name of namesIn(files, folder))
      if (parseUnitFile(stepId, name)) await files.remove(join(folder, name));
}

/**
 * Where this run starts: the checkpoint (what an interrupted run landed without
 * recording it removed), or, the first time, the ranges planned over the feed.
 */
async function startingCheckpoint(
  options: SignsEventsOptions,
  context: RunContext,
  { client, plan }: { client: SignsClient; plan: EventsPlan },
): Promise<EventsCheckpoint> {
  const read = readEventsCheckpoint(context);
  const checkpoint = read && { ...read, ranges: plan.ranges ?? read.ranges };
  if (checkpoint && checkpoint.town_code !== (options.town_code ?? null)) {
    throw new RunError(
      `signs.events: the checkpoint of ${context.stepId} was made with town_code ${checkpoint.town_code ?? '(none)'}, the step now has ${options.town_code ?? '(none)'}; give the step its earlier town_code, write to another --output, or start over with --reset ${context.stepId}, which first removes the events the step landed`,
    );
  }
  if (!checkpoint) {
    return {
      version: 1,
      town_code: options.town_code ?? null,
      ranges: await firstRanges(client, options, context.signal),
      towns: [],
      gaps: [],
      events: 0,
      quarantined: 0,
    };
  }
  const removed = await removeUncommitted(
    folderFilesOf(context),
    context.output,
    context.stepId,
    checkpoint.ranges.map((r) => ({
      committed: position(r.cursor),
      endMs: r.end === null ? undefined : offsetMs(r.end),
    })),
  );
  if (removed > 0)
    context.log.log(
      'info',
      'signs.cleanup',
      `Removed ${removed} file(s) of units an interrupted run had not recorded`,
      { files: removed },
    );
  return checkpoint;
}

/** Merges the small files of the event partitions, and records the merged ones. */
async function compact(
  db: Database,
  compaction: ReturnType<typeof compactionPaths>,
  context: RunContext,
): Promise<void> {
  const compacted = await compactEvents(db, compaction, context.stepId, context.signal);
  for (const file of compacted.merged) await context.recordFile(file);
  if (compacted.replaced > 0)
    context.log.log(
      'info',
      'signs.compaction',
      `Merged ${compacted.replaced.toLocaleString('en')} small files into ${compacted.merged.length.toLocaleString('en')} in ${compacted.partitions.toLocaleString('en')} partitions`,
      {
        replaced: compacted.replaced,
        merged: compacted.merged.length,
        partitions: compacted.partitions,
      },
    );
}

/** Reads the feed from the checkpoint (or plans the first run's ranges) and lands what is new. */
export async function readFeed(
  options: SignsEventsOptions,
  context: RunContext,
  {
    db,
    client,
    http,
    plan,
  }: { db: Database; client: SignsClient; http: { requests: number }; plan: EventsPlan },
): Promise<RunOutcome> {
  const compaction = compactionPaths(context);
  const checkpoint = await startingCheckpoint(options, context, { client, plan });
  // Units an interrupted run was reading or landing: read again from the checkpoint.
  await rm(context.staging, { recursive: true, force: true });
  const run = new EventsRun(options, context, client, checkpoint, db.memory.threads);
  await run.save();
  await run.run();
  // The months of the files --repair removed, read again: what they held lands again
  // (counted among the events landed when it first landed).
  const again =
    plan.repaired_months.length > 0
      ? await new FeedAudit(db, options, context, client).again(
          plan.repaired_months,
          run.checkpoint,
        )
      : 0;
  if (plan.repaired_months.length > 0)
    context.log.log(
      'info',
      'signs.repair',
      `Read the feed again over ${plan.repaired_months.map((m) => m.slice(0, 7)).join(', ')}: ${again.toLocaleString('en')} event(s) the removed file(s) held landed again`,
      { months: plan.repaired_months, events: again },
    );
  // A few random windows of the past read again: events published there since are landed
  // (not on a first run, which has just read all of it: the plan's share is 0 then).
  const audit = await new FeedAudit(db, options, context, client).run(
    auditPages(plan.audit_share, http.requests),
    run.checkpoint,
  );
  if (audit.missing > 0) {
    run.checkpoint.events += audit.missing;
    await run.save();
  }
  await rm(context.staging, { recursive: true, force: true });
  // Every unit is landed and recorded: the partitions' small files are merged.
  await compact(db, compaction, context);
  const { stats } = run;
  context.log.log(
    'info',
    'signs.events',
    `${stats.events.toLocaleString('en')} new events in ${stats.pages.toLocaleString('en')} requests; ${stats.quarantined} quarantined`,
    { ...stats, bursts: stats.bursts.length },
  );
  return {
    rowsIn: stats.events,
    rowsOut: stats.landed + audit.missing + again,
    notes: {
      requests: http.requests,
      quarantined: stats.quarantined,
      ...(stats.bursts.length > 0 ? { bursts: stats.bursts } : {}),
      ...(run.checkpoint.gaps.length > 0 ? { gaps: run.checkpoint.gaps } : {}),
      feed_position: run.checkpoint.ranges.map((r) => r.cursor.offset),
      ...(plan.repaired_months.length > 0
        ? { repaired: { months: plan.repaired_months, events: again } }
        : {}),
      ...(audit.pages > 0
        ? {
            audit: { requests: audit.pages, late_events: audit.missing, swept: audit.swept },
            counts: { late_events: audit.missing },
          }
        : {}),
    },
  };
}
