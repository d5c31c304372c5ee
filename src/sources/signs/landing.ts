/**
 * Lands a unit of events: the events taken, as received, with their
 * feed_index, in an NDJSON staging file written as the pages arrive -> DuckDB
 * (parsing, content hash, typing) -> Parquet files under
 * signs/events/publication_month=YYYY-MM-01/ (the month, in UTC, of each
 * event's publication_timestamp; its publication_date a column), and untypeable records under
 * signs/quarantine/. Files are named after the unit's first feed position, so a
 * unit landed again after a crash replaces its files instead of adding to them.
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { quotedString, type Database } from '../../duckdb/database.js';
import { explainDataError } from '../../errors.js';
import { commitFile, commitFiles, makeFolder } from '../../util/fs.js';
import { arrayElementRanges, hasLineBreak } from '../../util/json-array.js';
import type { TakenPage } from './feed.js';
import { signTyping } from './schema.js';
import { portableCopySql } from '../../duckdb/portable.js';
import { namesIn, type FolderFiles } from '../../duckdb/folder-files.js';

export const EVENTS_DATASET = join('signs', 'events');

/**
 * The partition of the events: the UTC month of their publication. A day of a
 * town's feed holds a handful of events, and a national day a few thousand: a
 * month gives files a reader can afford, and the day is a column.
 */
export const EVENTS_PARTITION = 'publication_month';
/** The UTC date of an event, as its column publication_date (the run's DuckDB is in UTC). */
const PUBLICATION_DATE = 'CAST(publication_timestamp AS DATE)';
/** The first day of its UTC month, as the partition value. */
const PUBLICATION_MONTH = `CAST(date_trunc('month', publication_timestamp) AS DATE)`;
export const QUARANTINE_DATASET = join('signs', 'quarantine');

/** A position in the feed: an instant (ms) and a place within it. */
export interface FeedPosition {
  ms: number;
  index: number;
}

export function comparePositions(a: FeedPosition, b: FeedPosition): number {
  return a.ms - b.ms || a.index - b.index;
}

/** File name stem of a unit of a step: <step>-<instant ms>-<index>. */
export function unitStem(stepId: string, start: FeedPosition): string {
  return `${stepId}-${start.ms}-${start.index}`;
}

/** The unit start encoded in a file name of this step, or undefined for other files. */
export function parseUnitFile(stepId: string, name: string): FeedPosition | undefined {
  // <stem>.parquet, <stem>-<n>.parquet (more files of a unit), <stem>-m<digest>.parquet (merged);
  // an audit's unit (audit.ts) has -a<digest> after its stem.
  const match = new RegExp(
    `^${stepId}-(\\d+)-(\\d+)(?:-a[0-9a-f]{8})?(?:-\\d+|-m[0-9a-f]{8})?\\.parquet$`,
  ).exec(name);
  return match ? { ms: Number(match[1]), index: Number(match[2]) } : undefined;
}

export interface LandedUnit {
  rows: number;
  quarantined: number;
  files: string[];
}

/**
 * The NDJSON staging file of the unit being read, one event per line with its
 * feed_index: {"f":<feed_index>,"e":<the event as received>}. Each page's taken
 * events are appended as the page arrives, so no response body is held until
 * the unit lands. One event per line lets DuckDB parse the unit a vector of
 * events at a time.
 */
export class StagedLines {
  readonly path: string;
  /** Events written. */
  rows = 0;
  #out: WriteStream | undefined;

  constructor(path: string) {
    this.path = path;
  }

  /** Appends the taken events of a page. */
  async add(page: Pick<TakenPage, 'body' | 'positions' | 'indexes'>): Promise<void> {
    if (page.positions.length === 0) return;
    if (!this.#out) {
      await makeFolder(dirname(this.path));
      // Pages are written without waiting while less than 1 MB is pending.
      this.#out = createWriteStream(this.path, { highWaterMark: 1 << 20 });
      this.#out.on('error', () => undefined); // surfaces in the write, the drain or close()
    }
    const out = this.#out;
    if (out.errored) throw out.errored;
    const ranges = arrayElementRanges(page.body);
    // Line breaks can only be whitespace between tokens: a space does as well.
    const breaks = page.body.includes(0x0a) || page.body.includes(0x0d);
    const parts: Buffer[] = [];
    page.positions.forEach((position, n) => {
      const start = ranges[2 * position]!;
      const end = ranges[2 * position + 1]!;
      let event = page.body.subarray(start, end);
      if (breaks && hasLineBreak(page.body, start, end))
        event = Buffer.from(event.map(blankLineBreak));
      parts.push(Buffer.from(`{"f":${page.indexes[n]!},"e":`), event, NEWLINE_CLOSE);
    });
    this.rows += page.positions.length;
    if (!out.write(Buffer.concat(parts))) await once(out, 'drain');
  }

