/**
 * Whether a typed current state may become the day's truth (signs.live),
 * judged by evidence against the folder's last snapshot (docs/pipelines.md,
 * "How an answer is judged"):
 *
 * - signs left out: more of the last snapshot's signs gone than the days since
 *   it remove, at the folder's own rate (its recent nights, with a floor);
 * - properties stripped: a property most of the last snapshot's signs have,
 *   missing from more signs than those days change;
 * - signs served twice: with the same content, kept once; with different
 *   content, the answer cannot say which is the sign.
 *
 * "More than the days remove" is a test, not a share: a count of signs is
 * implausible when a day that removes `p` of the signs, each on its own,
 * gives it less than once in a million (a Chernoff bound on the binomial's
 * tail). Two of a two-sign selection gone is a day like any; ten of 22 is not.
 */
import { rename } from 'node:fs/promises';
import { quotedIdentifier, quotedString, type Database } from '../../duckdb/database.js';
import { portableCopySql } from '../../duckdb/portable.js';
import { GEOMETRY_COLUMN } from '../../duckdb/geometry.js';
import { LIVE_COLUMNS } from './live.js';

/**
 * The least share of signs a day is taken to remove, or to change for the
 * worse: ten times what a national day of NDW's current state removes (well
 * under 0.1%), so that a road authority's batch of removals in one day passes.
 */
export const DAILY_FLOOR = 0.01;
/** How many of the folder's nights set its daily rate. */
export const RECENT_NIGHTS = 30;
/** Below this, what an answer shows is trouble, not a day's change. */
const ODDS = 1e-6;
const DAY_MS = 86_400_000;

/**
 * Whether `k` of `n` signs is more than a day that removes (or changes) each
 * sign with the chance `p` gives once in a million: the Chernoff bound
 * exp(-n KL(k/n || p)) on the binomial's upper tail, which overstates the
 * chance, so that a real day is never taken for trouble on its account.
 */
export function beyondChance(k: number, n: number, p: number): boolean {
  if (n <= 0 || k <= n * p || p >= 1) return false;
  if (p <= 0) return true;
  const q = Math.min(k / n, 1);
  const kl = q * Math.log(q / p) + (q < 1 ? (1 - q) * Math.log((1 - q) / (1 - p)) : 0);
  return n * kl > -Math.log(ODDS);
}

/**
 * The share of signs a day removes in this folder: twice the median of its
 * recent nights' shares (each per day since the snapshot before), at least
 * DAILY_FLOOR. A selection that churns (status PLANNED, say) earns its rate.
 */
export function dailyRate(recent: readonly number[]): number {
  const sorted = [...recent].filter((r) => Number.isFinite(r) && r >= 0).sort((a, b) => a - b);
  if (sorted.length === 0) return DAILY_FLOOR;
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return Math.max(DAILY_FLOOR, 2 * median);
}

/** The share of signs `days` days at `rate` a day touch. */
function overDays(rate: number, days: number): number {
  return 1 - (1 - rate) ** days;
}

/**
 * 53 bits of the hash of each sign id of `from`, sorted: two national
 * snapshots' ids in 46 MB of the process, where DuckDB's join of them took
 * 400 MB. Two ids in three million share the bits once in some thousands of
 * nights; what they would decide is asked of DuckDB again (servedTwice).
 */
async function idPrints(db: Database, from: string, expected: number): Promise<Float64Array> {
  let prints = new Float64Array(Math.max(expected, 1024));
  let n = 0;
  const result = await db.connection.stream(
    `SELECT (hash(sign_id) >> 11)::DOUBLE AS p FROM ${from} WHERE sign_id IS NOT NULL`,
  );
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    const vector = chunk.getColumnVector(0);
    const size = chunk.rowCount;
    if (n + size > prints.length) {
      const grown = new Float64Array(Math.max(prints.length * 2, n + size));
      grown.set(prints.subarray(0, n));
      prints = grown;
    }
    for (let row = 0; row < size; row++, n++) prints[n] = vector.getItem(row) as number;
  }
  return prints.subarray(0, n).sort();
}

