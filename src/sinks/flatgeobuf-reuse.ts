/**
 * A FlatGeobuf extract written from the last night's (record-reuse.ts): the
 * features are in Hilbert order, equal keys by their row's fingerprint, and
 * a feature's bytes are its row's alone, so a row whose fingerprint the last
 * file holds gets that file's feature, copied; the others are encoded. The
 * order, the positions and the tree come from narrow rows (position, key,
 * fingerprint) sorted by DuckDB, and the tree is known before the features
 * are written: the file is written and hashed from its first byte to its last.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import type { Column, ExportSource } from './columns.js';
import type { ExportResult } from './exports.js';
import { packedTree } from './flatgeobuf-format.js';
import { eachFeature } from './flatgeobuf-features.js';
import { NODE_SIZE, headOf, type Indexing, type Points } from './flatgeobuf.js';
import { RecordLookup, readIndex, writeIndex, type RecordIndex } from './record-index.js';
import {
  MADE,
  PLAN_TABLE,
  forgetFingerprints,
  keepFingerprints,
  keptFingerprints,
  letGo,
  setApart,
} from './record-plan.js';
import { MOST_CHANGED } from './record-reuse.js';
import { COPY_BUFFER, HashedOut, copy } from './record-splice.js';
import { ROW_HASH } from './row-order.js';

interface Job {
  path: string;
  scratch: string;
  index: string;
  making: string;
  columns: readonly Column[];
}

/** A write from the last file: the index, and whether the rows to make were set apart in the first scan. */
interface From extends Job {
  last: RecordIndex;
  setApart: boolean;
  hashes: string;
}

interface Plan {
  xs: Float64Array;
  ys: Float64Array;
  hi: Uint32Array;
  lo: Uint32Array;
  /** Each feature's record in the last file, or -1. */
  from: Int32Array;
  made: number;
  fingerprints: string[];
}

/** The features' positions and fingerprints in the file's order, and which the last file has. */
async function planOf(db: Database, points: Points, job: From): Promise<Plan | undefined> {
  const { last } = job;
  const count = points.count;
  const plan: Plan = {
    xs: new Float64Array(count),
    ys: new Float64Array(count),
    hi: new Uint32Array(count),
    lo: new Uint32Array(count),
    from: new Int32Array(count),
    made: 0,
    fingerprints: [],
  };
  const lookup = new RecordLookup(last);
  const distinct = new Set<string>();
  const result = await db.connection.stream(points.narrowOf(PLAN_TABLE));
  let n = 0;
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    const [x, y, , hi, lo] = [0, 1, 2, 3, 4].map((c) => chunk!.getColumnVector(c));
    for (let row = 0, rows = chunk.rowCount; row < rows; row++, n++) {
      if (n >= count) throw new Error('the source gave more rows than it counted');
      plan.xs[n] = x!.getItem(row) as number;
      plan.ys[n] = y!.getItem(row) as number;
      const h = (plan.hi[n] = hi!.getItem(row) as number);
      const l = (plan.lo[n] = lo!.getItem(row) as number);
      const found = lookup.find(h, l);
      plan.from[n] = found;
      if (found >= 0) continue;
      if (++plan.made > MOST_CHANGED * count && !job.setApart) return undefined;
      distinct.add(((BigInt(h) << 32n) | BigInt(l)).toString());
    }
  }
  if (n !== count) throw new Error(`the source gave ${n} rows where it counted ${count}`);
  plan.fingerprints = [...distinct];
  return plan;
}

/** The features of the rows that changed, encoded, in the file's order. */
async function madeFeatures(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  plan: Plan,
  setApart: boolean,
): Promise<Uint8Array[]> {
  const made: Uint8Array[] = [];
  if (plan.made === 0) return made;
  const sql = setApart
    ? points.rowsOf(
        `(SELECT unnest(${MADE}), ${ROW_HASH} FROM ${PLAN_TABLE} WHERE ${MADE} IS NOT NULL)`,
      )
    : points.where(
        `WHERE ${ROW_HASH} IN (SELECT unnest([${plan.fingerprints.join(', ')}]::UBIGINT[]))`,
      );
  await eachFeature(db, points, sql, setApart ? {} : params, (_key, _x, _y, feature) => {
    made.push(feature.slice());
  });
  if (made.length !== plan.made)
    throw new Error(`made ${made.length} features of the ${plan.made} rows that changed`);
  return made;
}

