/**
 * Writes manifest.json (schema in ../manifest.ts) at the end of every run: the
 * run's own record joins those of the other pipelines that have written the
 * folder, and the extracts are listed as they are on disk. What the manifest is
 * made from lives in .state, so that it can always be written again whole:
 * `runs.json` (the last run of each pipeline) and `exports.json` (what road-etl
 * knows of each extract it wrote: rows, format, writer, size and content,
 * kept while the folder names that content for the file).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { STATE_FOLDER, scratchFolder } from '../layout.js';
import { redactor } from '../log.js';
import {
  MANIFEST_FILE,
  MANIFEST_VERSION,
  exportRecordSchema,
  manifestSchema,
  pipelineRunSchema,
  type ExportRecord,
  type Manifest,
  type PipelineRun,
  type StepReport,
} from '../manifest.js';
import { InterruptedError } from '../errors.js';
import type { Pipeline } from './build.js';
import { REPORT_PATH } from '../report/index.js';
import { isTemporaryName, writeFileAtomic } from '../util/fs.js';
import { VERSION } from '../version.js';
import { recordWritten, type FolderFiles } from '../duckdb/folder-files.js';

export { MANIFEST_FILE, type Manifest, type PipelineRun } from '../manifest.js';

const EXPORTS_FOLDER = 'exports';
const RUNS_FILE = join(STATE_FOLDER, 'runs.json');
const EXPORTS_FILE = join(STATE_FOLDER, 'exports.json');

const runsSchema = z.record(z.string(), pipelineRunSchema);
const knownExportSchema = exportRecordSchema;
const knownExportsSchema = z.record(z.string(), knownExportSchema);
type KnownExport = z.output<typeof knownExportSchema>;

/**
 * The run as written: its free text (errors, and the free-text fields of the
 * notes) redacted; names, params, paths and hashes kept as they are.
 */
export function redacted(run: PipelineRun): PipelineRun {
  return {
    ...run,
    steps: run.steps.map((step) => ({
      ...step,
      ...(step.notes ? { notes: redactor.value(step.notes) as Record<string, unknown> } : {}),
      ...(step.error !== undefined ? { error: redactor.text(step.error) } : {}),
    })),
    ...(run.error !== undefined ? { error: redactor.text(run.error) } : {}),
  };
}

