/**
 * The feed's past audited. The feed is followed from a cursor, so an event
 * published later with an instant before the cursor (an authority that joins
 * and delivers its signs' history, a correction backdated) is never read. Each
 * night therefore re-reads a few random windows of the history it has landed
 * (`audit_share` of the night's requests, rounded at random, so that over
 * many nights the share holds), and compares their events with what landed by
 * content hash. Events that never landed are landed, counted and reported;
 * once a window shows the feed grew in its past, the whole landed history is
 * read again in the same run, window by window, so that the folder ends equal
 * to the feed.
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { folderFilesOf, namesIn } from '../../duckdb/folder-files.js';
import type { RunContext } from '../context.js';
import type { EventsCheckpoint } from './checkpoint.js';
import type { SignsClient } from './client.js';
import type { SignsEventsOptions } from './events-options.js';
import { offsetMs, toOffset } from './feed.js';
import { rangeStart } from './ranges.js';
import {
  EVENTS_DATASET,
  EVENTS_PARTITION,
  landUnit,
  parseUnitFile,
  QUARANTINE_DATASET,
  StagedLines,
  unitStem,
} from './landing.js';

/** Pages a window of the sweep reads before its events are compared and landed. */
const SWEEP_PAGES = 50;

export interface AuditOutcome {
  /** Requests the audit made. */
  pages: number;
  /** Events found that had never landed (all landed now). */
  missing: number;
  /** Whether the whole landed history was read again. */
  swept: boolean;
}

/** An event of a window: where it is in its page, and its instant and place within it. */
interface WindowEvent {
  page: number;
  position: number;
  instant: string;
  index: number;
}

/** The pages a night audits: `share` of its requests, the fraction rounded up at random. */
export function auditPages(share: number, requests: number, random = Math.random): number {
  const pages = share * requests;
  return Math.floor(pages) + (random() < pages - Math.floor(pages) ? 1 : 0);
}

export class FeedAudit {
  readonly #db: Database;
  readonly #options: SignsEventsOptions;
  readonly #context: RunContext;
  readonly #client: SignsClient;
  readonly outcome: AuditOutcome = { pages: 0, missing: 0, swept: false };
  #units = 0;

  constructor(db: Database, options: SignsEventsOptions, context: RunContext, client: SignsClient) {
    this.#db = db;
    this.#options = options;
    this.#context = context;
    this.#client = client;
  }

