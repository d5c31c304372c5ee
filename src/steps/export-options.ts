/** The options of step kind `export`, and the format an export's path asks for. */
import { extname } from 'node:path';
import { z } from 'zod';
import type { ExportFormat } from '../sinks/exports.js';

/** The placeholder of a per-month export's path. */
export const MONTH = '{month}';

export const EXTENSIONS: Record<ExportFormat, readonly string[]> = {
  csv: ['.csv'],
  geojson: ['.geojson', '.json'],
  flatgeobuf: ['.fgb'],
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
      .enum(['csv', 'geojson', 'flatgeobuf', 'parquet'])
      .optional()
      .describe('Default: from the file extension'),
    geometry: z
      .strictObject({
        longitude: z.string().default('longitude'),
        latitude: z.string().default('latitude'),
        id: z.string().optional().describe('Column used as the feature id'),
      })
      .default({ longitude: 'longitude', latitude: 'latitude' })
      .describe('GeoJSON and FlatGeobuf: the columns holding WGS84 longitude and latitude'),
    formula_guard: z
      .boolean()
      .default(true)
      .describe(
        "CSV: a text cell that begins with =, +, -, @, tab, CR or ' gets one ' before it, so that spreadsheets never run it as a formula (undo: drop the first ' of a text cell). false writes text exactly",
      ),
    per_month: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'must be a column name')
      .optional()
      .describe(
        'One file per month of this DATE (or timestamp) column: the path holds {month} (YYYY-MM). A run rewrites only the months whose rows changed',
      ),
    from: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'must be a dataset name')
      .optional()
      .describe(
        'With per_month and a query: the dataset the rows come from, whose changed partitions say which months to write again (default: table)',
      ),
  })
  .refine((o) => (o.table === undefined) !== (o.query === undefined), {
    message: 'give exactly one of table and query',
  });

export type ExportStepOptions = z.output<typeof exportStepOptions>;

export function formatOf(options: ExportStepOptions): ExportFormat | undefined {
  if (options.format) return options.format;
  const extension = extname(options.path).toLowerCase();
  return (Object.keys(EXTENSIONS) as ExportFormat[]).find((f) => EXTENSIONS[f].includes(extension));
}
