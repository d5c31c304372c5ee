/**
 * The features of a FlatGeobuf extract encoded from DuckDB's chunks: each
 * column's FlatGeobuf type and the SQL that gives its value, and the encoder
 * that lays out a row's properties and wraps them in a point feature.
 */
import { DuckDBBlobVector, type DuckDBVector } from '@duckdb/node-api';
import { Builder } from 'flatbuffers';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { isNested, isTimestamp, isoTimestamp, type Column, type ExportSource } from './columns.js';
import { ColumnType, buildPointFeature } from './flatgeobuf-format.js';

/** The rows as the writer reads them, and what the header says of them. */
export interface Points {
  properties: Property[];
  /** h_lon, h_lat (NaN without a valid position), h_text, l0.., the numbers p.., h_key (the sort key). */
  sql: string;
  count: number;
  located: number;
  envelope: [number, number, number, number] | undefined;
  /** The sort keys that part the features into buckets of about a bucket's features, ascending (a scan). */
  bounds: () => Promise<number[]>;
}

/** How a property's value reaches the encoder. */
export type Encoding = 'text' | 'bool' | 'int' | 'long' | 'double';

export interface Property {
  name: string;
  type: ColumnType;
  encoding: Encoding;
  /** The SQL giving the value: text as VARCHAR, else a BOOLEAN, INTEGER, BIGINT or DOUBLE. */
  sql: string;
}

/** A column's FlatGeobuf type, and the SQL that gives its value in the form written. */
export function propertyOf(column: Column): Property {
  const ref = quotedIdentifier(column.name);
  const as = (type: ColumnType, encoding: Encoding, sql: string): Property => ({
    name: column.name,
    type,
    encoding,
    sql,
  });
  const text = (type: ColumnType, sql = ref): Property => as(type, 'text', `(${sql})::VARCHAR`);
  const t = column.type;
  if (t === 'BOOLEAN') return as(ColumnType.Bool, 'bool', ref);
  if (['TINYINT', 'SMALLINT', 'INTEGER', 'UTINYINT', 'USMALLINT'].includes(t))
    return as(ColumnType.Int, 'int', `${ref}::INTEGER`);
  if (t === 'BIGINT' || t === 'UINTEGER') return as(ColumnType.Long, 'long', `${ref}::BIGINT`);
  if (t === 'FLOAT' || t === 'DOUBLE' || t.startsWith('DECIMAL'))
    return as(ColumnType.Double, 'double', `${ref}::DOUBLE`);
  if (isTimestamp(t)) return text(ColumnType.DateTime, isoTimestamp(column));
  if (t === 'DATE') return text(ColumnType.DateTime, `strftime(${ref}, '%Y-%m-%d')`);
  if (isNested(t) || t === 'JSON') return text(ColumnType.Json, `to_json(${ref})`);
  return text(ColumnType.String); // VARCHAR, ENUM; HUGEINT, UUID, TIME, INTERVAL... as DuckDB writes them
}

/**
 * The columns of a chunk as the encoder reads them, none of them NULL (a
 * vector with NULLs costs a test of its validity, in BigInt arithmetic, for
 * each value read): per property its length, the bytes of a text value or 0
 * for a number, -1 when there is no value; the value of each number (a
 * number, a bigint, a boolean); and the text of all of a row's text values as
 * one BLOB, one after the other, so that a row costs one read of bytes.
 */
export interface ChunkColumns {
  text: DuckDBBlobVector | undefined;
  lengths: DuckDBVector[];
  /** By property; undefined for text. */
  values: (DuckDBVector | undefined)[];
}

/**
 * The SQL of ChunkColumns: `position` (a SELECT of h_lon and h_lat) with each
 * property's value, over `source`; then h_lon, h_lat, h_text, each property's
 * length l0.. and each number p.. (in the order of the properties). Each
 * value is computed once, in the inner projection.
 */
export function chunkColumnsSql(
  properties: readonly Property[],
  position: string,
  source: string,
): string {
  const texts = properties.flatMap((p, i) => (p.encoding === 'text' ? [`t${i}`] : []));
  const inner =
    position +
    properties.map((p, i) => `, ${p.sql} AS ${p.encoding === 'text' ? 't' : 'p'}${i}`).join('') +
    ` FROM ${source}`;
  const zero = { bool: 'false', int: '0', long: '0', double: '0' } as const;
  return (
    `SELECT h_lon, h_lat, ` +
    (texts.length > 0 ? `encode(concat(${texts.join(', ')}))` : `''::BLOB`) +
    ` AS h_text` +
    properties
      .map((p, i) =>
        p.encoding === 'text'
          ? `, coalesce(strlen(t${i}), -1)::INTEGER AS l${i}`
          : `, CASE WHEN p${i} IS NULL THEN -1 ELSE 0 END::INTEGER AS l${i}`,
      )
      .join('') +
    properties
      .map((p, i) =>
        p.encoding === 'text' ? '' : `, coalesce(p${i}, ${zero[p.encoding]}) AS p${i}`,
      )
      .join('') +
    ` FROM (${inner})`
  );
}

