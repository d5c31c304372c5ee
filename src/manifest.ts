/**
 * manifest.json: what has been written to an output folder, by every pipeline
 * that writes it. One schema, read and written alike (the run writes it, the
 * report reads it); the types are inferred from it.
 *
 * - `pipelines`: the last run of each pipeline that has written the folder
 *   (its params, status, steps with their rows, files and sha256, its extracts);
 * - `exports`: every extract under exports/, with its size and sha256 (and rows,
 *   format and writer where road-etl wrote it), the index to publish or sync by;
 * - `last_run`: which pipeline wrote the manifest, and how that run ended.
 */
import { z } from 'zod';

export const MANIFEST_FILE = 'manifest.json';
export const MANIFEST_VERSION = 2;

const fileRecordSchema = z.object({
  /** Path relative to the output folder, with forward slashes. */
  path: z.string(),
  bytes: z.number(),
  sha256: z.string(),
});

export const exportRecordSchema = fileRecordSchema.extend({
  format: z.string(),
  /** Rows written; null for a file under exports/ that road-etl did not write. */
  rows: z.number().nullable(),
  /** The pipeline and step that wrote it, and when. */
  pipeline: z.string().optional(),
  step: z.string().optional(),
  written_at: z.string().optional(),
});

const STEP_STATUSES = ['succeeded', 'failed', 'skipped', 'reused', 'interrupted'] as const;
const RUN_STATUSES = ['succeeded', 'failed', 'interrupted'] as const;

const partitionSetSchema = z.object({
  dataset: z.string(),
  partitions: z.union([z.array(z.string()), z.literal('all')]),
});

/** A step's decision against the folder (StepDecision), as the step carried it out. */
const stepDecisionSchema = z.object({
  decision: z.enum(['skip', 'partial', 'whole']),
  why: z.string(),
  builds: z.array(partitionSetSchema),
  reads: z.array(partitionSetSchema),
  files: z.array(z.string()).optional(),
  may_build: z.array(partitionSetSchema).optional(),
  may_read: z.array(partitionSetSchema).optional(),
  may_files: z.array(z.string()).optional(),
});

const stepReportSchema = z.object({
  id: z.string(),
  kind: z.string(),
  status: z.enum(STEP_STATUSES),
  started_at: z.string().optional(),
  finished_at: z.string().optional(),
  duration_ms: z.number(),
  /** CPU time of the process during the step (user + system), in ms. */
  cpu_ms: z.number(),
  /** Largest resident memory of the process during the step, in bytes. */
  peak_rss_bytes: z.number(),
  rows_in: z.number(),
  rows_out: z.number(),
  /** Files the step wrote (and still there at the end of its run). */
  files: z.array(fileRecordSchema),
  notes: z.record(z.string(), z.unknown()).optional(),
  /** What the step decided to do to the folder before it wrote (road-etl plan prints the same). */
  plan: stepDecisionSchema.optional(),
  error: z.string().optional(),
});

/** The last run of one pipeline. */
export const pipelineRunSchema = z.object({
  pipeline: z.string(),
  definition: z.string(),
  params: z.record(z.string(), z.unknown()),
  road_etl_version: z.string(),
  status: z.enum(RUN_STATUSES),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  steps: z.array(stepReportSchema),
  /** The extracts this run wrote. */
  exports: z.array(exportRecordSchema),
  /** The report page, relative to the output folder, when this run wrote it. */
  report: z.string().optional(),
  error: z.string().optional(),
});

export const manifestSchema = z.object({
  manifest_version: z.literal(MANIFEST_VERSION),
  road_etl_version: z.string(),
  /** When the manifest was written (the end of the last run). */
  updated_at: z.string(),
  /** The folder's commit this manifest describes (the \`id\` of .state/commit.json). */
  commit: z.string(),
  last_run: z.object({
    pipeline: z.string(),
    status: z.enum(RUN_STATUSES),
    finished_at: z.string(),
  }),
  /** Pipeline name -> its last run, for every pipeline that has written the folder. */
  pipelines: z.record(z.string(), pipelineRunSchema),
  /** Every file under exports/, by path. */
  exports: z.array(exportRecordSchema),
  /** The report page, relative to the output folder, when the folder has one. */
  report: z.string().optional(),
});

export type FileRecord = z.output<typeof fileRecordSchema>;
export type ExportRecord = z.output<typeof exportRecordSchema>;
export type StepReport = z.output<typeof stepReportSchema>;
export type PipelineRun = z.output<typeof pipelineRunSchema>;
export type Manifest = z.output<typeof manifestSchema>;
