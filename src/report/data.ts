import type { FeatureCollection } from 'geojson';

/**
 * What the report shows, as the page receives it: aggregates of the output's
 * datasets (queries.ts), never the datasets themselves, so that the page stays
 * small at any scale. The page's scripts (page/*.ts) read the same types.
 */

/** A value and how often it occurs, most frequent first. */
export type Count = [label: string, count: number];

/** Points to draw, column by column (one entry per point in every array). */
export interface SignPoints {
  /** Points in the dataset (with a position). */
  total: number;
  /** Points drawn: all of them, or a random sample of this many. */
  shown: number;
  id: string[];
  longitude: number[];
  latitude: number[];
  rvvCode: (string | null)[];
  road: (string | null)[];
  town: (string | null)[];
  text: (string | null)[];
  image: (string | null)[];
}

export interface SignState {
  /** The view the numbers come from (signs_current_state, signs_live). */
  view: string;
  title: string;
  /** Signs in the view. */
  signs: number;
  /** Signs by RVV category (the letters an RVV code starts with). */
  byCategory: Count[];
  /** The most frequent RVV codes, and the rest summed as "other codes". */
  byCode: Count[];
  /** The towns with the most signs, and the rest summed as "other towns". */
  byTown: Count[];
  points: SignPoints;
}

export interface SignsSection {
  states: SignState[];
  events?: {
    events: number;
    signs: number;
    first: string | null;
    last: string | null;
    /**
     * Monday of each ISO week (UTC) with its events by type; `partial` where the
     * events read so far cover only part of the week (the first and the last).
     */
    weeks: {
      week: string[];
      created: number[];
      updated: number[];
      deleted: number[];
      partial: boolean[];
    };
  };
  reconcile?: {
    differences: number;
    byDifference: Count[];
    byField: Count[];
    examples: { id: string; difference: string; fields: string }[];
  };
  live?: {
    snapshots: number;
    first: string | null;
    latest: string | null;
    /** Per pair of consecutive snapshots (by the later one): signs added, removed and changed. */
    changes: { moment: string[]; added: number[]; removed: number[]; changed: number[] };
    byField: Count[];
  };
}

export interface BicycleLocationPoint {
  id: string;
  name: string | null;
  authority: string | null;
  longitude: number;
  latitude: number;
  /** Cyclists counted over the period; null where the location has no measurement. */
  cyclists: number | null;
  /** Hours with a measurement out of the hours of the period (0..1); null without measurements. */
  completeness: number | null;
}

export interface BicycleSection {
  /** Locations in the catalog. */
  locations: number;
  /** Locations with at least one measurement. */
  measuredLocations: number;
  /** First and last hour measured (UTC). */
  firstHour: string | null;
  lastHour: string | null;
  /** Cyclists counted over the period, all locations. */
  cyclists: number;
  /** Location-hours with a measurement. */
  locationHours: number;
  points: BicycleLocationPoint[];
  /**
   * Local dates (Europe/Amsterdam) of the period, with the hours each has (23,
   * 24 or 25, from bicycle_daily; null for a day without any count), the hours
   * of it with a count at any location (fewer on the period's first and last
   * local day, which UTC bounds cut), and the cyclists.
   */
  days: {
    date: string[];
    hours: (number | null)[];
    /** The hours of the day inside the landed period (bicycle_daily's hours_in_period; null as hours). */
    periodHours: (number | null)[];
    measuredHours: number[];
    total: number[];
    /** Days not measured whole at any location yet (the counts landed cut them): not drops. */
    partial: boolean[];
  };
  /** Daily totals of each measured location, aligned with days.date (null: no measurement). */
  perLocation: { id: string; name: string | null; total: (number | null)[] }[];
  /** Mean cyclists per location and hour, by local hour of the day. */
  profile: { weekday: (number | null)[]; weekend: (number | null)[] };
  /** Locations by completeness over the period. */
  completeness: Count[];
  leastComplete: { id: string; name: string | null; completeness: number }[];
  /** Where hourly and daily data is absent (no bicycle_hourly): what to run. */
  missing?: string;
  /** The counters' health (bicycle_quality), when the folder has it. */
  health?: BicycleHealth;
}

/** The counters' health: each location-day judged ok, suspect or faulty (sql/bicycle_quality.sql). */
export interface BicycleHealth {
  judged: number;
  ok: number;
  suspect: number;
  faulty: number;
  locations: number;
  first: string | null;
  last: string | null;
  /** Location-days per flag, and the faulty among them. */
  flags: { flag: string; days: number; faulty: number }[];
  /** The counters with the most faulty (then suspect) days, with their flags. */
  worst: {
    id: string;
    name: string | null;
    judged: number;
    faulty: number;
    suspect: number;
    flags: string;
  }[];
  /** The last dates judged, and for the worst counters each date's status and flags (null: not judged). */
  calendar: {
    dates: string[];
    rows: { id: string; name: string | null; cells: ([string, string] | null)[] }[];
  };
}

export interface QualitySection {
  quarantine: { dataset: string; rows: number; byReason: Count[]; example: string | null }[];
  typing: { dataset: string; rows: number; rowsWithIssues: number; byField: Count[] }[];
}

/** A pipeline's last run as the page carries it: each step's files counted, not listed. */
export interface PageRun {
  pipeline: string;
  definition: string;
  params: Record<string, unknown>;
  status: string;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  road_etl_version: string;
  steps: {
    id: string;
    kind: string;
    status: string;
    duration_ms: number;
    cpu_ms: number;
    peak_rss_bytes: number;
    rows_in: number;
    rows_out: number;
    files: number;
    error?: string;
  }[];
  error?: string;
}

/** The folder's manifest as the page carries it: the runs, the last one first, and the extracts. */
export interface PageManifest {
  updated_at: string;
  runs: PageRun[];
  exports: { path: string; format: string; rows: number | null; bytes: number }[];
}

export interface ReportData {
  generatedAt: string;
  output: string;
  manifest: PageManifest | null;
  /** Why the folder's manifest.json could not be read, when it could not. */
  manifestProblem: string | null;
  datasets: { name: string; path: string; rows: number }[];
  signs: SignsSection | null;
  bicycle: BicycleSection | null;
  quality: QualitySection;
  /** A tile URL template for the maps' background, when the definition names one. */
  tiles: { url: string; attribution: string } | null;
  /** Without tiles: the outlines of the Netherlands and its neighbours, drawn beneath the marks. */
  outline: FeatureCollection | null;
}
