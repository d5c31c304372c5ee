/** The report a run writes at its end when its definition asks for one (`report:`). */
import { join } from 'node:path';
import type { ReportSpec } from '../config/schema.js';
import { explainOutOfMemory } from '../duckdb/memory.js';
import { explainIoError } from '../errors.js';
import type { Logger } from '../log.js';
import { REPORT_PATH, writeReport } from '../report/index.js';
import type { Pipeline } from './build.js';
import type { Manifest } from './manifest.js';
import { runDatabaseOptions } from './run-folder.js';

/** The plan's line for the report. */
export function describeRunReport(spec: ReportSpec, output: string): string {
  const tiles = spec.tiles ? `map tiles from ${spec.tiles}` : 'no map tiles';
  return `Then the report: ${join(output, REPORT_PATH)} (at most ${spec.map_signs.toLocaleString('en-US')} signs per map, ${tiles}).`;
}

/**
 * Writes report/index.html with the folder's manifest as the run will write it
 * (naming the report), within the run's DuckDB budget; resolves to the page's
 * path. A failure is thrown as the run's error, saying it was the report's.
 */
export async function writeRunReport(
  pipeline: Pipeline,
  spec: ReportSpec,
  output: string,
  manifest: Manifest,
  logger: Logger,
): Promise<string> {
  logger.log('info', 'report.start', `Writing the report of ${output}`, {});
  try {
    const written = await writeReport(output, {
      manifest,
      mapSigns: spec.map_signs,
      tiles:
        spec.tiles === undefined
          ? undefined
          : { url: spec.tiles, attribution: spec.tiles_attribution },
      database: runDatabaseOptions(pipeline, output),
    });
    logger.log('info', 'report.written', `Report written to ${written.path}`, {
      path: written.path,
      bytes: written.bytes,
    });
    return written.path;
  } catch (error) {
    throw (
      explainOutOfMemory(error, 'writing the report', undefined) ??
      explainIoError(error, 'writing the report')
    );
  }
}
