/**
 * `report/index.html` of an output folder: one self-contained page (scripts,
 * styles and data inside) with the run, maps and charts of the signs and the
 * bicycle counts, and the data quality, from whatever datasets the folder holds.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { Database, type DatabaseOptions } from '../duckdb/database.js';
import { createDatasetViews, discoverDatasets } from '../duckdb/datasets.js';
import { scratchFolder } from '../layout.js';
import { writeFileAtomic } from '../util/fs.js';
import { pageAssets } from './assets.js';
import type { PageManifest, ReportData, ReportManifest } from './data.js';
import { renderPage } from './html.js';
import { countryOutlines } from './outline.js';
import { queryReport } from './queries.js';

export type { ReportManifest } from './data.js';

/** Where the report is written, relative to the output folder. */
export const REPORT_PATH = join('report', 'index.html');

export const DEFAULT_MAP_SIGNS = 10_000;

export interface ReportOptions {
  /** The run's manifest; default: the folder's manifest.json, if any. */
  manifest?: ReportManifest | undefined;
  /** Signs drawn per map at most (a random sample beyond). Default 10,000. */
  mapSigns?: number | undefined;
  /** A tile URL template ({z}/{x}/{y}) for the maps' background; default none (no network). */
  tiles?: { url: string; attribution: string } | undefined;
  database?: DatabaseOptions | undefined;
}

export interface ReportResult {
  /** Absolute path of the page. */
  path: string;
  bytes: number;
  /** Sections drawn from data, and those absent. */
  sections: { signs: boolean; bicycle: boolean };
}

/** Colours of the RVV categories (the letters a code starts with), as on the signs where one fits. */
export const RVV_COLOURS: Record<string, string> = {
  A: '#d62728', // speed
  B: '#ff7f0e', // priority
  C: '#8c1c13', // closed, no entry
  D: '#1f77b4', // mandatory direction
  E: '#17becf', // parking and stopping
  F: '#9467bd', // other orders
  G: '#2ca02c', // traffic rules
  H: '#8c564b', // built-up area
  J: '#bcbd22', // warnings
  K: '#0b6e4f', // direction signs
  L: '#393b79', // information
  OB: '#7f7f7f', // sub-plates
  other: '#222222',
};

const manifestSchema = z.looseObject({
  pipeline: z.string(),
  definition: z.string().default(''),
  params: z.record(z.string(), z.unknown()).default({}),
  status: z.string(),
  started_at: z.string().default(''),
  finished_at: z.string().default(''),
  duration_ms: z.number().default(0),
  road_etl_version: z.string().default(''),
  steps: z
    .array(
      z.looseObject({
        id: z.string(),
        kind: z.string().default(''),
        status: z.string(),
        duration_ms: z.number().default(0),
        cpu_ms: z.number().optional(),
        peak_rss_bytes: z.number().optional(),
        rows_in: z.number().default(0),
        rows_out: z.number().default(0),
        files: z.array(z.unknown()).default([]),
        error: z.string().optional(),
      }),
    )
    .default([]),
  exports: z
    .array(
      z.looseObject({
        path: z.string(),
        format: z.string().default(''),
        rows: z.number().default(0),
        bytes: z.number().default(0),
      }),
    )
    .default([]),
  error: z.string().optional(),
});

/** What the page shows of a manifest: the files of a step counted, its notes left out. */
function pageManifest(manifest: ReportManifest): PageManifest {
  const { pipeline, definition, params, status, started_at, finished_at, duration_ms } = manifest;
  return {
    pipeline,
    definition,
    params,
    status,
    started_at,
    finished_at,
    duration_ms,
    road_etl_version: manifest.road_etl_version,
    exports: manifest.exports.map(({ path, format, rows, bytes }) => ({
      path,
      format,
      rows,
      bytes,
    })),
    ...(manifest.report === undefined ? {} : { report: manifest.report }),
    ...(manifest.error === undefined ? {} : { error: manifest.error }),
    steps: manifest.steps.map((step) => ({
      id: step.id,
      kind: step.kind,
      status: step.status,
      duration_ms: step.duration_ms,
      cpu_ms: step.cpu_ms,
      peak_rss_bytes: step.peak_rss_bytes,
      rows_in: step.rows_in,
      rows_out: step.rows_out,
      files: step.files.length,
      ...(step.error === undefined ? {} : { error: step.error }),
    })),
  };
}

/** The folder's manifest.json, or why there is none to show. */
export async function readManifest(
  output: string,
): Promise<{ manifest: ReportManifest | null; problem?: string }> {
  let text: string;
  try {
    text = await readFile(join(output, 'manifest.json'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { manifest: null };
    return { manifest: null, problem: (error as Error).message };
  }
  try {
    const parsed = manifestSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { manifest: parsed.data };
    return {
      manifest: null,
      problem: `manifest.json is not a road-etl manifest: ${parsed.error.issues[0]?.message ?? ''}`,
    };
  } catch (error) {
    return { manifest: null, problem: `manifest.json is not JSON: ${(error as Error).message}` };
  }
}

export async function writeReport(
  output: string,
  options: ReportOptions = {},
): Promise<ReportResult> {
  const { manifest, problem } = options.manifest
    ? { manifest: options.manifest, problem: undefined }
    : await readManifest(output);
  const datasets = await discoverDatasets(output);
  const db = await Database.open(options.database);
  let data: ReportData;
  try {
    await createDatasetViews(db, datasets);
    const found = await queryReport(db, datasets, {
      mapSigns: options.mapSigns ?? DEFAULT_MAP_SIGNS,
      top: 20,
    });
    data = {
      generatedAt: new Date().toISOString(),
      output,
      manifest: manifest ? pageManifest(manifest) : null,
      manifestProblem: problem ?? null,
      ...found,
      tiles: options.tiles ?? null,
      outline: options.tiles ? null : await countryOutlines(),
    };
  } finally {
    db.close();
  }
  const html = renderPage(data, await pageAssets(), RVV_COLOURS);
  const path = join(output, REPORT_PATH);
  await writeFileAtomic(path, html, scratchFolder(output));
  return {
    path,
    bytes: Buffer.byteLength(html),
    sections: { signs: data.signs !== null, bicycle: data.bicycle !== null },
  };
}
