/**
 * DuckDB over an output folder: each dataset a view (with the views derived
 * from it, and empty views of the datasets not written yet). The one way the
 * run, the report and `road-etl query` open a folder.
 */
import { Database, type DatabaseOptions } from './database.js';
import {
  createDatasetViews,
  createPlaceholderViews,
  discoverDatasets,
  latestDay,
  latestSnapshotView,
  type Dataset,
} from './datasets.js';

/** Views made from a dataset's view (and its latest snapshot's), by dataset name. */
export type DerivedViews = Readonly<
  Record<string, (view: string, latest: string | undefined) => Record<string, string>>
>;

/** Datasets known before they exist: an empty view of these columns where there is none. */
export type PlaceholderViews = Readonly<Record<string, readonly (readonly [string, string])[]>>;

export interface OutputFolderOptions {
  database?: DatabaseOptions | undefined;
  derived?: DerivedViews;
  placeholders?: PlaceholderViews;
  /** Make the views at once (default); the run makes them later, after upgrading old files. */
  views?: boolean;
}

export interface OutputFolder {
  db: Database;
  /**
   * Makes the views of the folder's datasets (`found`, or looked for): only those
   * new or typed anew since the last call, as binding a view over a year of
   * partitions takes tens of ms. Resolves to the datasets.
   */
  refresh(found?: readonly Dataset[]): Promise<readonly Dataset[]>;
  close(): void;
}

function signature(dataset: Dataset): string {
  // A snapshot of a new date makes the latest snapshot's view anew: it names its date.
  const latest = latestSnapshotView(dataset) === undefined ? undefined : latestDay(dataset);
  return JSON.stringify([dataset.folder, dataset.hiveTypes, dataset.partitioned, latest]);
}

export async function openOutputFolder(
  output: string,
  options: OutputFolderOptions = {},
): Promise<OutputFolder> {
  const db = await Database.open(options.database);
  const made = new Map<string, string>();
  // The empty views made, kept until their dataset is written (about 1 ms each, after every step).
  let empty = new Set<string>();
  const folder: OutputFolder = {
    db,
    async refresh(found) {
      const datasets = found ?? (await discoverDatasets(output));
      const changed = datasets.filter((d) => made.get(d.name) !== signature(d));
      const unread = new Set(await createDatasetViews(db, changed, options.derived));
      // A derived table that cannot be read has no view until it is built anew.
      for (const d of changed) if (!unread.has(d.name)) made.set(d.name, signature(d));
      if (options.placeholders) {
        empty = await createPlaceholderViews(db, options.placeholders, datasets, empty);
        // A dataset gone again has an empty view: its view is made anew when it is back.
        for (const name of empty) made.delete(name);
      }
      return datasets;
    },
    close: () => db.close(),
  };
  if (options.views !== false) {
    try {
      await folder.refresh();
    } catch (error) {
      db.close();
      throw error;
    }
  }
  return folder;
}
