/**
 * Landing a download of today's API: the file (GeoJSON or v4 CSV) made into
 * features, typed by DuckDB (live.ts), and written as one snapshot file in
 * the partition of its UTC date (signs/live_snapshots/snapshot_date=<date>/,
 * the moment in its column `snapshot`) with the features that cannot be typed
 * quarantined beside it, each file put in place whole.
 */
import { rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { quotedString, STAGED_FORMAT, type Database } from '../../duckdb/database.js';
import { DataError, explainDataError, firstLineOf } from '../../errors.js';
import { RetryableError } from '../../http/answers.js';
import { commitFiles, fileExcerpt, makeFolder, temporaryPath } from '../../util/fs.js';
import { compactFeatureLines, compactFeatureLinesInPlace } from '../../util/feature-lines.js';
import { arrayMemberToLines } from '../../util/json-lines.js';
import { engineSql } from '../../duckdb/sql-files.js';
import type { RunContext, RunOutcome } from '../context.js';
import {
  FINGERPRINT_COLUMN,
  LIVE_DATASET,
  LIVE_FINGERPRINT,
  LIVE_QUARANTINE_DATASET,
  snapshotFile,
} from './live.js';
import { csvFeatures, featureLines, memberParts } from './live-members.js';
import { typedLines, type Copier, type Keep, type LiveDownload } from './live-sample.js';

import { keepOnce, listed } from './live-judge.js';
import { portableCopySql } from '../../duckdb/portable.js';

export interface LandedLive {
  /** The snapshot's moment in ISO 8601 UTC to the millisecond. */
  snapshot: string;
  rows: number;
  quarantined: number;
  /** The files written (the snapshot's, and the quarantine's when some features could not be typed). */
  files: string[];
  /** Whether the snapshot keeps each feature's properties whole (live-members.ts). */
  propertiesKept: boolean;
}

/** The features of a download, as live_typing.sql reads them (the view live_members). */
interface Features {
  /** How many. */
  count: number;
  /** The features with each as received (for the quarantine). */
  parts: string;
}

/** Writes `select` over the typed features (the relation `typed`) to `target`; resolves to the rows written. */
async function typeInto(
  db: Database,
  copy: Copier,
  features: string,
  select: string,
  target: string,
  values: Record<string, string>,
): Promise<number> {
  const typing = await engineSql('sources/signs', 'live_typing');
  await db.run(`CREATE OR REPLACE TEMP VIEW live_members AS SELECT * FROM ${features}`);
  try {
    return await copy(
      await portableCopySql(db, `(WITH typed AS (${typing}) ${select})`, target, {
        params: values,
        spatialOrder: false,
      }),
      values,
    );
  } finally {
    await db.run('DROP VIEW IF EXISTS live_members');
  }
}

/**
 * Writes the features of the download that can be rows (`keep`); resolves to
 * how many were written, whether the properties are kept whole, and the
 * features, as received, for the quarantine.
 */
async function keptRows(
  db: Database,
  download: LiveDownload,
  copy: Copier,
  keep: Keep,
): Promise<{ rows: number; propertiesKept: boolean; features: Features }> {
  if (download.format === 'csv') {
    // The rows are made into features in a pass of their own: typed in the same
    // statement, DuckDB held far more of a national file than the budget allows.
    const made = join(download.staging, 'features.parquet');
    const count = await copy(
      `COPY (SELECT f FROM ${csvFeatures(download.file)}) TO ${quotedString(made)} (${STAGED_FORMAT})`,
    );
    await rm(download.file, { force: true });
    const parts = memberParts(`read_parquet(${quotedString(made)})`);
    return { rows: await keep(copy, parts), propertiesKept: true, features: { count, parts } };
  }
  // One object of a gigabyte cannot be read a piece at a time: its features become
  // lines, which DuckDB reads on every thread, the members typing needs straight
  // from each line. The quick cut first; DuckDB's reader fails when it is wrong.
  const lines = join(download.staging, 'features.jsonl');
  const parts = memberParts(featureLines(lines));
  const guess = await quickCut(download.file, lines);
  if (guess !== undefined) {
    const typed = await typedLines(db, download, lines, keep).catch((error: unknown) => {
      download.note?.(`the quick cut into lines did not hold (${firstLineOf(error)}): cut again`);
      return undefined;
    });
    if (typed !== undefined) {
      await rm(download.file, { force: true });
      return { ...typed, features: { count: guess.lines, parts } };
    }
    await guess.undo();
  } else download.note?.('not a compact FeatureCollection: cut into lines byte by byte');
  const split = await arrayMemberToLines(download.file, lines, 'features');
  if (!split.found)
    throw new DataError(
      `signs.live: the ${download.api} answer is not a FeatureCollection (no features array)`,
    );
  await rm(download.file, { force: true });
  const features = { count: split.elements, parts };
  const typed = await typedLines(db, download, lines, keep).catch(async (error: unknown) => {
    // an element that is not an object, say: the lines read whole
    download.note?.(
      `the features' members could not be read (${firstLineOf(error)}): lines read whole`,
    );
    return { rows: await keep(copy, parts), propertiesKept: true };
  });
  return { ...typed, features };
}

/**
 * The quick cut of a downloaded collection into `lines` (feature-lines.ts):
 * made in the file itself, which becomes the lines, where the file is the
 * download's alone; into a file of its own where it is a link to a bulk file
 * of the user's. `undo` gives the download back as it was. Undefined when the
 * collection is not laid out for it.
 */
async function quickCut(
  file: string,
  lines: string,
): Promise<{ lines: number; undo: () => Promise<void> } | undefined> {
  if ((await stat(file)).nlink > 1) {
    const count = await compactFeatureLines(file, lines);
    return count === undefined ? undefined : { lines: count, undo: () => Promise.resolve() };
  }
  const cut = await compactFeatureLinesInPlace(file);
  if (cut === undefined) return undefined;
  await rename(file, lines);
  return {
    lines: cut.lines,
    undo: async () => {
      await rename(lines, file);
      await cut.undo();
    },
  };
}

/**
 * Types the downloaded file and lands it as a snapshot (and its quarantine):
 * one pass types and writes the snapshot, and only when it kept fewer rows
 * than there are features does a second find those that could not be typed,
 * each with the feature as received. Both files are put in place together.
 */
export async function landLive(db: Database, download: LiveDownload): Promise<LandedLive> {
  // A download DuckDB cannot read or type as a whole is a data error, not a bug.
  const copy: Copier = (sql, values) =>
    db.copy(sql, values).catch((error: unknown) => {
      throw explainDataError(error, `signs.live: the ${download.api} download`);
    });
  const moment = new Date(download.downloadedAt).toISOString();
  const values = { api: download.api, downloaded_at: moment };
  const snapshot = join(download.output, LIVE_DATASET, snapshotFile(download.stepId, moment));
  const quarantine = join(
    download.output,
    LIVE_QUARANTINE_DATASET,
    `${download.stepId}-${moment.replace(/[-:.]/g, '')}.parquet`,
  );
  const moves: [string, string][] = [];
  // The answer's end, for a message: where a body cut short shows it.
  const tail = await fileExcerpt(download.file, 'end', 200);
  try {
    const kept = temporaryPath(snapshot, download.scratch);
    moves.push([kept, snapshot]);
    const {
      rows: typed,
      propertiesKept,
      features,
    } = await keptRows(db, download, copy, (copier, relation) =>
      typeInto(
        db,
        copier,
        relation,
        `SELECT * EXCLUDE (_problem, raw_feature), downloaded_at AS snapshot, ${LIVE_FINGERPRINT} AS ${FINGERPRINT_COLUMN} FROM typed WHERE _problem IS NULL`,
        kept,
        values,
      ),
    );
    const judged = await download.judge?.(kept, typed, features.count);
    if (judged?.problem) throw new RetryableError(judged.problem, 200, tail, undefined);
    const twice = judged?.twice ?? [];
    const rows = twice.length > 0 ? await keepOnce(db, kept, twice) : typed;
    if (twice.length > 0)
      download.warn?.(
        `the ${download.api} answer holds ${twice.length} sign(s) more than once with the same content (${listed(twice)}): each is kept once`,
      );
    let quarantined = 0;
    if (rows < features.count) {
      const held = temporaryPath(quarantine, download.scratch);
      moves.unshift([held, quarantine]);
      quarantined = await typeInto(
        db,
        copy,
        features.parts,
        'SELECT _problem AS reason, raw_feature, api, downloaded_at FROM typed WHERE _problem IS NOT NULL',
        held,
        values,
      );
    }
    for (const [, path] of moves) await makeFolder(dirname(path));
    await commitFiles(moves);
    const files = moves.map(([, path]) => path);
    return { snapshot: moment, rows, quarantined, files, propertiesKept };
  } catch (error) {
    await Promise.all(moves.map(([temporary]) => rm(temporary, { force: true })));
    // An answer that came whole on the wire but cannot be read is asked for again, as a broken transfer is.
    if (error instanceof DataError)
      throw new RetryableError(error.message, 200, tail, undefined, { cause: error });
    throw error;
  }
}

/**
 * Lands a download as the step's snapshot: its files recorded for the
 * manifest, the features that could not be typed warned of; resolves to what
 * the step did.
 */
export async function landLiveSnapshot(
  context: RunContext,
  download: Pick<LiveDownload, 'file' | 'format' | 'api' | 'downloadedAt' | 'judge'>,
): Promise<RunOutcome> {
  const landed = await landLive(await context.database(), {
    ...download,
    staging: context.staging,
    output: context.output,
    scratch: context.scratch,
    stepId: context.stepId,
    note: (message) => context.log.log('debug', 'signs.live.lines', message),
    warn: (message) => context.log.log('warn', 'signs.live.properties', message),
  });
  for (const path of landed.files) await context.recordFile(path);
  if (landed.quarantined > 0)
    context.log.log(
      'warn',
      'signs.live.quarantine',
      `${landed.quarantined} feature(s) could not be typed; see ${LIVE_QUARANTINE_DATASET} for each with its reason`,
      { quarantined: landed.quarantined },
    );
  return {
    rowsIn: landed.rows + landed.quarantined,
    rowsOut: landed.rows,
    notes: {
      api: download.api,
      snapshot: landed.snapshot,
      quarantined: landed.quarantined,
      properties_kept: landed.propertiesKept,
    },
  };
}
