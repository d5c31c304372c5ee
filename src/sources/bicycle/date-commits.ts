/**
 * Once every batch covering a date is staged, that date partition is
 * rewritten as one file: the rows it held, less the run's locations x period,
 * plus the staged rows. Applying a commit twice gives the same files, so a
 * commit cut short by a crash is simply done again.
 */
import { rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { scratchFolder } from '../../layout.js';
import { commitFile, temporaryPath, makeFolder } from '../../util/fs.js';
import { DAY_MS, formatIsoDate } from '../../util/time.js';
import { Coverage, type Batch } from './batches.js';
import { MEASUREMENTS_DATASET, MEASUREMENT_NAMES, PARTITION_FILE } from './landing.js';
import { portableCopySql } from '../../duckdb/portable.js';
import type { FolderFiles } from '../../duckdb/folder-files.js';

/** Rows of staged files that belong in the dataset. */
function keptRows(files: readonly string[]): string {
  return `(SELECT ${MEASUREMENT_NAMES} FROM read_parquet([${files.map(quotedString).join(', ')}])
    WHERE _problem IS NULL AND NOT _boundary)`;
}

/** The UTC dates (ms of midnight) that [from, to) touches. */
export function datesOf(from: number, to: number): number[] {
  const dates: number[] = [];
  for (let day = Math.floor(from / DAY_MS) * DAY_MS; day < to; day += DAY_MS) dates.push(day);
  return dates;
}

interface CommitInput {
  output: string;
  /** The folder's listing: the day's file may be the commit's, not yet fetched. */
  files: FolderFiles;
  /** Staged batch files (absolute), with the period each covers. */
  staged: readonly { file: string; from: number; to: number }[];
  /** The run's period: the rows of its locations (table commit_selected) in it are replaced. */
  from: number;
  to: number;
}

/** Registers the run's locations for commitDate (table commit_selected of this connection). */
async function prepareCommit(db: Database, ids: readonly string[]): Promise<void> {
  await db.run(
    `CREATE OR REPLACE TEMP TABLE commit_selected AS SELECT unnest([${ids.map(quotedString).join(', ')}]::VARCHAR[]) AS location_id`,
  );
}

/**
 * Rewrites the date partition of `day` (UTC midnight, ms): its existing rows
 * outside the run's locations x period, plus the staged rows of that day, as
 * one file replaced by a rename; a partition left without rows is removed.
 * Call once every batch covering the day is staged. Doing it again gives the
 * same file, so a commit cut short is simply done again.
 */
async function commitDate(
  db: Database,
  input: CommitInput,
  day: number,
): Promise<{ rows: number; file: string | undefined; removed: boolean }> {
  const { output, files, staged, from, to } = input;
  const folder = join(output, MEASUREMENTS_DATASET, `date=${formatIsoDate(day)}`);
  const target = join(folder, PARTITION_FILE);
  const parts: string[] = [];
  const existed = files.size(target) !== undefined;
  const replaced = `measurement_hour >= make_timestamptz(${from * 1000}) AND measurement_hour < make_timestamptz(${to * 1000})
    AND location_id IN (SELECT location_id FROM commit_selected)`;
  if (existed) {
    await files.bring([target]);
    parts.push(`SELECT ${MEASUREMENT_NAMES} FROM read_parquet(${quotedString(target)}, hive_partitioning = false)
      WHERE NOT (${replaced})`);
  }
  const sources = staged.filter((s) => s.from < day + DAY_MS && s.to > day);
  const fetched = `SELECT ${MEASUREMENT_NAMES} FROM ${keptRows(sources.map((s) => s.file))}
      WHERE measurement_hour >= make_timestamptz(${day * 1000}) AND measurement_hour < make_timestamptz(${(day + DAY_MS) * 1000})
        AND location_id IN (SELECT location_id FROM commit_selected)`;
  if (sources.length > 0) parts.push(fetched);
  // Hours asked for again (a lookback) that bring nothing new leave the file as it was: the
  // rows held and those fetched are the same multiset when their counts and the sums of
  // their rows' hashes are (each side read once).
  if (existed && sources.length > 0) {
    const held = `SELECT ${MEASUREMENT_NAMES} FROM read_parquet(${quotedString(target)}, hive_partitioning = false) WHERE ${replaced}`;
    const digest = (rows: string) =>
      `(SELECT count(*) AS n, sum(hash(${MEASUREMENT_NAMES})) AS s FROM (${rows}))`;
    const [row] = await db.all(
      `SELECT h.n = f.n AND h.s IS NOT DISTINCT FROM f.s AS same FROM ${digest(held)} h, ${digest(fetched)} f`,
    );
    if (row?.['same'] === true) return { rows: 0, file: undefined, removed: false };
  }
  if (parts.length === 0) return { rows: 0, file: undefined, removed: false };
  const temporary = temporaryPath(target, scratchFolder(output));
  await makeFolder(folder);
  const rows = await db.copy(
    await portableCopySql(
      db,
      `(SELECT * FROM (${parts.join('\nUNION ALL\n')}) ORDER BY location_id, measurement_hour)`,
      temporary,
    ),
  );
  if (rows > 0) {
    await commitFile(temporary, target);
    return { rows, file: target, removed: false };
  }
  await rm(temporary, { force: true });
  await files.remove(target);
  await rmdir(folder).catch(() => undefined);
  return { rows: 0, file: undefined, removed: existed };
}

/**
 * The date partitions of a run. A date is rewritten (commitDate, on a
 * connection of its own, while later batches are fetched and staged) only once
 * the staged batches cover every location of the run over the run's hours of
 * that date: a failed or interrupted run never rewrites a date it has not
 * wholly fetched, so the rows landed there before stay until a rerun has them all.
 */
export class DateCommits {
  readonly files: string[] = [];
  removed = 0;
  /** The dates (YYYY-MM-DD) rewritten or removed: those whose rows changed. */
  readonly changed: string[] = [];
  readonly #db: Database;
  readonly #output: string;
  readonly #files: FolderFiles;
  readonly #from: number;
  readonly #to: number;
  readonly #staged: () => CommitInput['staged'];
  readonly #coverage: Coverage;
  /** Dates (UTC midnight, ms) not yet queued for their rewrite. */
  readonly #pending: Set<number>;
  #chain: Promise<void> = Promise.resolve();
  #failure: Error | undefined;

  private constructor(
    db: Database,
    input: Omit<CommitInput, 'staged'> & { ids: readonly string[] },
    staged: () => CommitInput['staged'],
  ) {
    this.#db = db;
    this.#output = input.output;
    this.#files = input.files;
    this.#from = input.from;
    this.#to = input.to;
    this.#staged = staged;
    this.#coverage = new Coverage(input.ids);
    this.#pending = new Set(datesOf(input.from, input.to));
  }

  /**
   * `staged` gives the staged batches at the moment a date is rewritten; `done`
   * are the batches already staged (a resumed run): the dates they cover are
   * queued at once.
   */
  static async open(
    db: Database,
    input: Omit<CommitInput, 'staged'> & { ids: readonly string[] },
    staged: () => CommitInput['staged'],
    done: readonly Batch[] = [],
  ): Promise<DateCommits> {
    await prepareCommit(db, input.ids);
    const commits = new DateCommits(db, input, staged);
    for (const batch of done) commits.#coverage.add(batch);
    commits.#queueCovered(input.from, input.to);
    return commits;
  }

  /** Records a batch as staged (listed by `staged` from now on) and queues the dates it completes. */
  add(batch: Batch): void {
    this.#coverage.add(batch);
    this.#queueCovered(batch.from, batch.to);
  }

  /**
   * Leaves a location out of the run (its requests keep failing): the dates
   * wait for the other locations only, and its rows stay as they were, none of
   * this run's added.
   */
  drop(id: string): void {
    this.#coverage.drop(id);
    this.#chain = this.#chain.then(() =>
      this.#db.run(`DELETE FROM commit_selected WHERE location_id = ${quotedString(id)}`),
    );
    this.#queueCovered(this.#from, this.#to);
  }

  /** Dates of the run not rewritten because the staged batches do not cover them. */
  get uncovered(): number {
    return this.#pending.size;
  }

  #queueCovered(from: number, to: number): void {
    for (const day of datesOf(from, to)) {
      if (!this.#pending.has(day)) continue;
      if (!this.#coverage.covers(Math.max(day, this.#from), Math.min(day + DAY_MS, this.#to)))
        continue;
      this.#pending.delete(day);
      this.#chain = this.#chain.then(async () => {
        if (this.#failure !== undefined) return;
        const input = {
          output: this.#output,
          files: this.#files,
          staged: this.#staged(),
          from: this.#from,
          to: this.#to,
        };
        try {
          const result = await commitDate(this.#db, input, day);
          if (result.file) this.files.push(result.file);
          if (result.removed) this.removed++;
          if (result.file || result.removed) this.changed.push(formatIsoDate(day));
        } catch (error) {
          this.#failure = error instanceof Error ? error : new Error(String(error));
        }
      });
    }
  }

  /** Waits for the queued dates; rejects with the first failure. */
  async settle(): Promise<void> {
    await this.#chain;
    if (this.#failure !== undefined) throw this.#failure;
  }
}
