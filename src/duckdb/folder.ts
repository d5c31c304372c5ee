/**
 * DuckDB over an output folder: each dataset a view (with the views derived
 * from it, and empty views of the datasets not written yet). The one way the
 * run, the report and `road-etl query` open a folder.
 */
import { Database, quotedIdentifier, type DatabaseOptions } from './database.js';
import { DISK, type FolderFiles } from './folder-files.js';
import {
  createDatasetViews,
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
export type EmptyViews = Readonly<Record<string, readonly (readonly [string, string])[]>>;

export interface OutputFolderOptions {
  database?: DatabaseOptions | undefined;
  derived?: DerivedViews;
  empty?: EmptyViews;
  /** Make the views at once (default); the run makes them later. */
  views?: boolean;
  /** Views that name each dataset's files as they are (views.sql) rather than a pattern. */
  listed?: boolean;
  /** Where the folder is listed (default: the disk). */
  files?: FolderFiles;
}

export interface OutputFolder {
  db: Database;
  /**
   * Makes the views of the folder's datasets (`found`, or looked for): only those
   * new or typed anew since the last call, as binding a view over a year of
   * partitions takes tens of ms. Resolves to the datasets.
   */
  refresh(found?: readonly Dataset[]): Promise<readonly Dataset[]>;
  /**
   * With `listed`: each dataset's view as it names every file of the folder,
   * those not on this machine too (views.sql names them all).
   */
  named: Map<string, string>;
  close(): void;
}

function signature(dataset: Dataset, files: FolderFiles): string {
  // A snapshot of a new date makes the latest snapshot's view anew: it names its date.
  const latest = latestSnapshotView(dataset) === undefined ? undefined : latestDay(dataset, files);
  return JSON.stringify([dataset.folder, dataset.hiveTypes, dataset.partitioned, latest]);
}

/**
 * Creates an empty view with the given columns where no dataset of that name
 * exists yet, unless it is one of `made` (already such a view); resolves to
 * the names that have an empty view now.
 */
export async function createEmptyViews(
  db: Database,
  views: Readonly<Record<string, readonly (readonly [string, string])[]>>,
  existing: readonly Dataset[],
  made: ReadonlySet<string> = new Set(),
): Promise<Set<string>> {
  const empty = new Set<string>();
  for (const [name, columns] of Object.entries(views)) {
    if (existing.some((d) => d.name === name || latestSnapshotView(d) === name)) continue;
    empty.add(name);
    if (made.has(name)) continue;
    const select = columns
      .map(([column, type]) => `CAST(NULL AS ${type}) AS ${quotedIdentifier(column)}`)
      .join(', ');
    await db.run(
      `CREATE OR REPLACE VIEW ${quotedIdentifier(name)} AS SELECT ${select} WHERE false`,
    );
  }
  return empty;
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
    named: new Map(),
    async refresh(found) {
      const files = options.files ?? DISK;
      const datasets = found ?? (await discoverDatasets(output, files));
      const changed = datasets.filter((d) => made.get(d.name) !== signature(d, files));
      const unread = new Set(
        await createDatasetViews(db, changed, options.derived, {
          listed: options.listed,
          files,
          named: folder.named,
        }),
      );
      // A derived table that cannot be read has no view until it is built anew.
      for (const d of changed) if (!unread.has(d.name)) made.set(d.name, signature(d, files));
      if (options.empty) {
        empty = await createEmptyViews(db, options.empty, datasets, empty);
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