/** How many of `last` (sorted) are not in `now` (sorted). */
function missing(last: Float64Array, now: Float64Array): number {
  let gone = 0;
  for (let i = 0, j = 0; i < last.length; i++) {
    while (j < now.length && now[j]! < last[i]!) j++;
    if (j === now.length || now[j] !== last[i]) gone++;
  }
  return gone;
}

/** The prints that `now` (sorted) holds more than once. */
function repeated(now: Float64Array): number[] {
  const found: number[] = [];
  for (let i = 1; i < now.length; i++)
    if (now[i] === now[i - 1] && found.at(-1) !== now[i]) found.push(now[i]!);
  return found;
}

/** The signs `file` holds more than once: each with how many versions of its content. */
async function servedTwice(
  db: Database,
  file: string,
  prints: number[],
): Promise<{ id: string; versions: number }[]> {
  if (prints.length === 0) return [];
  // A short list narrows the scan; a long one (a whole answer served twice) is the scan.
  const narrow =
    prints.length <= 10_000
      ? `AND (hash(sign_id) >> 11)::DOUBLE IN (SELECT unnest([${prints.join(',')}]::DOUBLE[]))`
      : '';
  const rows = await db.all(
    `SELECT sign_id::VARCHAR AS id, count(DISTINCT fingerprint) AS versions
     FROM read_parquet(${quotedString(file)}) WHERE sign_id IS NOT NULL ${narrow}
     GROUP BY sign_id HAVING count(*) > 1 ORDER BY sign_id`,
  );
  return rows.map((r) => ({ id: String(r['id']), versions: Number(r['versions']) }));
}

/** The columns whose filling says whether properties were stripped: every property's. */
const FILLED = LIVE_COLUMNS.map(([name]) => name).filter(
  (name) =>
    ![
      'sign_id',
      'longitude',
      'latitude',
      'properties',
      'typing_issues',
      'api',
      'downloaded_at',
      GEOMETRY_COLUMN,
    ].includes(name),
);

/** How many rows of `from` there are, and how many have each of FILLED. */
async function filling(db: Database, from: string): Promise<{ n: number; filled: number[] }> {
  const [row] = await db.all(
    `SELECT count(*) AS n, ${FILLED.map((c, i) => `count(${quotedIdentifier(c)}) AS c${i}`).join(', ')} FROM ${from}`,
  );
  return {
    n: Number(row?.['n'] ?? 0),
    filled: FILLED.map((_, i) => Number(row?.[`c${i}`] ?? 0)),
  };
}

/** Properties most of the last snapshot's signs had that the answer left out of more signs than `share` allows. */
async function stripped(
  db: Database,
  file: string,
  share: { chance: number; max: number | undefined },
): Promise<string[]> {
  const last = await filling(db, 'signs_live');
  const now = await filling(db, `read_parquet(${quotedString(file)})`);
  const found: string[] = [];
  FILLED.forEach((column, i) => {
    const had = last.filled[i]! / last.n;
    if (!(had >= 0.5) || now.n === 0) return;
    const expected = Math.round(had * now.n);
    const lost = expected - now.filled[i]!;
    const beyond =
      share.max === undefined
        ? beyondChance(lost, expected, share.chance)
        : lost > share.max * expected;
    if (beyond)
      found.push(
        `${column} (${pct(had)} of the last snapshot's signs, ${pct(now.filled[i]! / now.n)} of the answer's)`,
      );
  });
  return found;
}

export interface Judged {
  /** Why the answer cannot be the day's truth; undefined when it can. */
  problem?: string;
  /** Signs the answer holds more than once with the same content: kept once. */
  twice: string[];
  /** The share of the last snapshot's signs gone, per day since it (the folder's history); undefined without one. */
  gonePerDay?: number;
}

export interface JudgeOptions {
  file: string;
  rows: number;
  features: number;
  /** The largest share of the last snapshot's signs the answer may leave out; undefined: by the folder's rate. */
  maxGone: number | undefined;
  /** The largest share of signs that may lose a property; undefined: by the folder's rate. */
  maxStripped: number | undefined;
  /** The folder's recent nights: the share of signs gone per day (dailyRate). */
  recent: readonly number[];
  /** The new answer's moment (ms). */
  at: number;
}