/**
 * The extract of `points` at `job.path` from the last one; undefined when
 * more than MOST_CHANGED of its rows changed (it is then written whole).
 */
async function patchFlatGeobuf(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  job: From,
): Promise<ExportResult | undefined> {
  const { last } = job;
  const count = points.count;
  if (count === 0) return undefined;
  const plan = await planOf(db, points, job);
  if (!plan) return undefined;
  const made = await madeFeatures(db, points, params, plan, job.setApart);
  const kept = await keepFingerprints(db, job.index, job.scratch);
  await letGo(db);
  const lengths = new Uint32Array(count);
  const offsets = new Float64Array(count);
  let at = 0;
  for (let i = 0, k = 0; i < count; i++) {
    const j = plan.from[i]!;
    lengths[i] = j >= 0 ? last.lengths[j]! : made[k++]!.length;
    offsets[i] = at;
    at += lengths[i]!;
  }
  const { head, tree } = headOf(points, job.path);
  const treeBytes = packedTree(plan.xs, plan.ys, offsets, NODE_SIZE);
  if (treeBytes.length !== tree) throw new Error('the tree is not the size its features give');
  return writeThrough(job.path, job.scratch, async (temporary) => {
    const handle = await open(temporary, 'wx');
    let from: FileHandle | undefined;
    try {
      from = await open(job.path, 'r');
      const out = new HashedOut(handle);
      const buffer = Buffer.allocUnsafe(COPY_BUFFER);
      await out.write(head);
      await out.write(treeBytes);
      let run: [start: number, end: number] | undefined;
      for (let i = 0, k = 0; i < count; i++) {
        const j = plan.from[i]!;
        const start = j >= 0 ? last.offsets[j]! : -1;
        if (run && start === run[1]) {
          run[1] += lengths[i]!;
          continue;
        }
        if (run) await copy(from, run[0], run[1], out, buffer);
        run = undefined;
        if (j >= 0) run = [start, start + lengths[i]!];
        else await out.write(made[k++]!);
      }
      if (run) await copy(from, run[0], run[1], out, buffer);
      await handle.sync();
      const laid = {
        fingerprint: job.making,
        prefix: head.length + tree,
        separator: '',
        suffix: 0,
        hashes: kept,
        made: plan.made,
      };
      await writeIndex(job.index, job.scratch, temporary, laid, { ...plan, lengths });
      await forgetFingerprints(job.index, laid.hashes.file);
      return {
        rows: count,
        withoutGeometry: count - points.located,
        sha256: out.hash.digest('hex'),
        reused: count - plan.made,
      };
    } finally {
      await handle.close();
      await from?.close();
    }
  });
}

/**
 * Writes the FlatGeobuf of `points` at `job.path` from the last one where it
 * can, else whole (`whole`), keeping its index. The rows' positions and
 * fingerprints are set apart first (with the rows to make, when the last
 * night copied most of its features), so that the order and the tree need
 * no second scan of the source.
 */
export async function reusingFlatGeobuf(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  job: Job,
  whole: (indexing: Indexing) => Promise<ExportResult>,
): Promise<ExportResult> {
  let last = await readIndex(job.index, job.path, job.making);
  const hashes = last && (await keptFingerprints(db, job.index, last.meta.hashes));
  if (!hashes) last = undefined;
  const setApartToo = last !== undefined && (last.meta.made ?? 0) <= MOST_CHANGED * last.meta.count;
  try {
    const rows = { keyed: points.keyed, keep: points.positionColumns, columns: job.columns };
    await setApart(db, rows, params, setApartToo ? hashes : undefined);
    await db.releaseMemory();
    if (last && hashes) {
      const from = { ...job, last, setApart: setApartToo, hashes };
      const patched = await patchFlatGeobuf(db, points, params, from);
      if (patched) return patched;
    }
    const kept = await keepFingerprints(db, job.index, job.scratch);
    await letGo(db);
    return await whole({
      index: job.index,
      making: job.making,
      hashes: kept,
      made: last ? points.count : undefined,
    });
  } finally {
    await db.run(`DROP TABLE IF EXISTS ${PLAN_TABLE}`);
  }
}
