/**
 * The report's numbers: DuckDB queries over the output's datasets (each a view,
 * as `road-etl query` has them; the SQL in sql/), aggregated so that what the
 * page receives is small whatever the scale: counts per category, per week,
 * per day and location, and at most `mapSigns` signs drawn (a repeatable
 * sample beyond that, stated as such on the page).
 */
import type { Database } from '../duckdb/database.js';
import { DERIVED_FOLDER, latestSnapshotView, type Dataset } from '../duckdb/datasets.js';
import { bicycleSection } from './bicycle-queries.js';
import type { QualitySection, ReportData } from './data.js';
import { signsSection, type SignQueryOptions } from './signs-queries.js';
import { Views, num, rankings, text, topOf } from './views.js';

export type QueryOptions = SignQueryOptions;

async function qualitySection(
  views: Views,
  datasets: readonly Dataset[],
  options: QueryOptions,
): Promise<QualitySection> {
  const quality: QualitySection = { quarantine: [], typing: [] };
  for (const dataset of datasets) {
    if (dataset.name.endsWith('quarantine') && views.has(dataset.name, 'reason')) {
      const bound = { dataset: dataset.name };
      const [count] = await views.query('quarantine', bound);
      quality.quarantine.push({
        dataset: dataset.name,
        rows: num(count?.['n']),
        byReason: topOf(
          rankings(await views.query('quarantine_reasons', bound)).get('reason'),
          options.top,
          'other reasons',
        ),
        example: text(count?.['example']),
      });
      continue;
    }
    if (dataset.relative.startsWith(`${DERIVED_FOLDER}/`)) continue;
    // A dataset of snapshots is judged by its latest snapshot, as its users read it.
    const name = latestSnapshotView(dataset) ?? dataset.name;
    if (!views.has(name, 'typing_issues')) continue;
    const [count] = await views.query('typing_issues', { dataset: name });
    quality.typing.push({
      dataset: name,
      rows: num(count?.['n']),
      rowsWithIssues: num(count?.['with_issues']),
      byField: topOf(
        rankings(await views.query('typing_issue_fields', { dataset: name })).get('field'),
        options.top,
        'other fields',
      ),
    });
  }
  return quality;
}

export async function queryReport(
  db: Database,
  datasets: readonly Dataset[],
  options: QueryOptions,
): Promise<Pick<ReportData, 'datasets' | 'signs' | 'bicycle' | 'quality'>> {
  const views = await Views.of(db);
  const counted: ReportData['datasets'] = [];
  for (const dataset of datasets) {
    const [row] = await views.query('dataset_rows', { dataset: dataset.name });
    counted.push({ name: dataset.name, path: dataset.relative, rows: num(row?.['n']) });
  }
  return {
    datasets: counted,
    signs: await signsSection(views, options),
    bicycle: await bicycleSection(views),
    quality: await qualitySection(views, datasets, options),
  };
}