  /** Finishes the file; rejects when it could not be written whole. */
  async close(): Promise<void> {
    if (!this.#out) return;
    this.#out.end();
    await finished(this.#out);
  }

  /** Stops writing and removes the file. */
  async discard(): Promise<void> {
    this.#out?.destroy();
    await rm(this.path, { force: true });
  }
}

const NEWLINE_CLOSE = Buffer.from('}\n');

function blankLineBreak(byte: number): number {
  return byte === 0x0a || byte === 0x0d ? 0x20 : byte;
}

/** The staged events as rows: raw (one event), feed_index and event_hash (md5 of its JSON text). */
function stagedEvents(lines: string): string {
  return `(SELECT e AS raw, f AS feed_index, md5(e::VARCHAR) AS event_hash
    FROM read_json(${quotedString(lines)}, format = 'newline_delimited', columns = {f: 'INTEGER', e: 'JSON'}))`;
}

/**
 * Lands one unit from its staged lines (removed afterwards); resolves to what
 * was written (paths absolute).
 */
export async function landUnit(
  db: Database,
  output: string,
  stagingRoot: string,
  stem: string,
  staged: StagedLines,
  /**
   * Where DuckDB writes the unit's month files, kept from unit to unit (the files
   * are moved out, the month folders stay): making and removing a folder per
   * partition for every unit is what a sparse feed's landing spent most of its time on.
   * One per landing connection.
   */
  parts: string,
): Promise<LandedUnit> {
  const staging = join(stagingRoot, stem);
  try {
    await staged.close();
    await rm(staging, { recursive: true, force: true });
    await makeFolder(staging);
    const lines = staged.path;
    const events = staged.rows;
    const typed = await signTyping(db, stagedEvents(lines), 'nested');
    const files: string[] = [];
    // DuckDB names the files it wrote: the month folders kept from earlier units are not listed.
    const [written] = await db.all(
      await portableCopySql(
        db,
        `(SELECT * EXCLUDE (_problem), ${PUBLICATION_DATE} AS publication_date, ${PUBLICATION_MONTH} AS ${EVENTS_PARTITION} FROM ${typed} WHERE _problem IS NULL)`,
        parts,
        {
          extra: `PARTITION_BY (${EVENTS_PARTITION}), FILENAME_PATTERN 'part_{i}', OVERWRITE_OR_IGNORE true, RETURN_FILES true`,
        },
      ),
    );
    const rows = Number(written?.['Count'] ?? 0);
    const byMonth = new Map<string, string[]>();
    for (const file of (written?.['Files'] as string[] | undefined) ?? []) {
      const month = basename(dirname(file));
      byMonth.set(month, [...(byMonth.get(month) ?? []), file]);
    }
    const moves: [string, string][] = [];
    for (const [month, produced] of byMonth) {
      const target = join(output, EVENTS_DATASET, month);
      await makeFolder(target);
      for (const [n, file] of produced.sort().entries()) {
        moves.push([file, join(target, `${stem}${n === 0 ? '' : `-${n}`}.parquet`)]);
      }
    }
    // Records that cannot be typed are rare: they are read a second time only when there are some.
    const quarantinePath = join(staging, 'quarantine.parquet');
    const quarantined =
      rows === events
        ? 0
        : await db.copy(
            await portableCopySql(
              db,
              `(SELECT _problem AS reason, raw_event, feed_index, event_hash, raw_event ->> '$.publication_timestamp' AS publication_timestamp_text
                FROM ${typed} WHERE _problem IS NOT NULL)`,
              quarantinePath,
            ),
          );
    await commitFiles(moves);
    files.push(...moves.map(([, file]) => file));
    if (quarantined > 0) {
      await makeFolder(join(output, QUARANTINE_DATASET));
      const file = join(output, QUARANTINE_DATASET, `${stem}.parquet`);
      await commitFile(quarantinePath, file);
      files.push(file);
    }
    return { rows, quarantined, files };
  } catch (error) {
    throw explainDataError(error, `the events of unit ${stem}`);
  } finally {
    await staged.discard();
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Removes this step's files whose unit starts inside one of the ranges at or
 * after the range's committed position: units a killed run wrote but did not
 * record. Resolves to the number of files removed.
 */
export async function removeUncommitted(
  files: FolderFiles,
  output: string,
  stepId: string,
  ranges: readonly { committed: FeedPosition; endMs: number | undefined }[],
): Promise<number> {
  let removed = 0;
  const uncommitted = (name: string): boolean => {
    const start = parseUnitFile(stepId, name);
    return (
      start !== undefined &&
      ranges.some(
        (r) =>
          comparePositions(start, r.committed) >= 0 &&
          (r.endMs === undefined || start.ms < r.endMs),
      )
    );
  };
  for (const folder of eventFolders(files, output)) {
    for (const name of namesIn(files, folder)) {
      if (uncommitted(name)) {
        await files.remove(join(folder, name));
        removed++;
      }
    }
  }
  return removed;
}

/** The folders of the event feed's files: its quarantine, and each partition of signs/events. */
export function eventFolders(files: FolderFiles, output: string): string[] {
  return [
    join(output, QUARANTINE_DATASET),
    ...namesIn(files, join(output, EVENTS_DATASET)).map((name) =>
      join(output, EVENTS_DATASET, name),
    ),
  ];
}
