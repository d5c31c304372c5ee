/**
 * `report/index.html` of an output folder: one self-contained page (scripts,
 * styles and data inside) with the run, maps and charts of the signs and the
 * bicycle counts, and the data quality, from whatever datasets the folder holds.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DatabaseOptions } from '../duckdb/database.js';
import { openOutputFolder } from '../duckdb/folder.js';
import { scratchFolder } from '../layout.js';
import { writeFileAtomic } from '../util/fs.js';
import { pageAssets } from './assets.js';
import type { PageManifest, ReportData } from './data.js';
import { MANIFEST_FILE, MANIFEST_VERSION, manifestSchema, type Manifest } from '../manifest.js';
import { renderPage } from './html.js';
import { countryOutlines } from './outline.js';
import { queryReport } from './queries.js';

/** Where the report is written, relative to the output folder. */
export const REPORT_PATH = join('report', 'index.html');

export const DEFAULT_MAP_SIGNS = 10_000;

export interface ReportOptions {
  /** The run's manifest; default: the folder's manifest.json, if any. */
  manifest?: Manifest | undefined;
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
const RVV_COLOURS: Record<string, string> = {
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

/** What the page shows of a manifest: the runs, the last one first, their files counted. */
function pageManifest(manifest: Manifest): PageManifest {
  const last = manifest.last_run.pipeline;
  const runs = Object.values(manifest.pipelines).sort(
    (a, b) => Number(b.pipeline === last) - Number(a.pipeline === last),
  );
  return {
    updated_at: manifest.updated_at,
    runs: runs.map((run) => ({
      pipeline: run.pipeline,
      definition: run.definition,
      params: run.params,
      status: run.status,
      started_at: run.started_at,
      finished_at: run.finished_at,
      duration_ms: run.duration_ms,
      road_etl_version: run.road_etl_version,
      ...(run.error === undefined ? {} : { error: run.error }),
      steps: run.steps.map((step) => ({
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
    })),
    exports: manifest.exports.map(({ path, format, rows, bytes }) => ({
      path,
      format,
      rows,
      bytes,
    })),
  };
}

/** The folder's manifest.json, or why there is none to show. */
export async function readManifest(
  output: string,
): Promise<{ manifest: Manifest | null; problem?: string }> {
  let text: string;
  try {
    text = await readFile(join(output, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { manifest: null };
    return { manifest: null, problem: (error as Error).message };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { manifest: null, problem: `manifest.json is not JSON: ${(error as Error).message}` };
  }
  const parsed = manifestSchema.safeParse(json);
  if (parsed.success) return { manifest: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    manifest: null,
    problem: `manifest.json is not a road-etl manifest of version ${MANIFEST_VERSION}: ${issue ? `${issue.path.join('.')}: ${issue.message}` : ''}`,
  };
}

export async function writeReport(
  output: string,
  options: ReportOptions = {},
): Promise<ReportResult> {
  const { manifest, problem } = options.manifest
    ? { manifest: options.manifest, problem: undefined }
    : await readManifest(output);
  const folder = await openOutputFolder(output, { database: options.database, views: false });
  const db = folder.db;
  let data: ReportData;
  try {
    const datasets = await folder.refresh();
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
    folder.close();
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
