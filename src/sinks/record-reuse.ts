/**
 * A nightly extract written from the last night's: the rows whose
 * fingerprint (row-order.ts) a record of the last file has are copied from
 * it, byte for byte, and only the others are made by DuckDB. A national
 * extract of today's signs is 2.9M rows of which a day changes about a
 * thousand; making them all again was most of a night.
 *
 * The file is the same as one made whole: the records are each a function of
 * their row alone (the index says with which columns, options and versions,
 * record-index.ts), in the same order (the source's, ties broken by the
 * fingerprint), with the same bytes between them. When there is no index of
 * the file in place, the file is made whole, and its index with it; so it is
 * when more than a twentieth of the rows changed.
 *
 * A night reads the source twice: once for every row's keys and
 * fingerprint (set apart in a staging file, record-plan.ts), once for the
 * rows to make. Setting those apart in the first read as well costs more
 * than the second read: a column of mostly NULL rows is dear to write, and
 * a table of them holds more than a gigabyte in DuckDB's memory.
 */
import { rm } from 'node:fs/promises';
import type { Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import type { Column, ExportSource } from './columns.js';
import { RecordLookup, readIndex, writeIndex, type RecordIndex } from './record-index.js';
import { splice, type Laid } from './record-splice.js';
import { PLAN_TABLE, keptPlanRows, letGo, setApart, type Apart } from './record-plan.js';
import { keepOrder, keptOrder, sharedRows } from './shared-rows.js';

export type { Laid } from './record-splice.js';
import { ORDERED_ROWS, ROW_HASH, withFingerprints, type RowOrder } from './row-order.js';

/** The largest share of changed rows for which a file is put together from the last one. */
export const MOST_CHANGED = 0.05;

export interface ReusingWriter {
  db: Database;
  params: ExportSource['params'];
  order: RowOrder;
  /** What makes a record's bytes (format, columns, options, versions). */
  fingerprint: string;
  /** The bytes between two records. */
  separator: string;
  /** Writes the whole file, every row in order, to `temporary`: its records and SHA-256. */
  writeAll(temporary: string, orderBy: string): Promise<Laid & { rows: number; sha256: string }>;
  /** Writes `rows` (a FROM item and its ORDER BY, with `params`) to `file`, records apart as in the whole file. */
  writeSome(file: string, rows: string, params: ExportSource['params']): Promise<Laid>;
  /** The source's columns (ROW_HASH is their fingerprint). */
  columns: readonly Column[];
  /** The print of the data the source reads, when what is read may serve the next extract (shared-rows.ts). */
  data?: string | undefined;
}

interface Plan {
  hi: Uint32Array;
  lo: Uint32Array;
  /** Each row's record in the last file, or -1. */
  from: Int32Array;
  /** The rows to make, and their distinct fingerprints (as SQL numbers). */
  made: number;
  fingerprints: Set<string>;
}

/**
 * The rows' fingerprints in order (narrow rows: DuckDB sorts the keys and
 * the number only), as an extract of the same rows in the same order put
 * them before in this run (`kept`: the plan's key), or read and kept.
 */
async function orderedPrints(
  writer: ReusingWriter,
  kept: string | undefined,
): Promise<{ hi: Uint32Array; lo: Uint32Array }> {
  const key = kept === undefined ? undefined : JSON.stringify([kept, writer.order.orderBy]);
  const held = key === undefined ? undefined : keptOrder(writer.db, key);
  if (held) return held;
  const [counted] = await writer.db.all(`SELECT count(*) AS n FROM ${PLAN_TABLE}`);
  const count = Number(counted?.['n']);
  const prints = { hi: new Uint32Array(count), lo: new Uint32Array(count) };
  const result = await writer.db.connection.stream(
    `SELECT (${ROW_HASH} >> 32)::UINTEGER AS hi, (${ROW_HASH} & 4294967295)::UINTEGER AS lo ` +
      `FROM ${PLAN_TABLE} AS ${ORDERED_ROWS} ${writer.order.orderBy}`,
  );
  let n = 0;
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    if (n + chunk.rowCount > count)
      throw new Error('the rows set apart gave more than they counted');
    const hiVector = chunk.getColumnVector(0);
    const loVector = chunk.getColumnVector(1);
    for (let row = 0, size = chunk.rowCount; row < size; row++, n++) {
      prints.hi[n] = hiVector.getItem(row) as number;
      prints.lo[n] = loVector.getItem(row) as number;
    }
  }
  if (n !== count) throw new Error(`the rows set apart gave ${n} where they counted ${count}`);
  if (key !== undefined) keepOrder(writer.db, { key, ...prints });
  return prints;
}

