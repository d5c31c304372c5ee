/**
 * A step that downloads a whole file (the v1 current state, today's API): an
 * empty staging folder to download into, the download asked with
 * If-Modified-Since when the last one was the same request, the data landed,
 * and what the download was taken with saved only once its data has landed.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { HttpClient } from '../http/client.js';
import { makeFolder } from '../util/fs.js';
import { httpClientFor, type RequestOptions } from './http-options.js';
import { readCheckpoint } from './plumbing.js';
import type { StepContext, StepOutcome } from './step-kind.js';

/**
 * What a download step's data was taken with: its request (the options that
 * shape the answer) and the service's Last-Modified. A value that is not text
 * is as good as absent: the next run downloads again.
 */
const downloadCheckpoint = z.object({
  request: z.string().optional().catch(undefined),
  last_modified: z.string().optional().catch(undefined),
});

export type DownloadCheckpoint = z.output<typeof downloadCheckpoint>;

/** The start of a download step: an empty staging folder, and what the last download was taken with. */
async function startDownload(context: StepContext): Promise<DownloadCheckpoint> {
  await rm(context.staging, { recursive: true, force: true });
  await makeFolder(context.staging);
  return readCheckpoint(context, downloadCheckpoint, () => ({}));
}

/** The If-Modified-Since a download may send: only the same request may skip the download. */
function modifiedSince(previous: DownloadCheckpoint, request: string): string | undefined {
  return previous.request === request ? previous.last_modified : undefined;
}

/** Saves what a download was taken with, once its data has landed. */
async function saveDownload(
  context: StepContext,
  request: string,
  headers: Readonly<Record<string, unknown>>,
): Promise<void> {
  const lastModified = headers['last-modified'];
  await context.state.save({
    request,
    ...(typeof lastModified === 'string' ? { last_modified: lastModified } : {}),
  } satisfies DownloadCheckpoint);
}

export interface Fetched {
  headers: Readonly<Record<string, unknown>>;
  /** The service has nothing newer than what the last download landed (304). */
  notModified: boolean;
}

export interface DownloadStep {
  /** The options that shape the answer: only the same request may skip the download. */
  request: readonly unknown[];
  /** The file's name in the staging folder. */
  file: string;
  /** Whether a download may be skipped at all (what it would keep is there). Default: yes. */
  mayKeep?: () => Promise<boolean>;
  /** Downloads into `file`, asking If-Modified-Since `since` when given. */
  fetch(http: HttpClient, file: string, since: string | undefined): Promise<Fetched>;
  /** The outcome when the service has nothing newer (the previous download's Last-Modified). */
  unchanged(lastModified: string | undefined): StepOutcome;
  /** Lands the downloaded file; resolves to the step's outcome. */
  land(file: string, headers: Fetched['headers']): Promise<StepOutcome>;
}

/** The service's Last-Modified in ms; NaN when it gave none (or none that parses). */
export function lastModifiedMs(headers: Fetched['headers']): number {
  const value = headers['last-modified'];
  return typeof value === 'string' ? Date.parse(value) : NaN;
}

/** Runs a download step: staging, conditional download, landing, then the checkpoint. */
export async function runDownload(
  options: RequestOptions,
  context: StepContext,
  step: DownloadStep,
): Promise<StepOutcome> {
  const previous = await startDownload(context);
  const http = httpClientFor(options, context);
  try {
    const request = JSON.stringify(step.request);
    const since = modifiedSince(previous, request);
    const mayKeep = since !== undefined && (step.mayKeep ? await step.mayKeep() : true);
    const file = join(context.staging, step.file);
    const { headers, notModified } = await step.fetch(http, file, mayKeep ? since : undefined);
    context.progress.add({ requests: http.requests });
    if (notModified) return step.unchanged(previous.last_modified);
    const outcome = await step.land(file, headers);
    await saveDownload(context, request, headers);
    return outcome;
  } finally {
    await http.close();
    await rm(context.staging, { recursive: true, force: true });
  }
}
