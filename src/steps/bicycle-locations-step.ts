/**
 * Step kind `bicycle.locations`: the catalog of measurement locations (4.4), a
 * FeatureCollection, flattened by DuckDB into bicycle/locations/data.parquet
 * (one row per location, properties in snake_case, longitude and latitude),
 * replacing the previous catalog. The feature's properties are also kept whole.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { PARQUET_FORMAT, quotedString } from '../duckdb/database.js';
import { RunError } from '../errors.js';
import { httpClientFor, requestOptions } from './http-options.js';
import { defineStepKind } from './step-kind.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import { BicycleClient } from '../sources/bicycle/client.js';
import { commitFile, temporaryPath, makeFolder } from '../util/fs.js';

export const LOCATIONS_DATASET = join('bicycle', 'locations');

export const bicycleLocationsOptions = z.strictObject({
  ...requestOptions(120_000),
});

export type BicycleLocationsOptions = z.output<typeof bicycleLocationsOptions>;

const text = (path: string): string => `nullif(trim(f ->> ${quotedString(path)}), '')`;
const timestamp = (path: string): string =>
  `timezone('UTC', TRY_CAST(${text(path)} AS TIMESTAMPTZ))`;

/** Columns of bicycle/locations, as DuckDB expressions over one feature `f`. */
const COLUMNS: readonly (readonly [string, string, string])[] = [
  ['location_id', 'VARCHAR', text('$.properties.id')],
  ['feature_id', 'VARCHAR', text('$.id')],
  ['authority_id', 'VARCHAR', text('$.properties.authorityId')],
  ['authority', 'VARCHAR', text('$.properties.authority')],
  ['contractor', 'VARCHAR', text('$.properties.contractor')],
  ['name', 'VARCHAR', text('$.properties.name')],
  [
    'aliases',
    'VARCHAR[]',
    `CASE json_type(f -> '$.properties.aliases') WHEN 'ARRAY' THEN json_extract_string(f, '$.properties.aliases[*]') END`,
  ],
  ['license_category', 'VARCHAR', text('$.properties.licenseCategory')],
  ['bearing', 'DOUBLE', `TRY_CAST(${text('$.properties.bearing')} AS DOUBLE)`],
  ['location_type', 'VARCHAR', text('$.properties.locationType')],
  ['equipment_type', 'VARCHAR', text('$.properties.equipmentType')],
  ['valid_from', 'TIMESTAMP', timestamp('$.properties.validFrom')],
  ['valid_until', 'TIMESTAMP', timestamp('$.properties.validUntil')],
  ['longitude', 'DOUBLE', `TRY_CAST(f ->> '$.geometry.coordinates[0]' AS DOUBLE)`],
  ['latitude', 'DOUBLE', `TRY_CAST(f ->> '$.geometry.coordinates[1]' AS DOUBLE)`],
  ['properties', 'JSON', `f -> '$.properties'`],
];

export const LOCATIONS_VIEW_COLUMNS: readonly (readonly [string, string])[] = COLUMNS.map(
  ([name, type]) => [name, type] as const,
);

export const bicycleLocationsStep = defineStepKind<BicycleLocationsOptions>({
  kind: 'bicycle.locations',
  description: 'Download the bicycle location catalog into bicycle/locations',
  options: bicycleLocationsOptions,
  source: 'bicycle',
  outputs: () => [LOCATIONS_DATASET],
  views: { bicycle_locations: LOCATIONS_VIEW_COLUMNS },
  describe() {
    return [`downloads the location catalog (GeoJSON) into ${LOCATIONS_DATASET}`];
  },
  async reset(_options, context) {
    await rm(join(context.output, LOCATIONS_DATASET), { recursive: true, force: true });
  },
  async run(options, context) {
    const upstream = context.upstream.bicycle;
    if (!upstream) throw new RunError('bicycle.locations: no bicycle upstream configured');
    const http = httpClientFor(options, context);
    const staging = context.staging;
    await rm(staging, { recursive: true, force: true });
    await makeFolder(staging);
    try {
      const tokens = new TokenSource(http, upstream);
      const client = new BicycleClient(http, tokens, upstream.url);
      const { body, value } = await client.locations(context.signal);
      const total = (value as { features: unknown[] }).features.length;
      context.progress.add({ requests: 1 });
      const file = join(staging, 'complete.json');
      await writeFile(file, body);
      const target = join(context.output, LOCATIONS_DATASET, 'data.parquet');
      await makeFolder(join(context.output, LOCATIONS_DATASET));
      const temporary = temporaryPath(target, context.scratch);
      const db = await context.database();
      const features = `(SELECT unnest(json_extract(json, '$.features[*]')) AS f
        FROM read_json_objects(${quotedString(file)}, maximum_object_size = ${Math.max(16 << 20, body.length + 1024)}))`;
      const rows = await db.copy(
        `COPY (SELECT ${COLUMNS.map(([name, type, expr]) => `CAST(${expr} AS ${type}) AS ${name}`).join(',\n ')}
               FROM ${features} WHERE f ->> '$.properties.id' IS NOT NULL ORDER BY location_id)
         TO ${quotedString(temporary)} (${PARQUET_FORMAT})`,
      );
      await commitFile(temporary, target);
      await context.recordFile(target);
      if (total > rows) {
        context.log.log(
          'warn',
          'bicycle.locations',
          `${total - rows} feature(s) without properties.id left out`,
          { left_out: total - rows },
        );
      }
      return { rowsIn: total, rowsOut: rows, notes: { requests: http.requests } };
    } finally {
      await http.close();
      await rm(staging, { recursive: true, force: true });
    }
  },
});