  /**
   * Audits `pages` random windows of [the first landed month, the earliest
   * committed cursor), and sweeps that span when one of them finds events missing.
   */
  async run(pages: number, checkpoint: EventsCheckpoint): Promise<AuditOutcome> {
    const span = this.#landedSpan(checkpoint);
    if (pages === 0 || !span) return this.outcome;
    for (let n = 0; n < pages && this.outcome.missing === 0; n++) {
      const from = span.from + Math.floor(Math.random() * (span.to - span.from));
      await this.#window(from, span.to, 1);
    }
    if (this.outcome.missing === 0) return this.outcome;
    this.#context.log.log(
      'warn',
      'signs.audit',
      `The feed grew in its past: ${this.outcome.missing} event(s) published before the cursor had never landed. Reading the landed history again (${new Date(span.from).toISOString()} to ${new Date(span.to).toISOString()}) to land what else is missing`,
      { missing: this.outcome.missing },
    );
    this.outcome.swept = true;
    for (let from: number | undefined = span.from; from !== undefined;)
      from = await this.#window(from, span.to, SWEEP_PAGES);
    return this.outcome;
  }

  /**
   * Reads the feed again over each of `months` (the publication months of
   * files --repair removed), up to the earliest committed cursor, and lands
   * what the step's files no longer hold: what the removed files held, as the
   * feed still serves it. Resolves to the events landed.
   */
  async again(months: readonly string[], checkpoint: EventsCheckpoint): Promise<number> {
    const before = this.outcome.missing;
    if (checkpoint.ranges.length === 0) return 0;
    const cursor = Math.min(...checkpoint.ranges.map((r) => offsetMs(r.cursor.offset)));
    const start = offsetMs(rangeStart(this.#options.start));
    for (const month of months) {
      const first = new Date(`${month}T00:00:00Z`);
      const next = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1);
      const to = Math.min(next, cursor);
      for (
        let from: number | undefined = Math.max(first.getTime(), start);
        from !== undefined && from < to;
      )
        from = await this.#window(from, to, SWEEP_PAGES);
    }
    return this.outcome.missing - before;
  }

  /** The step's event files: by partition folder. */
  #stepFiles(): { folder: string; month: number; names: string[] }[] {
    const files = folderFilesOf(this.#context);
    const root = join(this.#context.output, EVENTS_DATASET);
    return namesIn(files, root).flatMap((partition) => {
      const month = new RegExp(`^${EVENTS_PARTITION}=(\\d{4}-\\d{2}-\\d{2})$`).exec(partition)?.[1];
      const folder = join(root, partition);
      const names = namesIn(files, folder).filter((n) => parseUnitFile(this.#context.stepId, n));
      return month && names.length > 0 ? [{ folder, month: Date.parse(month), names }] : [];
    });
  }

  /** Where the landed history lies: from its first month (or start) to the earliest committed cursor. */
  #landedSpan(checkpoint: EventsCheckpoint): { from: number; to: number } | undefined {
    const months = this.#stepFiles().map((f) => f.month);
    if (months.length === 0 || checkpoint.ranges.length === 0) return undefined;
    // Not before the step's start: a month's partition may begin before it.
    const from = Math.max(Math.min(...months), offsetMs(rangeStart(this.#options.start)));
    const to = Math.min(...checkpoint.ranges.map((r) => offsetMs(r.cursor.offset)));
    return to > from ? { from, to } : undefined;
  }

  /**
   * Reads up to `maxPages` pages from `from`, compares their events before
   * `before` with what landed, and lands those missing. Resolves to where the
   * next window starts (undefined: `before` reached).
   */
  async #window(from: number, before: number, maxPages: number): Promise<number | undefined> {
    const { limit, town_code: townCode } = this.#options;
    const bodies: Buffer[] = [];
    const taken: WindowEvent[] = [];
    let offset: number | undefined = from;
    for (let page = 0; page < maxPages && offset !== undefined; page++) {
      const { events, body } = await this.#client.events({
        offset: new Date(offset).toISOString(),
        limit,
        townCode,
        signal: this.#context.signal,
      });
      this.outcome.pages++;
      bodies.push(body);
      const instants = events.map((e) => toOffset(e['publication_timestamp']));
      const full = events.length >= limit;
      const last = instants.at(-1);
      // A full page: its last instant may go on in the next one, which starts there.
      const end = full && last !== undefined ? Math.min(offsetMs(last), before) : before;
      let previous: string | undefined;
      let index = 0;
      instants.forEach((instant, position) => {
        if (instant === undefined || offsetMs(instant) >= end) return;
        index = instant === previous ? index + 1 : 0;
        previous = instant;
        taken.push({
          page: bodies.length - 1,
          position,
          instant: String(events[position]!['publication_timestamp']),
          index,
        });
      });
      if (!full || last === undefined || offsetMs(last) >= before) offset = undefined;
      // A page of one instant cannot be paged through by offset: the instant is passed.
      else offset = offsetMs(last) === offset ? offset + 1 : offsetMs(last);
    }
    if (taken.length > 0) await this.#landMissing(bodies, taken);
    return offset;
  }

  /** Lands the window's events whose content the step's files do not hold. */
  async #landMissing(bodies: Buffer[], taken: WindowEvent[]): Promise<void> {
    // Its instants: the months whose files are compared with it.
    const from = offsetMs(toOffset(taken[0]!.instant)!);
    const to = offsetMs(toOffset(taken.at(-1)!.instant)!);
    const staging = this.#context.staging;
    const all = new StagedLines(join(staging, `audit-${++this.#units}.ndjson`));
    const missing = new StagedLines(join(staging, `audit-${this.#units}-missing.ndjson`));
    try {
      await stage(all, bodies, taken);
      await all.close();
      const keys = new Set(
        (
          await this.#db.all(
            `WITH window_events AS (SELECT e ->> '$.publication_timestamp' AS instant, f, md5(e::VARCHAR) AS event_hash
             FROM read_json(${quotedString(all.path)}, format = 'newline_delimited', columns = {f: 'INTEGER', e: 'JSON'}))
           SELECT DISTINCT ON (event_hash) instant, f
           FROM window_events ANTI JOIN (${await this.#landedHashes(from, to)}) landed USING (event_hash)
           ORDER BY event_hash, instant, f`,
          )
        ).map((row) => `${String(row['instant'])}|${String(row['f'])}`),
      );
      if (keys.size === 0) return;
      const absent = taken.filter((e) => keys.has(`${e.instant}|${e.index}`));
      await stage(missing, bodies, absent);
      const first = absent[0]!;
      const digest = createHash('sha256')
        .update([...keys].join('\n'))
        .digest('hex')
        .slice(0, 8);
      const stem = `${unitStem(this.#context.stepId, { ms: offsetMs(toOffset(first.instant)!), index: first.index })}-a${digest}`;
      const parts = join(staging, 'audit-parts');
      const landed = await landUnit(this.#db, this.#context.output, staging, stem, missing, parts);
      await rm(parts, { recursive: true, force: true });
      for (const file of landed.files) await this.#context.recordFile(file);
      this.outcome.missing += landed.rows + landed.quarantined;
    } finally {
      await all.discard();
      await missing.discard();
    }
  }

  /** The content hashes of what the step landed in the months of [from, to] (its quarantine's too). */
  async #landedHashes(from: number, to: number): Promise<string> {
    const files = folderFilesOf(this.#context);
    const month = Date.UTC(new Date(from).getUTCFullYear(), new Date(from).getUTCMonth(), 1);
    const events = this.#stepFiles()
      .filter((f) => f.month >= month && f.month <= to)
      .flatMap((f) => f.names.map((name) => join(f.folder, name)));
    const quarantine = join(this.#context.output, QUARANTINE_DATASET);
    const quarantined = namesIn(files, quarantine)
      .filter((n) => parseUnitFile(this.#context.stepId, n))
      .map((n) => join(quarantine, n));
    await files.bring([...events, ...quarantined]);
    const read = (paths: string[]) =>
      `SELECT event_hash FROM read_parquet([${paths.map(quotedString).join(', ')}], union_by_name = true, hive_partitioning = false)`;
    const parts = [events, quarantined].filter((p) => p.length > 0).map(read);
    return parts.length > 0
      ? parts.join(' UNION ALL ')
      : 'SELECT NULL::VARCHAR AS event_hash WHERE false';
  }
}

/** Appends the window's events `chosen` to a staged file, page by page. */
async function stage(lines: StagedLines, bodies: Buffer[], chosen: WindowEvent[]): Promise<void> {
  for (let page = 0; page < bodies.length; page++) {
    const of = chosen.filter((e) => e.page === page);
    if (of.length === 0) continue;
    await lines.add({
      body: bodies[page]!,
      positions: of.map((e) => e.position),
      indexes: of.map((e) => e.index),
    });
  }
}