/** A JSON file of .state read against its schema; undefined when absent or not what it should be. */
async function readState<T>(
  output: string,
  file: string,
  schema: z.ZodType<T>,
): Promise<T | undefined> {
  const text = await readFile(join(output, file), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function formatOfFile(path: string): string {
  // A CSV's metadata beside it (CSVW, GDAL's CSVT), the folder's DCAT description.
  if (path.endsWith('.csv-metadata.json')) return 'csvw';
  const extension = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  if (extension === 'csvt' || extension === 'jsonld') return extension;
  if (extension === 'json') return 'geojson';
  return extension === 'fgb' ? 'flatgeobuf' : extension;
}

/** Every file below exports/ (relative paths with forward slashes), temporary files left out. */
function filesUnder(files: FolderFiles, output: string): string[] {
  const found: string[] = [];
  const walk = (folder: string, prefix: string): void => {
    for (const entry of files.list(folder)) {
      if (entry.folder) walk(join(folder, entry.name), `${prefix}${entry.name}/`);
      else if (!isTemporaryName(entry.name) && !entry.name.startsWith('.'))
        found.push(`${prefix}${entry.name}`);
    }
  };
  walk(join(output, EXPORTS_FOLDER), `${EXPORTS_FOLDER}/`);
  return found.sort();
}

/**
 * Every extract of the folder with what road-etl knows of it: the record of
 * the run that wrote it while the file holds the same bytes (its content as
 * the folder names it), else a record of those bytes. Resolves to the list
 * and the knowledge to keep.
 */
function listExports(
  files: FolderFiles,
  output: string,
  known: Record<string, KnownExport>,
): { exports: ExportRecord[]; known: Record<string, KnownExport> } {
  const exports: ExportRecord[] = [];
  const kept: Record<string, KnownExport> = {};
  for (const path of filesUnder(files, output)) {
    const file = join(output, path);
    const bytes = files.size(file);
    const sha256 = files.content(file);
    if (bytes === undefined || sha256 === undefined) continue;
    const before = known[path];
    const record =
      before?.sha256 === sha256 && before.bytes === bytes
        ? before
        : { path, bytes, sha256, format: before?.format ?? formatOfFile(path), rows: null };
    kept[path] = record;
    exports.push(exportRecordSchema.parse(record));
  }
  return { exports, known: kept };
}

/**
 * The manifest of a run that has ended: `open` reads what .state knows and
 * lists the extracts on disk (hashing those it does not know), `manifest`
 * composes the manifest for the run's record, `write` puts it and the state
 * it is made from in place.
 */
export class ManifestWriter {
  readonly #output: string;
  readonly #files: FolderFiles;
  readonly #runs: Record<string, PipelineRun>;
  readonly #commit: string;
  #listed: { exports: ExportRecord[]; known: Record<string, KnownExport> };

  private constructor(
    output: string,
    files: FolderFiles,
    runs: Record<string, PipelineRun>,
    listed: { exports: ExportRecord[]; known: Record<string, KnownExport> },
    commit: string,
  ) {
    this.#commit = commit;
    this.#output = output;
    this.#files = files;
    this.#runs = runs;
    this.#listed = listed;
  }

  /** Reads the folder's state; `written` are the extracts the run wrote, `commit` the id of the commit it makes. */
  static async open(
    output: string,
    written: readonly ExportRecord[],
    files: FolderFiles,
    commit: string,
  ): Promise<ManifestWriter> {
    const runs = (await readState(output, RUNS_FILE, runsSchema)) ?? {};
    const known = (await readState(output, EXPORTS_FILE, knownExportsSchema)) ?? {};
    for (const record of written) {
      if (files.size(join(output, record.path)) === undefined) continue;
      // Written again with the same bytes: changed when it last changed (DCAT's dct:modified).
      const before = known[record.path];
      const same = before?.sha256 === record.sha256 && before.bytes === record.bytes;
      known[record.path] = {
        ...record,
        ...(same && before.written_at ? { written_at: before.written_at } : {}),
      };
    }
    return new ManifestWriter(output, files, runs, listExports(files, output, known), commit);
  }

  /** The extracts on disk, as the manifest lists them. */
  get exports(): readonly ExportRecord[] {
    return this.#listed.exports;
  }

  /** Lists the extracts on disk again (after a file under exports/ was written since `open`). */
  relist(): void {
    this.#listed = listExports(this.#files, this.#output, this.#listed.known);
  }

  /** The manifest with `run` as its pipeline's last run (redacted). */
  manifest(run: PipelineRun, report: string | undefined): Manifest {
    const own = redacted(run);
    const runs = { ...this.#runs, [own.pipeline]: own };
    return manifestSchema.parse({
      manifest_version: MANIFEST_VERSION,
      road_etl_version: VERSION,
      updated_at: own.finished_at,
      commit: this.#commit,
      last_run: { pipeline: own.pipeline, status: own.status, finished_at: own.finished_at },
      pipelines: Object.fromEntries(Object.entries(runs).sort(([a], [b]) => a.localeCompare(b))),
      exports: this.#listed.exports,
      ...(report ? { report } : {}),
    } satisfies Manifest);
  }

  /**
   * Writes the manifest and what it is made from; the folder's report is named
   * when the page is there. Resolves to the manifest's path and content.
   */
  async write(run: PipelineRun): Promise<{ path: string; manifest: Manifest }> {
    const output = this.#output;
    const scratch = scratchFolder(output);
    const page = await stat(join(output, REPORT_PATH)).catch(() => undefined);
    const manifest = this.manifest(run, page?.isFile() ? REPORT_PATH : undefined);
    await writeFileAtomic(
      join(output, RUNS_FILE),
      JSON.stringify(manifest.pipelines, null, 2) + '\n',
      scratch,
    );
    await writeFileAtomic(
      join(output, EXPORTS_FILE),
      JSON.stringify(this.#listed.known, null, 2) + '\n',
      scratch,
    );
    const path = join(output, MANIFEST_FILE);
    await writeFileAtomic(path, JSON.stringify(manifest, null, 2) + '\n', scratch);
    await recordWritten(this.#files, path);
    return { path, manifest };
  }
}

/** What a run did, as the manifest's record of it is made from. */
export interface RunRecord {
  started: Date;
  reports: StepReport[];
  exports: ExportRecord[];
  failure: Error | undefined;
}

/** The run as the manifest records it, as of now. */
export function pipelineRun(
  pipeline: Pipeline,
  { started, reports, exports, failure }: RunRecord,
  report: string | undefined,
): PipelineRun {
  const finished = new Date();
  return {
    pipeline: pipeline.name,
    definition: pipeline.file,
    params: pipeline.params,
    road_etl_version: VERSION,
    status: !failure ? 'succeeded' : failure instanceof InterruptedError ? 'interrupted' : 'failed',
    started_at: started.toISOString(),
    finished_at: finished.toISOString(),
    duration_ms: finished.getTime() - started.getTime(),
    steps: reports,
    exports,
    ...(report ? { report } : {}),
    ...(failure ? { error: failure.message } : {}),
  };
}

/**
 * Names the commit `commit` in the folder's manifest, as it is otherwise: a
 * command other than a run (report) that makes the folder's next commit.
 * Nothing when the folder has no manifest yet.
 */
export async function nameCommit(
  output: string,
  commit: string,
  files: FolderFiles,
): Promise<void> {
  const path = join(output, MANIFEST_FILE);
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  const manifest = manifestSchema.parse(JSON.parse(text));
  await writeFileAtomic(
    path,
    JSON.stringify({ ...manifest, commit }, null, 2) + '\n',
    scratchFolder(output),
  );
  await recordWritten(files, path);
}
