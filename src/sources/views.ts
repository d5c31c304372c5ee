/**
 * Views a dataset brings beside its own, by dataset name: made wherever an
 * output folder is opened (a run, `query`, the report), from the dataset's
 * view and, for a dataset of snapshots, the view of its latest one.
 */
import { liveViews } from './signs/live-views.js';

export type DatasetViews = (view: string, latest: string | undefined) => Record<string, string>;

export const DATASET_VIEWS: Readonly<Record<string, DatasetViews>> = {
  signs_live_snapshots: (all, latest) => liveViews(all, latest ?? all),
};
