/**
 * A FlatGeobuf extract written from the last night's (record-reuse.ts): the
 * features are in Hilbert order, equal keys by their row's fingerprint, and
 * a feature's bytes are its row's alone, so a row whose fingerprint the last
 * file holds gets that file's feature, copied; the others are encoded. The
 * order, the positions and the tree come from narrow rows (position, key,
 * fingerprint) set apart in one read of the source and put in order here,
 * and the tree is known before the features are written: the file is
 * written and hashed from its first byte to its last. A second read
 * encodes the rows that changed.
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
import { PLAN_TABLE, letGo, setApart, type Apart } from './record-plan.js';
import { MOST_CHANGED } from './record-reuse.js';
import { COPY_BUFFER, HashedOut, copy } from './record-splice.js';
import { ORDERED_ROWS, withFingerprints } from './row-order.js';
import { sharedRows } from './shared-rows.js';
import { permuted, radixOrder } from '../util/radix-order.js';

interface Job {
  path: string;
  scratch: string;
  index: string;
  making: string;
  columns: readonly Column[];
  /** The print of the data and the keyed rows (unnamed) by which the rows that changed are shared (shared-rows.ts). */
  shared?: { data: string; keyed: string } | undefined;
}

/** A write from the last file, and its index. */
interface From extends Job {
  last: RecordIndex;
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

interface Narrow {
  xs: Float64Array;
  ys: Float64Array;
  /** The Hilbert value's bit 32 (the value of features without a position) and its lower 32 bits. */
  above: Uint32Array;
  key: Uint32Array;
  hi: Uint32Array;
  lo: Uint32Array;
}

/** The narrow rows as they come: positions, sort keys (the Hilbert value's two parts) and fingerprints. */
async function narrowRows(db: Database, points: Points): Promise<Narrow> {
  const count = points.count;
  const rows: Narrow = {
    xs: new Float64Array(count),
    ys: new Float64Array(count),
    above: new Uint32Array(count),
    key: new Uint32Array(count),
    hi: new Uint32Array(count),
    lo: new Uint32Array(count),
  };
  const result = await db.connection.stream(points.narrowOf(PLAN_TABLE));
  let n = 0;
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    if (n + chunk.rowCount > count) throw new Error('the source gave more rows than it counted');
    const [x, y, key, hi, lo] = [0, 1, 2, 3, 4].map((c) => chunk!.getColumnVector(c));
    for (let row = 0, size = chunk.rowCount; row < size; row++, n++) {
      rows.xs[n] = x!.getItem(row) as number;
      rows.ys[n] = y!.getItem(row) as number;
      const k = key!.getItem(row) as number; // an integer in [0, 2^32]
      rows.above[n] = Math.floor(k / 2 ** 32);
      rows.key[n] = k % 2 ** 32;
      rows.hi[n] = hi!.getItem(row) as number;
      rows.lo[n] = lo!.getItem(row) as number;
    }
  }
  if (n !== count) throw new Error(`the source gave ${n} rows where it counted ${count}`);
  return rows;
}

/**
 * The features' positions and fingerprints in the file's order (the Hilbert
 * value, then the fingerprint, as the whole write orders them), and which
 * the last file has.
 */
async function planOf(db: Database, points: Points, last: RecordIndex): Promise<Plan | undefined> {
  const { xs, ys, above, key, hi, lo } = await narrowRows(db, points);
  const order = radixOrder([above, key, hi, lo], points.count);
  const plan: Plan = {
    xs: permuted(xs, order),
    ys: permuted(ys, order),
    hi: permuted(hi, order),
    lo: permuted(lo, order),
    from: new Int32Array(points.count),
    made: 0,
    fingerprints: [],
  };
  const lookup = new RecordLookup(last);
  const distinct = new Set<string>();
  for (let n = 0; n < points.count; n++) {
    const h = plan.hi[n]!;
    const l = plan.lo[n]!;
    const found = lookup.find(h, l);
    plan.from[n] = found;
    if (found >= 0) continue;
    if (++plan.made > MOST_CHANGED * points.count) return undefined;
    distinct.add(((BigInt(h) << 32n) | BigInt(l)).toString());
  }
  plan.fingerprints = [...distinct];
  return plan;
}

