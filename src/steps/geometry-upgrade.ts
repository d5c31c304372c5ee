/**
 * Upgrades of a dataset written before it carried a column: each old file
 * gains it (addMissingColumn), and the log says how many did. The geometry
 * (GeoParquet) of a dataset with a position is one such column.
 */
import { join } from 'node:path';
import { GEOMETRY_COLUMN } from '../duckdb/geometry.js';
import { addMissingColumn } from '../duckdb/upgrade.js';
import type { UpgradeContext } from './step-kind.js';

/** Gives each old file of `dataset` the column `column` (the SQL `expression` over its columns). */
export function columnUpgrade(
  dataset: string,
  column: string,
  expression: string,
  said: { event: string; what: string },
): (context: UpgradeContext) => Promise<void> {
  return async (context) => {
    const rewritten = await addMissingColumn(
      context.db,
      join(context.output, dataset),
      column,
      expression,
      context.scratch,
    );
    if (rewritten > 0)
      context.log.log(
        'info',
        said.event,
        `${dataset}: ${rewritten} file(s) of an earlier version given ${said.what}`,
        { dataset, files: rewritten },
      );
  };
}

export function geometryUpgrade(
  dataset: string,
  expression: string,
): (context: UpgradeContext) => Promise<void> {
  return columnUpgrade(dataset, GEOMETRY_COLUMN, expression, {
    event: 'upgrade.geometry',
    what: 'their geometry column (GeoParquet)',
  });
}
