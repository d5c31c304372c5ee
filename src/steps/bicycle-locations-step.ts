/**
 * Step kind `bicycle.locations`: the catalog of measurement locations (4.4), a
 * FeatureCollection, flattened by DuckDB into bicycle/locations/data.parquet
 * (one row per location, properties in snake_case, longitude and latitude),
 * replacing the previous catalog. The feature's properties are also kept whole.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { requestOptions } from '../http/options.js';
import { writeParquet } from '../duckdb/dataset-write.js';
import { defineStepKind, upstreamOf } from './step-kind.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import {
  LOCATIONS_DATASET,
  LOCATIONS_VIEW_COLUMNS,
  catalogFile,
  catalogRows,
} from '../sources/bicycle/catalog.js';
import { BicycleClient } from '../sources/bicycle/client.js';
import { makeFolder } from '../util/fs.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

const bicycleLocationsOptions = z.strictObject({
  ...requestOptions(120_000),
});

export type BicycleLocationsOptions = z.output<typeof bicycleLocationsOptions>;

export const bicycleLocationsStep = defineStepKind<
  BicycleLocationsOptions,
  { download: string; into: string }
>({
  kind: 'bicycle.locations',
  description: 'Download the bicycle location catalog into bicycle/locations',
  options: bicycleLocationsOptions,
  source: 'bicycle',
  views: { bicycle_locations: LOCATIONS_VIEW_COLUMNS },
  plan() {
    return { download: 'the location catalog (GeoJSON)', into: LOCATIONS_DATASET };
  },
  describe(plan) {
    return [`downloads ${plan.download} into ${plan.into}`];
  },
  decide() {
    return {
      decision: 'whole',
      why: 'the catalog is downloaded whole at every run',
      builds: [{ dataset: 'bicycle_locations', partitions: 'all' }],
      reads: [],
    };
  },
  async reset(_options, context) {
    await folderFilesOf(context).remove(join(context.output, LOCATIONS_DATASET));
  },
  async run(options, context) {
    const upstream = upstreamOf(context, 'bicycle', 'bicycle.locations');
    const http = context.http(options);
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
      const db = await context.database();
      const rows = await writeParquet(
        context,
        db,
        catalogRows(file, body.length),
        catalogFile(context.output),
      );
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
      await rm(staging, { recursive: true, force: true });
    }
  },
});
