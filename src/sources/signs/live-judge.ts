/**
 * Whether a typed current state may become the day's truth (signs.live): a
 * snapshot that leaves out far more of the last one's signs than a real day
 * removes is upstream trouble, not the truth.
 */
import { quotedString, type Database } from '../../duckdb/database.js';

/**
 * 53 bits of the hash of each sign id of `from`, sorted: two national
 * snapshots' ids in 46 MB of the process, where DuckDB's join of them took
 * 400 MB. Two ids in three million share the bits once in some thousands of
 * nights, which a share of signs gone does not feel.
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

/** Signs gone that no share makes implausible. */
const FEW_GONE = 10;

/**
 * Why a typed snapshot cannot be the day's truth: it holds no sign, or it
 * leaves out more than `maxGone` of the last snapshot's signs, and more than
 * FEW_GONE (a real day
 * removes a few hundred of two million; an answer cut short or emptied by a
 * troubled service, far more). Growth never counts against it. Undefined when
 * it may land; `maxGone` 1 lets anything through.
 */
export async function judgeSnapshot(
  db: Database,
  snapshot: { file: string; rows: number; features: number; maxGone: number },
): Promise<string | undefined> {
  const { file, rows, features, maxGone } = snapshot;
  if (maxGone >= 1) return undefined;
  if (features === 0)
    return 'the answer holds no sign (an empty FeatureCollection); if that is the truth, let it through with max_gone: 1';
  const [last] = await db.all(
    `SELECT count(*) AS before, strftime(max(downloaded_at) AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS moment FROM signs_live`,
  );
  const before = Number(last?.['before'] ?? 0);
  const gone =
    before === 0
      ? 0
      : missing(
          await idPrints(db, 'signs_live', before),
          await idPrints(db, `read_parquet(${quotedString(file)})`, rows),
        );
  // A share of a handful of signs says nothing: a two-sign selection with one replaced is a day like any.
  if (before === 0 || gone <= maxGone * before || gone <= FEW_GONE) return undefined;
  const pct = (n: number) => `${Math.round((n * 1000) / before) / 10}%`;
  return (
    `the answer is implausible: it holds ${rows} sign(s), and leaves out ${gone} of the ${before} signs of the last snapshot (${String(last?.['moment'])}), ${pct(gone)}, more than max_gone ${maxGone * 100}%; ` +
    `if the change is real, let it through with max_gone (a param of traffic-signs-live.yaml)`
  );
}
