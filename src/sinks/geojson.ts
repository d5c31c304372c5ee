/**
 * A GeoJSON FeatureCollection of points (RFC 7946). DuckDB's JSON writer
 * makes the features, on every thread, as a JSON array (a row a Feature: its
 * type, id, geometry and properties, in the order of the source, a feature a
 * line); the collection is that array between its opening and its closing,
 * put together as the array is copied into the file, and hashed as it goes
 * (which spares the manifest reading it again).
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import {
  isTimestamp,
  isoTimestamp,
  pointColumns,
  type Column,
  type ExportSource,
  type GeometryColumns,
} from './columns.js';
import type { ExportResult } from './exports.js';
import { writing } from './writing.js';

const OPENING = Buffer.from('{"type":"FeatureCollection","features":');
const CLOSING = Buffer.from('}\n');

/** A JSON value expression for a column: timestamps as ISO 8601 UTC text, the rest as DuckDB's JSON does it. */
function jsonValue(column: Column): string {
  return isTimestamp(column.type) ? isoTimestamp(column) : quotedIdentifier(column.name);
}

/** The collection put together around the array file `array` into `target`: its SHA-256. */
async function collect(array: string, target: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(
    async function* () {
      const parts = [[OPENING], createReadStream(array, { highWaterMark: 1 << 20 }), [CLOSING]];
      for (const part of parts)
        for await (const bytes of part as AsyncIterable<Buffer>) {
          hash.update(bytes);
          yield bytes;
        }
    },
    createWriteStream(target, { flags: 'wx' }),
  );
  return hash.digest('hex');
}

/** The rows of `from` without a valid position (`valid`). */
async function unlocated(db: Database, valid: string, from: ExportSource): Promise<number> {
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
  const copyFeatures = (target: string) =>
    db.copy(
      `COPY (${features(source.sql)}) TO ${quotedString(target)} (FORMAT json, ARRAY true)`,
      source.params,
    );
  const withoutGeometry = await unlocated(db, valid, source);
  return writeThrough(path, scratch, async (temporary) => {
    const array = `${temporary}.features`;
    try {
      const rows = await writing(db, source, () => copyFeatures(array));
      return { rows, withoutGeometry, sha256: await collect(array, temporary) };
    } finally {
      await rm(array, { force: true });
    }
  });
}
