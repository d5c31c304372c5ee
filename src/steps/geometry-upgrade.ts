/**
 * The upgrade of a dataset with a position written before it carried its
 * geometry (GeoParquet): each old file gains the `geometry` column.
 */
import { join } from 'node:path';
import { GEOMETRY_COLUMN } from '../duckdb/geometry.js';
import { addMissingColumn } from '../duckdb/upgrade.js';
import type { UpgradeContext } from './step-kind.js';

export function geometryUpgrade(
  dataset: string,
  expression: string,
): (context: UpgradeContext) => Promise<void> {
  return async (context) => {
    const rewritten = await addMissingColumn(
      context.db,
      join(context.output, dataset),
      GEOMETRY_COLUMN,
      expression,
      context.scratch,
    );
    if (rewritten > 0)
      context.log.log(
        'info',
        'upgrade.geometry',
        `${dataset}: ${rewritten} file(s) of an earlier version given their geometry column (GeoParquet)`,
        { dataset, files: rewritten },
      );
  };
}