/** Encodes the properties of features one after the other into one buffer, reused. */
export class FeatureEncoder {
  readonly #builder = new Builder(4096);
  #bytes = new Uint8Array(64 * 1024);
  #view = new DataView(this.#bytes.buffer);
  readonly #encodings: Encoding[];

  constructor(properties: Property[]) {
    this.#encodings = properties.map((p) => p.encoding);
  }

  #room(offset: number, size: number): void {
    if (offset + size <= this.#bytes.length) return;
    const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, offset + size));
    bigger.set(this.#bytes);
    this.#bytes = bigger;
    this.#view = new DataView(bigger.buffer);
  }

  /**
   * The properties of one row as FlatGeobuf lays them out: (column index u16,
   * value) for each value present; text as its length (u32) and its UTF-8
   * bytes, copied from the row's text as DuckDB gave it.
   */
  #properties(columns: ChunkColumns, row: number): number {
    const text = columns.text?.getItemBytes(row) ?? EMPTY;
    let at = 0; // in text
    let o = 0;
    for (let i = 0; i < this.#encodings.length; i++) {
      const length = columns.lengths[i]!.getItem(row) as number;
      if (length < 0) continue;
      const encoding = this.#encodings[i];
      if (encoding === 'text') {
        this.#room(o, 6 + length);
        this.#view.setUint16(o, i, true);
        this.#view.setUint32(o + 2, length, true);
        o += 6;
        if (length < 32) for (let b = 0; b < length; b++) this.#bytes[o + b] = text[at + b]!;
        else this.#bytes.set(text.subarray(at, at + length), o);
        o += length;
        at += length;
        continue;
      }
      const value = columns.values[i]!.getItem(row);
      this.#room(o, 2 + 8);
      this.#view.setUint16(o, i, true);
      o += 2;
      if (encoding === 'bool') {
        this.#view.setUint8(o, value === true ? 1 : 0);
        o += 1;
      } else if (encoding === 'int') {
        this.#view.setInt32(o, value as number, true);
        o += 4;
      } else if (encoding === 'long') {
        this.#view.setBigInt64(o, value as bigint, true);
        o += 8;
      } else {
        this.#view.setFloat64(o, value as number, true);
        o += 8;
      }
    }
    return o;
  }

  /** One feature, size-prefixed; valid until the next call. */
  encode(x: number | null, y: number | null, columns: ChunkColumns, row: number): Uint8Array {
    this.#builder.clear();
    const length = this.#properties(columns, row);
    return buildPointFeature(this.#builder, x, y, this.#bytes.subarray(0, length));
  }
}

const EMPTY = new Uint8Array(0);

/** A feature as DuckDB's rows give it: its sort key, position and bytes (valid until the next). */
type Visit = (key: number, x: number, y: number, feature: Uint8Array) => Promise<void> | void;

/** Encodes each row of the points as a feature and hands it to `visit`, in the rows' order. */
export async function eachFeature(
  db: Database,
  points: Points,
  params: ExportSource['params'],
  visit: Visit,
): Promise<void> {
  const { properties } = points;
  const encoder = new FeatureEncoder(properties);
  const result = await db.connection.stream(points.sql, params);
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    const lon = chunk.getColumnVector(0);
    const lat = chunk.getColumnVector(1);
    const text = chunk.getColumnVector(2);
    let next = 3 + properties.length;
    const columns: ChunkColumns = {
      text: text instanceof DuckDBBlobVector ? text : undefined,
      lengths: properties.map((_, i) => chunk!.getColumnVector(3 + i)),
      values: properties.map((p) =>
        p.encoding === 'text' ? undefined : chunk!.getColumnVector(next++),
      ),
    };
    const key = chunk.getColumnVector(next);
    for (let row = 0, rows = chunk.rowCount; row < rows; row++) {
      const x = lon.getItem(row) as number; // NaN: no position
      const y = lat.getItem(row) as number;
      const located = !Number.isNaN(x);
      const feature = encoder.encode(located ? x : null, located ? y : null, columns, row);
      await visit(key.getItem(row) as number, x, y, feature);
    }
  }
}