/** The features of the rows that changed, encoded, in the file's order. */
async function madeFeatures(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  plan: Plan,
  shared: Job['shared'],
): Promise<Uint8Array[]> {
  const made: Uint8Array[] = [];
  if (plan.made === 0) return made;
  const sql = shared
    ? points.rowsOf(await sharedRows(db, shared.data, shared.keyed, plan.fingerprints, params))
    : points.where(`WHERE ${withFingerprints(plan.fingerprints)}`);
  await eachFeature(db, points, sql, params, (_key, _x, _y, feature) => {
    made.push(feature.slice());
  });
  if (made.length !== plan.made)
    throw new Error(`made ${made.length} features of the ${plan.made} rows that changed`);
  return made;
}

/** Writes the tree of the features in the plan's order, of `lengths`, to `out`; resolves to its size. */
async function writeTree(out: HashedOut, plan: Plan, lengths: Uint32Array): Promise<number> {
  let at = 0;
  const offsetOf = (i: number) => {
    const offset = at;
    at += lengths[i]!;
    return offset;
  };
  let written = 0;
  for (const part of packedTree(plan.xs, plan.ys, offsetOf, NODE_SIZE)) {
    await out.write(part);
    written += part.length;
  }
  return written;
}

/** The extract of `points` at `job.path` from the last one, in the order of `plan`. */
async function patchFlatGeobuf(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  job: From,
  plan: Plan,
): Promise<ExportResult> {
  const { last } = job;
  const count = points.count;
  const made = await madeFeatures(db, points, params, plan, job.shared);
  const lengths = new Uint32Array(count);
  for (let i = 0, k = 0; i < count; i++) {
    const j = plan.from[i]!;
    lengths[i] = j >= 0 ? last.lengths[j]! : made[k++]!.length;
  }
  const { head, tree } = headOf(points, job.path);
  return writeThrough(job.path, job.scratch, async (temporary) => {
    const handle = await open(temporary, 'wx');
    let from: FileHandle | undefined;
    try {
      from = await open(job.path, 'r');
      const out = new HashedOut(handle);
      const buffer = Buffer.allocUnsafe(COPY_BUFFER);
      await out.write(head);
      if ((await writeTree(out, plan, lengths)) !== tree)
        throw new Error('the tree is not the size its features give');
      let run: [start: number, end: number] | undefined;
      let previous = -2;
      for (let i = 0, k = 0; i < count; i++) {
        const j = plan.from[i]!;
        if (run && j >= 0 && j === previous + 1) {
          run[1] += lengths[i]!;
          previous = j;
          continue;
        }
        previous = j;
        if (run) await copy(from, run[0], run[1], out, buffer);
        run = undefined;
        if (j >= 0) {
          const start = last.offsetOf(j);
          run = [start, start + lengths[i]!];
        } else await out.write(made[k++]!);
      }
      if (run) await copy(from, run[0], run[1], out, buffer);
      await handle.sync();
      const laid = {
        fingerprint: job.making,
        prefix: head.length + tree,
        separator: '',
        suffix: 0,
      };
      await writeIndex(job.index, job.scratch, temporary, laid, { ...plan, lengths });
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
 * fingerprints are set apart first, so that the order and the tree are
 * known before the file is written.
 */
export async function reusingFlatGeobuf(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  job: Job,
  whole: (indexing: Indexing) => Promise<ExportResult>,
): Promise<ExportResult> {
  const last = await readIndex(job.index, job.path, job.making);
  const indexing = { index: job.index, making: job.making };
  if (!last || points.count === 0) return whole(indexing);
  let apart: Apart | undefined;
  let plan: Plan | undefined;
  try {
    // In the words of a CSV or GeoJSON extract of the same rows, whose plan the run may have kept.
    const keyed = job.shared ? `${job.shared.keyed} AS ${ORDERED_ROWS}` : points.keyed;
    const rows = { keyed, keep: points.positionColumns, columns: job.columns };
    apart = await setApart(db, rows, params, job.scratch, job.shared?.data);
    await db.releaseMemory();
    plan = await planOf(db, points, last);
  } finally {
    await letGo(db, apart);
  }
  return plan ? patchFlatGeobuf(db, points, params, { ...job, last }, plan) : whole(indexing);
}
