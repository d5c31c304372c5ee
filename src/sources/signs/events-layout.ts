/**
 * The event feed's layout of earlier versions: a partition per day
 * (`publication_date=YYYY-MM-DD/`), which a sparse feed filled with thousands of
 * files of a few rows. Today's is a partition per month
 * (`publication_month=YYYY-MM-01/`), the day a column of each file.
 *
 * Each file of a day is rewritten, with its day as the column
 * `publication_date`, into the partition of its month, then removed; a run cut
 * short leaves the rest to the next, which writes the same file again (under
 * the same name), so that no row is lost or kept twice once it has finished.
 * The new name keeps the unit the file began with (so that the events step
 * still knows its files and the units an interrupted run had not recorded), made
 * unique by a digest of where it came from; the step's compaction then merges
 * the small files of each month.
 */
import { createHash } from 'node:crypto';
import { readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { partitionFolder } from '../../duckdb/partitions.js';
import { copyWithColumn } from '../../duckdb/upgrade.js';
import { EVENTS_DATASET, EVENTS_PARTITION } from './landing.js';

const DAY_FOLDER = /^publication_date=(\d{4})-(\d{2})-(\d{2})$/;
/** A unit's file of any step: <step>-<ms>-<index>[-<n>|-m<digest>].parquet. */
const UNIT_FILE = /^(.+-\d+-\d+)(?:-\d+|-m[0-9a-f]{8})?\.parquet$/;

/** The name of a day's file in its month's partition. */
function monthFileName(day: string, name: string): string {
  const digest = createHash('sha256').update(`${day}/${name}`).digest('hex').slice(0, 8);
  const unit = UNIT_FILE.exec(name);
  return unit
    ? `${unit[1]}-m${digest}.parquet`
    : `${name.slice(0, -'.parquet'.length)}-m${digest}.parquet`;
}

/**
 * Moves the day partitions of signs/events under `output` into month
 * partitions. Resolves to the number of day partitions moved (0 when the
 * dataset has none).
 */
export async function monthlyEventPartitions(
  db: Database,
  output: string,
  scratch: string,
): Promise<number> {
  const root = join(output, EVENTS_DATASET);
  let moved = 0;
  for (const day of (await readdir(root).catch(() => [])).sort()) {
    const m = DAY_FOLDER.exec(day);
    if (!m) continue;
    const date = `${m[1]}-${m[2]}-${m[3]}`;
    const month = join(root, partitionFolder(EVENTS_PARTITION, `${m[1]}-${m[2]}-01`));
    const folder = join(root, day);
    const files = (await readdir(folder))
      .filter((name) => name.endsWith('.parquet') && !name.startsWith('.'))
      .sort();
    for (const name of files) {
      await copyWithColumn(
        db,
        { source: join(folder, name), target: join(month, monthFileName(day, name)), scratch },
        'publication_date',
        `DATE ${quotedString(date)}`,
      );
      await rm(join(folder, name));
    }
    // A hidden file (a temporary one of a killed run) goes with the folder; anything else stays.
    for (const name of await readdir(folder))
      if (name.startsWith('.')) await rm(join(folder, name), { recursive: true, force: true });
    await rmdir(folder).catch(() => undefined);
    moved++;
  }
  return moved;
}
