/**
 * A GeoJSON FeatureCollection of points (RFC 7946). DuckDB's JSON writer
 * makes the features, on every thread, as a JSON array (a row a Feature: its
 * type, id, geometry and properties, in the order of the source, a feature a
 * line); the collection is that array between its opening and its closing,
 * put together as the array is copied into the file, and hashed as it goes
 * (which spares the manifest reading it again). With an index, the features
 * of rows that did not change are copied from the last file (record-reuse.ts).
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import {
  describe,
  isTimestamp,
  isoTimestamp,
  pointColumns,
  type Column,
  type ExportSource,
  type GeometryColumns,
} from './columns.js';
import type { ExportResult } from './exports.js';
import { keptPlanRows } from './record-plan.js';
import { writeReusing, type Laid } from './record-reuse.js';
import { RecordScanner, scanFile } from './record-scan.js';
import { makingOf, rowOrder } from './row-order.js';
import { writing } from './writing.js';

const OPENING = Buffer.from('{"type":"FeatureCollection","features":');
const CLOSING = Buffer.from('}\n');
/** DuckDB's JSON array: `[`, a line each feature, `,` between them, `]`. */
const ARRAY_OPENING = 2; // "[\n"
const ARRAY_CLOSING = 3; // "\n]\n"

/** A JSON value expression for a column: timestamps as ISO 8601 UTC text, the rest as DuckDB's JSON does it. */
function jsonValue(column: Column): string {
  return isTimestamp(column.type) ? isoTimestamp(column) : quotedIdentifier(column.name);
}

/** The features of a DuckDB JSON array's lines (the first and last lines are its brackets). */
function featuresOf(lines: Uint32Array): Uint32Array {
  return lines.length >= 2 ? lines.subarray(1, lines.length - 1) : new Uint32Array(0);
}

/** The collection put together around the array file `array` into `target`: its records and SHA-256. */
async function collect(array: string, target: string): Promise<Laid & { sha256: string }> {
  const hash = createHash('sha256');
  const scanner = new RecordScanner('json-array');
  await pipeline(
    async function* () {
      yield OPENING;
      for await (const bytes of createReadStream(array, { highWaterMark: 1 << 20 })) {
        scanner.feed(bytes as Buffer);
        yield bytes as Buffer;
      }
      yield CLOSING;
    },
    async function* (source: AsyncIterable<Buffer>) {
      for await (const bytes of source) {
        hash.update(bytes);
        yield bytes;
      }
    },
    createWriteStream(target, { flags: 'wx' }),
  );
  return {
    prefix: OPENING.length + ARRAY_OPENING,
    suffix: ARRAY_CLOSING + CLOSING.length,
    lengths: featuresOf(scanner.lengths.done()),
    sha256: hash.digest('hex'),
  };
}

/** The rows of `from` (the source, or a plan of its rows) without a valid position (`valid`). */
async function unlocated(
  db: Database,
  valid: string,
  from: Pick<ExportSource, 'sql' | 'params'>,
): Promise<number> {
  const [counted] = await db.all(
    `SELECT count(*) FILTER (WHERE NOT coalesce(${valid}, false)) AS unlocated FROM ${from.sql}`,
    from.params,
  );
  return Number(counted?.['unlocated'] ?? 0);
}

export async function exportGeoJson(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  geometry: GeometryColumns,
  index?: string,
): Promise<ExportResult> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties =
    kept.length > 0
      ? `struct_pack(${kept.map((c) => `${quotedIdentifier(c.name)} := ${jsonValue(c)}`).join(', ')})`
      : `'{}'::JSON`;
  // Seven decimals, about a centimetre: what RFC 7946 (11.2) advises, no false precision.
  const point = `{'type': 'Point', 'coordinates': [round(${lon}, 7), round(${lat}, 7)]}`;
  const features = (from: string): string =>
    `SELECT 'Feature' AS "type", ` +
    (geometry.id ? `${quotedIdentifier(geometry.id)} AS id, ` : '') +
    `CASE WHEN ${valid} THEN ${point} END AS geometry, ${properties} AS properties FROM ${from}`;
  const copyFeatures = (from: string, target: string, params = source.params) =>
    db.copy(
      `COPY (${features(from)}) TO ${quotedString(target)} (FORMAT json, ARRAY true)`,
      params,
    );
  const whole = async (from: string, temporary: string) => {
    const array = `${temporary}.features`;
    try {
      const rows = await writing(db, source, () => copyFeatures(from, array));
      return { rows, ...(await collect(array, temporary)) };
    } finally {
      await rm(array, { force: true });
    }
  };
  const columns = index ? await describe(db, source) : [];
  const order = index ? await rowOrder(db, source, columns) : undefined;
  if (order && index) {
    const reused = await writeReusing(path, scratch, index, {
      db,
      params: source.params,
      order,
      fingerprint: await makingOf(db, ['geojson', columns, features('?'), order]),
      separator: ',\n',
      writeAll: (temporary, orderBy) => whole(`${order.keyed} ${orderBy}`, temporary),
      columns,
      data: source.data,
      writeSome: async (file, rows, params) => {
        await copyFeatures(rows, file, params);
        const { scanner } = await scanFile(file, 'json-array');
        return {
          prefix: ARRAY_OPENING,
          suffix: ARRAY_CLOSING,
          lengths: featuresOf(scanner.lengths.done()),
        };
      },
    });
    // The plan of these rows the write kept holds their position: a narrow file read, not the source.
    const position = [geometry.longitude, geometry.latitude].map(quotedIdentifier);
    const plan = keptPlanRows(db, { ...order, columns }, position, source.params, source.data);
    const withoutGeometry = await unlocated(db, valid, plan ? { sql: plan, params: {} } : source);
    return { rows: reused.rows, withoutGeometry, sha256: reused.sha256, reused: reused.reused };
  }
  const withoutGeometry = await unlocated(db, valid, source);
  return writeThrough(path, scratch, async (temporary) => {
    const { rows, sha256 } = await whole(source.sql, temporary);
    return { rows, withoutGeometry, sha256 };
  });
}