/** The rows' fingerprints in order, and which of them the last file has. */
async function planOf(
  writer: ReusingWriter,
  old: RecordIndex | undefined,
  kept: string | undefined,
): Promise<Plan> {
  const { hi, lo } = await orderedPrints(writer, kept);
  const count = hi.length;
  const plan: Plan = {
    hi,
    lo,
    from: new Int32Array(count).fill(-1),
    made: 0,
    fingerprints: new Set(),
  };
  const lookup = old ? new RecordLookup(old) : undefined;
  for (let i = 0; i < count; i++) {
    const found = lookup ? lookup.find(plan.hi[i]!, plan.lo[i]!) : -1;
    plan.from[i] = found;
    if (found >= 0) continue;
    plan.made++;
    if (lookup && plan.made <= MOST_CHANGED * count)
      plan.fingerprints.add(((BigInt(plan.hi[i]!) << 32n) | BigInt(plan.lo[i]!)).toString());
  }
  return plan;
}

export interface Reused {
  rows: number;
  sha256: string;
  /** Rows whose record came from the last file. */
  reused: number;
}

/** Writes the extract at `path` from the last one where it can (see above), and its index. */
export async function writeReusing(
  path: string,
  scratch: string,
  indexPath: string,
  writer: ReusingWriter,
): Promise<Reused> {
  const old = await readIndex(indexPath, path, writer.fingerprint);
  const { keyed, keys, orderBy } = writer.order;
  let apart: Apart | undefined;
  try {
    const rows = { keyed, keep: keys, columns: writer.columns };
    apart = await setApart(writer.db, rows, writer.params, scratch, writer.data);
    await writer.db.releaseMemory();
    const plan = await planOf(writer, old, apart.kept);
    await letGo(writer.db, apart);
    const count = plan.from.length;
    const index = async (temporary: string, laid: Omit<Laid, 'lengths'>, lengths: Uint32Array) => {
      const description = {
        fingerprint: writer.fingerprint,
        prefix: laid.prefix,
        separator: writer.separator,
        suffix: laid.suffix,
      };
      await writeIndex(indexPath, scratch, temporary, description, { ...plan, lengths });
    };
    return await writeThrough(path, scratch, async (temporary) => {
      const patched =
        old && count > 0 && plan.made <= MOST_CHANGED * count
          ? await patch(temporary, { path, index: old }, writer, plan)
          : undefined;
      if (patched) {
        await index(temporary, old!.meta, patched.lengths);
        return { rows: count, sha256: patched.sha256, reused: count - plan.made };
      }
      await rm(temporary, { force: true });
      const all = await writer.writeAll(temporary, orderBy);
      if (all.lengths.length === count && all.rows === count)
        await index(temporary, all, all.lengths);
      else await rm(indexPath, { force: true });
      return { rows: all.rows, sha256: all.sha256, reused: 0 };
    });
  } finally {
    await letGo(writer.db, apart);
  }
}

/**
 * The new file at `temporary` from the last one and the rows made anew;
 * undefined (nothing written) when DuckDB made other rows than the index
 * says changed, which only a damaged index could bring about.
 */
async function patch(
  temporary: string,
  last: { path: string; index: RecordIndex },
  writer: ReusingWriter,
  plan: Plan,
): Promise<{ sha256: string; lengths: Uint32Array } | undefined> {
  const madePath = `${temporary}.rows`;
  try {
    const rows = `${await madeRows(writer, [...plan.fingerprints])} ${writer.order.orderBy}`;
    const laid =
      plan.made === 0
        ? { prefix: 0, suffix: 0, lengths: new Uint32Array(0) }
        : await writer.writeSome(madePath, rows, writer.params);
    if (laid.lengths.length !== plan.made) return undefined;
    return await splice(temporary, last, { path: madePath, laid }, plan, writer.separator);
  } finally {
    await rm(madePath, { force: true });
  }
}

/**
 * The rows to make (by their fingerprints), as a FROM item named as the keyed
 * rows are. Where the plan of these rows is kept and the order has one key,
 * the source is read for the keys of those rows alone (the plan has them),
 * so that only their fingerprints are made, not every row's. (A key the plan
 * did not give back as it was would leave a row unmade: patch then finds
 * fewer rows than the plan says and the file is written whole.)
 */
function madeRows(writer: ReusingWriter, fingerprints: string[]): Promise<string> | string {
  const { db, data, params } = writer;
  const { keyed, rows, keys, narrowed } = writer.order;
  if (data === undefined || fingerprints.length === 0)
    return `${keyed} WHERE ${withFingerprints(fingerprints)}`;
  const plan = narrowed && keptPlanRows(db, { keyed, columns: writer.columns }, keys, params, data);
  const read =
    plan && narrowed(`(SELECT ${keys[0]!} FROM ${plan} WHERE ${withFingerprints(fingerprints)})`);
  return sharedRows(db, data, rows, fingerprints, params, read);
}
