/**
 * Lands a unit of events: NDJSON staging file -> DuckDB typing -> Parquet files
 * under signs/events/publication_date=YYYY-MM-DD/, and untypeable records under
 * signs/quarantine/. Files are named after the unit's first feed position, so a
 * unit landed again after a crash replaces its files instead of adding to them.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { commitFile, commitFiles } from '../../util/fs.js';
import type { TakenEvent } from './feed.js';
import { typingSelect } from './schema.js';

export const EVENTS_DATASET = join('signs', 'events');
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
  const match = new RegExp(`^${stepId}-(\\d+)-(\\d+)(?:-\\d+)?\\.parquet$`).exec(name);
  return match ? { ms: Number(match[1]), index: Number(match[2]) } : undefined;
}

export interface LandedUnit {
  rows: number;
  quarantined: number;
  files: string[];
}

async function writeLines(path: string, events: readonly TakenEvent[]): Promise<void> {
  const out = createWriteStream(path);
  let chunk = '';
  for (const event of events) {
    chunk += `{"feed_index":${event.index},"event_hash":"${event.hash}","raw":${event.text}}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

/** Lands one unit; resolves to what was written (paths absolute). */
export async function landUnit(
  db: Database,
  output: string,
  stagingRoot: string,
  stem: string,
  events: readonly TakenEvent[],
): Promise<LandedUnit> {
  const staging = join(stagingRoot, stem);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const lines = join(staging, 'unit.ndjson');
    await writeLines(lines, events);
    const source = `read_json(${quotedString(lines)}, format = 'newline_delimited', columns = {feed_index: 'INTEGER', event_hash: 'VARCHAR', raw: 'JSON'})`;
    await db.run(
      `CREATE OR REPLACE TEMP TABLE unit AS ${typingSelect(source, 'nested', ['feed_index', 'event_hash'])}`,
    );
    const files: string[] = [];
    const parts = join(staging, 'parts');
    const rows = await db.copy(
      `COPY (SELECT * EXCLUDE (_problem), CAST(publication_timestamp AS DATE) AS publication_date FROM unit WHERE _problem IS NULL)
       TO ${quotedString(parts)} (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (publication_date), FILENAME_PATTERN 'part_{i}')`,
    );
    const moves: [string, string][] = [];
    for (const folder of rows > 0 ? await readdir(parts) : []) {
      const target = join(output, EVENTS_DATASET, folder);
      await mkdir(target, { recursive: true });
      const produced = (await readdir(join(parts, folder))).sort();
      for (const [n, name] of produced.entries()) {
        moves.push([
          join(parts, folder, name),
          join(target, `${stem}${n === 0 ? '' : `-${n}`}.parquet`),
        ]);
      }
    }
    await commitFiles(moves);
    files.push(...moves.map(([, file]) => file));
    const quarantinePath = join(staging, 'quarantine.parquet');
    const problems = Number(
      (await db.all('SELECT count(*) AS n FROM unit WHERE _problem IS NOT NULL'))[0]?.['n'] ?? 0,
    );
    const quarantined =
      problems === 0
        ? 0
        : await db.copy(
            `COPY (SELECT _problem AS reason, raw_event, feed_index, event_hash, raw_event ->> '$.publication_timestamp' AS publication_timestamp_text
             FROM unit WHERE _problem IS NOT NULL)
       TO ${quotedString(quarantinePath)} (FORMAT parquet, COMPRESSION zstd)`,
          );
    if (quarantined > 0) {
      await mkdir(join(output, QUARANTINE_DATASET), { recursive: true });
      const file = join(output, QUARANTINE_DATASET, `${stem}.parquet`);
      await commitFile(quarantinePath, file);
      files.push(file);
    }
    await db.run('DROP TABLE unit');
    return { rows, quarantined, files };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Removes this step's files whose unit starts inside one of the ranges at or
 * after the range's committed position: units a killed run wrote but did not
 * record. Resolves to the number of files removed.
 */
export async function removeUncommitted(
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
  const folders = [join(output, QUARANTINE_DATASET)];
  for (const entry of await readdir(join(output, EVENTS_DATASET)).catch(() => []))
    folders.push(join(output, EVENTS_DATASET, entry));
  for (const folder of folders) {
    for (const name of await readdir(folder).catch(() => [])) {
      if (uncommitted(name)) {
        await rm(join(folder, name), { force: true });
        removed++;
      }
    }
  }
  return removed;
}
