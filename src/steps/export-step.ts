/** Step kind `export`: a table or query to CSV, GeoJSON or Parquet under the output folder. */
import { extname } from 'node:path';
import { z } from 'zod';
import { quotedIdentifier } from '../duckdb/database.js';
import { RunError } from '../errors.js';
import { defineStepKind } from './step-kind.js';
import {
  exportCsv,
  exportGeoJson,
  exportParquet,
  type ExportFormat,
  type ExportResult,
  type ExportSource,
} from '../sinks/exports.js';
import { firstSegment, insideFolder } from './paths.js';

const EXTENSIONS: Record<ExportFormat, readonly string[]> = {
  csv: ['.csv'],
  geojson: ['.geojson', '.json'],
  parquet: ['.parquet'],
};

export const exportStepOptions = z
  .strictObject({
    table: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'must be a table or dataset name')
      .optional()
      .describe('Table or dataset to export'),
    query: z
      .string()
      .optional()
      .describe('A SELECT to export instead of a table; values as $name from params'),
    params: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
      .default({}),
    path: z.string().describe('File to write, relative to the output folder (e.g. exports/x.csv)'),
    format: z
      .enum(['csv', 'geojson', 'parquet'])
      .optional()
      .describe('Default: from the file extension'),
    geometry: z
      .strictObject({
        longitude: z.string().default('longitude'),
        latitude: z.string().default('latitude'),
        id: z.string().optional().describe('Column used as the feature id'),
      })
      .default({ longitude: 'longitude', latitude: 'latitude' })
      .describe('GeoJSON: the columns holding WGS84 longitude and latitude'),
  })
  .refine((o) => (o.table === undefined) !== (o.query === undefined), {
    message: 'give exactly one of table and query',
  });

export type ExportStepOptions = z.output<typeof exportStepOptions>;

function formatOf(options: ExportStepOptions): ExportFormat | undefined {
  if (options.format) return options.format;
  const extension = extname(options.path).toLowerCase();
  return (Object.keys(EXTENSIONS) as ExportFormat[]).find((f) => EXTENSIONS[f].includes(extension));
}

export const exportStep = defineStepKind<ExportStepOptions>({
  kind: 'export',
  description: 'Write a table or query as CSV, GeoJSON or Parquet',
  options: exportStepOptions,
  sqlOptions: ['query'],
  check(options, context) {
    const problems: [string[], string][] = [];
    const target = insideFolder(context.output, options.path);
    if (!target) problems.push([['path'], 'must be a relative path inside the output folder']);
    else if (firstSegment(context.output, target).startsWith('.'))
      problems.push([['path'], 'must not write into a hidden folder such as .state']);
    const format = formatOf(options);
    if (!format)
      problems.push([
        ['format'],
        `cannot tell the format from "${extname(options.path)}": set format to csv, geojson or parquet`,
      ]);
    else if (!EXTENSIONS[format].includes(extname(options.path).toLowerCase())) {
      problems.push([
        ['path'],
        `a ${format} export must end in ${EXTENSIONS[format].join(' or ')}`,
      ]);
    }
    return problems;
  },
  describe(options) {
    const what = options.table ?? 'a query';
    return [`writes ${what} to ${options.path} (${formatOf(options) ?? '?'})`];
  },
  async run(options, context) {
    const format = formatOf(options)!;
    const path = insideFolder(context.output, options.path)!;
    const db = await context.database();
    const scratch = context.scratch;
    const source: ExportSource = options.table
      ? { sql: quotedIdentifier(options.table), params: {} }
      : { sql: `(${options.query ?? ''})`, params: options.params };
    let result: ExportResult;
    try {
      if (format === 'csv') result = await exportCsv(db, source, path, scratch);
      else if (format === 'parquet') result = await exportParquet(db, source, path, scratch);
      else
        result = await exportGeoJson(db, source, path, scratch, {
          ...options.geometry,
          id: options.geometry.id,
        });
    } catch (error) {
      const message = (error as Error).message;
      if ((error as NodeJS.ErrnoException).code) throw error; // I/O trouble: reported as such by the engine
      throw new RunError(
        `export of ${options.table ?? 'the query'} to ${options.path}: ${message}`,
        { cause: error },
      );
    }
    if (result.withoutGeometry) {
      context.log.log(
        'warn',
        'export.no_geometry',
        `${result.withoutGeometry} of ${result.rows} features in ${options.path} have no valid position (geometry null)`,
      );
    }
    const record = await context.recordFile(path);
    return {
      rowsIn: result.rows,
      rowsOut: result.rows,
      exports: [{ ...record, format, rows: result.rows }],
      ...(result.withoutGeometry
        ? { notes: { features_without_geometry: result.withoutGeometry } }
        : {}),
    };
  },
});
