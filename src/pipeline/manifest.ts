/** manifest.json: what the last run did, suitable as the index of a published extract. */
import { join } from 'node:path';
import type { ParamValue } from '../config/params.js';
import { redactor } from '../log.js';
import { writeFileAtomic, type FileRecord } from '../util/fs.js';
import { scratchFolder } from '../layout.js';
import type { ExportRecord } from '../steps/step-kind.js';

export type StepStatus = 'succeeded' | 'failed' | 'skipped' | 'reused' | 'interrupted';

export interface StepReport {
  id: string;
  kind: string;
  status: StepStatus;
  started_at: string | undefined;
  finished_at: string | undefined;
  duration_ms: number;
  /** CPU time of the process during the step (user + system), in ms. */
  cpu_ms: number;
  /** Largest resident memory of the process during the step, in bytes. */
  peak_rss_bytes: number;
  rows_in: number;
  rows_out: number;
  files: FileRecord[];
  notes?: Record<string, unknown>;
  error?: string;
}

export interface Manifest {
  manifest_version: 1;
  road_etl_version: string;
  pipeline: string;
  definition: string;
  params: Record<string, ParamValue>;
  status: 'succeeded' | 'failed' | 'interrupted';
  started_at: string;
  finished_at: string;
  duration_ms: number;
  steps: StepReport[];
  exports: ExportRecord[];
  /** The report page, relative to the output folder, when the run wrote one. */
  report?: string;
  error?: string;
}

export const MANIFEST_FILE = 'manifest.json';

/**
 * The manifest as written: its free text (errors, and the free-text fields of
 * the notes) redacted; names, params, paths and hashes kept as they are.
 */
export function redacted(manifest: Manifest): Manifest {
  return {
    ...manifest,
    steps: manifest.steps.map((step) => ({
      ...step,
      ...(step.notes ? { notes: redactor.value(step.notes) as Record<string, unknown> } : {}),
      ...(step.error !== undefined ? { error: redactor.text(step.error) } : {}),
    })),
    ...(manifest.error !== undefined ? { error: redactor.text(manifest.error) } : {}),
  };
}

export async function writeManifest(output: string, manifest: Manifest): Promise<string> {
  const path = join(output, MANIFEST_FILE);
  await writeFileAtomic(
    path,
    JSON.stringify(redacted(manifest), null, 2) + '\n',
    scratchFolder(output),
  );
  return path;
}