/** Judges a typed snapshot (JudgeOptions) against the folder's last one. */
export async function judgeSnapshot(db: Database, options: JudgeOptions): Promise<Judged> {
  const { file, rows, features, maxGone } = options;
  if (maxGone !== undefined && maxGone >= 1) return { twice: [] };
  if (features === 0)
    return {
      twice: [],
      problem:
        'the answer holds no sign (an empty FeatureCollection); if that is the truth, let it through with max_gone: 1',
    };
  const now = await idPrints(db, `read_parquet(${quotedString(file)})`, rows);
  const twice = await servedTwice(db, file, repeated(now));
  const differing = twice.filter((t) => t.versions > 1);
  if (differing.length > 0)
    return {
      twice: [],
      problem: `the answer holds ${differing.length} sign(s) more than once with different content (${listed(differing.map((t) => t.id))}): it cannot say which is the sign`,
    };
  const ids = twice.map((t) => t.id);
  const [last] = await db.all(
    `SELECT count(*) AS before, epoch_ms(max(downloaded_at)) AS at FROM signs_live`,
  );
  const before = Number(last?.['before'] ?? 0);
  if (before === 0) return { twice: ids };
  const days = Math.max(1, Math.ceil((options.at - Number(last?.['at'])) / DAY_MS));
  const chance = overDays(dailyRate(options.recent), days);
  const gone = missing(await idPrints(db, 'signs_live', before), now);
  const gonePerDay = 1 - (1 - gone / before) ** (1 / days);
  const moment = new Date(Number(last?.['at'])).toISOString();
  const since = `the last snapshot (${moment}, ${days} day(s) before)`;
  const tooMany =
    maxGone === undefined ? beyondChance(gone, before, chance) : gone > maxGone * before;
  if (tooMany) {
    const bound =
      maxGone === undefined
        ? `what ${days} day(s) at ${pct(dailyRate(options.recent))} a day remove`
        : `max_gone ${pct(maxGone)}`;
    return {
      twice: ids,
      gonePerDay,
      problem:
        `the answer is implausible: it holds ${rows} sign(s), and leaves out ${gone} of the ${before} signs of ${since}, ${pct(gone / before)}, far more than ${bound}; ` +
        `if the change is real, let it through with max_gone (a param of traffic-signs-live.yaml), for example --param max_gone=1 for this night`,
    };
  }
  const lost = await stripped(db, file, { chance, max: options.maxStripped });
  if (lost.length > 0)
    return {
      twice: ids,
      gonePerDay,
      problem:
        `the answer is implausible: its signs lack properties the signs of ${since} had: ${lost.slice(0, 5).join(', ')}${lost.length > 5 ? `, and ${lost.length - 5} more` : ''}; ` +
        `if NDW no longer serves them, let the answer through with max_stripped (a param of traffic-signs-live.yaml), for example --param max_stripped=1 for this night`,
    };
  return { twice: ids, gonePerDay };
}

function pct(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

/** The first few of `ids`, for a message. */
export function listed(ids: readonly string[]): string {
  return `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}`;
}

/** Rewrites the typed snapshot `file` with each of `ids` (served more than once, with the same content) kept once; resolves to its rows. */
export async function keepOnce(
  db: Database,
  file: string,
  ids: readonly string[],
): Promise<number> {
  const once = `${file}.once`;
  const source = `read_parquet(${quotedString(file)})`;
  const list = `[${ids.map(quotedString).join(', ')}]`;
  const rows = await db.copy(
    await portableCopySql(
      db,
      `(SELECT * FROM ${source} WHERE NOT list_contains(${list}, sign_id::VARCHAR)
        UNION ALL (SELECT DISTINCT ON (sign_id) * FROM ${source} WHERE list_contains(${list}, sign_id::VARCHAR)))`,
      once,
      { spatialOrder: false },
    ),
  );
  await rename(once, file);
  return rows;
}
