/** Writing an export: one file, or one file per month of a date column (export-months.ts). */
import { join, relative, sep } from 'node:path';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { BBOX_COLUMN, pointColumns } from '../duckdb/geoparquet.js';
import { describe } from '../sinks/columns.js';
import { RoadEtlError, RunError, explainIoError } from '../errors.js';
import {
  exportCsv,
  exportParquet,
  type ExportResult,
  type ExportSource,
} from '../sinks/exports.js';
import { exportGeoJson } from '../sinks/geojson.js';
import { exportFlatGeobuf } from '../sinks/flatgeobuf.js';
import { latestSnapshotView, namedIn, type Dataset } from '../duckdb/datasets.js';
import { DATASET_VIEWS } from '../sources/views.js';
import { formatOf, type ExportStepOptions } from './export-options.js';
import type { StepContext } from './step-kind.js';
import { csvSidecars } from '../sinks/csv-metadata.js';
import { folderFilesOf, recordWritten } from '../duckdb/folder-files.js';

/** The rows of `source` without the GeoParquet covering column (`bbox` beside a geometry), if they have it. */
async function withoutCoveringBox(db: Database, source: ExportSource): Promise<ExportSource> {
  const columns = await describe(db, source);
  return pointColumns(columns)?.box
    ? { ...source, sql: `(SELECT * EXCLUDE (${quotedIdentifier(BBOX_COLUMN)}) FROM ${source.sql})` }
    : source;
}

/** The views a dataset is read by: its own, its latest snapshot's, and those its kind gives. */
export function viewsOf(dataset: Pick<Dataset, 'name'>): string[] {
  const latest = latestSnapshotView(dataset);
  const more = DATASET_VIEWS[dataset.name]?.(dataset.name, latest ?? dataset.name) ?? {};
  return [dataset.name, latest, ...Object.keys(more)].flatMap((name) => (name ? [name] : []));
}

/**
 * The datasets a statement reads: those it names by one of their views (its
 * own, its latest snapshot's, and those its kind gives).
 */
export function datasetsRead<T extends Pick<Dataset, 'name'>>(
  sql: string,
  datasets: readonly T[],
): T[] {
  return datasets.filter(
    (dataset) =>
      namedIn(
        sql,
        viewsOf(dataset).map((name) => ({ name })),
      ).length > 0,
  );
}

/** Writes one file of the export: the rows of `source` to `path`, in the export's format. */
export async function exportFile(
  db: Database,
  options: ExportStepOptions,
  source: ExportSource,
  path: string,
  context: StepContext,
): Promise<ExportResult> {
  const format = formatOf(options)!;
  const scratch = context.scratch;
  let result: ExportResult;
  // The GeoParquet covering box is the datasets' own: an extract has the position otherwise.
  if (format !== 'parquet') source = await withoutCoveringBox(db, source);
  try {
    if (format === 'csv')
      result = await exportCsv(db, source, path, scratch, {
        formulaGuard: options.formula_guard,
        // Its name (exports/bicycle_daily/2026-10.csv: bicycle_daily 2026-10), and what it holds.
        title: relative(join(context.output, 'exports'), path)
          .replace(/\.csv$/, '')
          .replaceAll(sep, ' '),
        description: `The rows of ${options.table ? `the table ${options.table}` : 'a query'}, written by road-etl (step ${context.stepId}).`,
      });
    else if (format === 'parquet') result = await exportParquet(db, source, path, scratch);
    else {
      // Points: GeoJSON, or FlatGeobuf with its spatial index.
      const points = format === 'flatgeobuf' ? exportFlatGeobuf : exportGeoJson;
      const geometry = { ...options.geometry, id: options.geometry.id };
      result = await points(db, source, path, scratch, geometry);
    }
  } catch (error) {
    const message = (error as Error).message;
    if ((error as NodeJS.ErrnoException).code) throw error; // I/O trouble: reported as such by the engine
    // DuckDB's I/O trouble (a full disk while it writes the file) in the same words.
    const local = explainIoError(error, `export to ${options.path}`);
    if (local instanceof RoadEtlError) throw local;
    throw new RunError(`export of ${options.table ?? 'the query'} to ${options.path}: ${message}`, {
      cause: error,
    });
  }
  // The CSV's CSVW metadata and GDAL CSVT beside it are the folder's files too.
  if (format === 'csv')
    for (const sidecar of Object.values(csvSidecars(path)))
      await recordWritten(folderFilesOf(context), sidecar);
  if (result.withoutGeometry) {
    context.log.log(
      'warn',
      'export.no_geometry',
      `${result.withoutGeometry} of ${result.rows} features in ${relative(context.output, path)} have no valid position (geometry null)`,
    );
  }
  return result;
}
