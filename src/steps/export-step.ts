/**
 * Step kind `export`: a table or query to CSV, GeoJSON or Parquet under the
 * output folder; with `per_month`, one file per month of a date column, of
 * which a run rewrites only the months whose rows changed (export-months.ts).
 */
import { extname } from 'node:path';
import { quotedIdentifier } from '../duckdb/database.js';
import type { ExportSource } from '../sinks/exports.js';
import { exportFile } from './export-file.js';
import { decideExport, exportMonths } from './export-months.js';
import {
  EXTENSIONS,
  MONTH,
  exportStepOptions,
  formatOf,
  type ExportStepOptions,
} from './export-options.js';
import { firstSegment, insideFolder } from './paths.js';
import { defineStepKind } from './step-kind.js';

export { exportStepOptions, type ExportStepOptions } from './export-options.js';

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
    const month = options.path.includes(MONTH);
    if (options.per_month !== undefined && !month)
      problems.push([
        ['path'],
        `with per_month, the path must hold ${MONTH} (e.g. exports/x/${MONTH}.csv)`,
      ]);
    if (options.per_month === undefined && month)
      problems.push([
        ['per_month'],
        `the path holds ${MONTH}: name the date column of the months in per_month`,
      ]);
    if (
      month &&
      (options.path.indexOf(MONTH) !== options.path.lastIndexOf(MONTH) ||
        /[\\/]/.test(options.path.slice(options.path.indexOf(MONTH))))
    )
      problems.push([['path'], `${MONTH} must appear once, in the file name`]);
    if (options.from !== undefined && options.per_month === undefined)
      problems.push([['from'], 'goes with per_month']);
    const format = formatOf(options);
    if (!format)
      problems.push([
        ['format'],
        `cannot tell the format from "${extname(options.path)}": set format to csv, geojson, flatgeobuf or parquet`,
      ]);
    else if (!EXTENSIONS[format].includes(extname(options.path).toLowerCase())) {
      problems.push([
        ['path'],
        `a ${format} export must end in ${EXTENSIONS[format].join(' or ')}`,
      ]);
    }
    return problems;
  },
  plan(options) {
    // The months to write again are known once the steps before have run.
    return {
      from: options.table ?? 'a query',
      path: options.path,
      format: formatOf(options) ?? null,
      per_month: options.per_month ?? null,
    };
  },
  describe(_plan, options) {
    const what = options.table ?? 'a query';
    const lines = [`writes ${what} to ${options.path} (${formatOf(options) ?? '?'})`];
    if (options.per_month)
      lines.push(
        `one file per month of ${options.per_month}; rewrites the months whose rows in ${options.from ?? options.table ?? 'the query'} changed`,
      );
    return lines;
  },
  decide: decideExport,
  threadsByReads: true,
  async run(options, context, _plan, decision) {
    const source: ExportSource = options.table
      ? { sql: quotedIdentifier(options.table), params: {} }
      : { sql: `(${options.query ?? ''})`, params: options.params };
    if (options.per_month)
      return exportMonths(options, options.per_month, source, context, decision);
    const path = insideFolder(context.output, options.path)!;
    const result = await exportFile(await context.database(), options, source, path, context);
    const record = await context.recordFile(path, result.sha256);
    const notes = {
      ...(result.withoutGeometry ? { features_without_geometry: result.withoutGeometry } : {}),
    };
    return {
      rowsIn: result.rows,
      rowsOut: result.rows,
      exports: [{ ...record, format: formatOf(options)!, rows: result.rows }],
      ...(Object.keys(notes).length > 0 ? { notes } : {}),
    };
  },
});
