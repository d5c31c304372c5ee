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
import type { RequestOptions } from '../http/options.js';
import { readCheckpoint } from '../sources/context.js';
import type { PlanContext, StepContext, StepDecision, StepOutcome } from './step-kind.js';

/**
 * What a download step's data was taken with: its request (the options that
 * shape the answer) and the service's Last-Modified. A value that is not text
 * is as good as absent: the next run downloads again.
 */
export const downloadCheckpoint = z.object({
  request: z.string().optional().catch(undefined),
  last_modified: z.string().optional().catch(undefined),
  /** When the data was downloaded (ISO 8601 UTC). */
  downloaded_at: z.string().optional().catch(undefined),
});

export type DownloadCheckpoint = z.output<typeof downloadCheckpoint>;

/** What a download step will ask: its request, and the If-Modified-Since it sends (null: none). */
export interface DownloadPlan {
  /** The options that shape the answer (JSON): only the same request may skip the download. */
  request: string;
  /** The Last-Modified of the data landed by the same request, while that data is there. */
  if_modified_since: string | null;
}

/**
 * Plans a download: If-Modified-Since only when the last download was the same
 * request and what it landed may be kept (`mayKeep`, default yes), and, with
 * `fullAfterMs`, was made less than that long ago (a service that keeps saying
 * 304 is not believed for longer).
 */
export function planDownload(
  context: PlanContext,
  request: readonly unknown[],
  { mayKeep = true, fullAfterMs }: { mayKeep?: boolean; fullAfterMs?: number } = {},
): DownloadPlan {
  const previous = readCheckpoint<DownloadCheckpoint>(context, downloadCheckpoint, () => ({}));
  const key = JSON.stringify(request);
  const since = previous.request === key ? previous.last_modified : undefined;
  const age = Date.now() - Date.parse(previous.downloaded_at ?? '');
  const recent = fullAfterMs === undefined || age < fullAfterMs;
  return { request: key, if_modified_since: mayKeep && recent ? (since ?? null) : null };
}

/** The download in words. */
export function describeDownload(plan: DownloadPlan): string {
  return plan.if_modified_since
    ? `asks If-Modified-Since ${plan.if_modified_since}: kept as it is when the service has nothing newer`
    : 'downloads whatever the service has';
}

/** Saves what a download was taken with (and what the step adds), once its data has landed. */
async function saveDownload(
  context: StepContext,
  request: string,
  headers: Readonly<Record<string, unknown>>,
  downloadedAt: number,
  more: Record<string, unknown> = {},
): Promise<void> {
  const lastModified = headers['last-modified'];
  await context.state.save({
    ...more,
    request,
    ...(typeof lastModified === 'string' ? { last_modified: lastModified } : {}),
    downloaded_at: new Date(downloadedAt).toISOString(),
  } satisfies DownloadCheckpoint);
}

export interface Fetched {
  headers: Readonly<Record<string, unknown>>;
  /** The service has nothing newer than what the last download landed (304). */
  notModified: boolean;
}

export interface DownloadStep {
  /** The file's name in the staging folder. */
  file: string;
  /** Downloads into `file`, asking If-Modified-Since `since` when given. */
  fetch(http: HttpClient, file: string, since: string | undefined): Promise<Fetched>;
  /** The outcome when the service has nothing newer (the previous download's Last-Modified). */
  unchanged(lastModified: string | undefined): StepOutcome;
  /** Lands the downloaded file; resolves to the step's outcome. */
  land(file: string, headers: Fetched['headers']): Promise<StepOutcome>;
  /** What the step keeps in its checkpoint beside the download's own, once landed. */
  checkpoint?: () => Record<string, unknown>;
  /**
   * The endpoint, when an answer that came whole may still be unsound (cut
   * short but ended cleanly, empty, implausible: land throws a RetryableError):
   * the download and its landing are then tried again with backoff, and at last
   * reported as upstream trouble naming it.
   */
  endpoint?: { method: 'GET'; url: string };
}

/** The service's Last-Modified in ms; NaN when it gave none (or none that parses). */
export function lastModifiedMs(headers: Fetched['headers']): number {
  const value = headers['last-modified'];
  return typeof value === 'string' ? Date.parse(value) : NaN;
}

/** Runs a planned download: an empty staging folder, the download, landing, then the checkpoint. */
export async function runDownload(
  options: RequestOptions,
  context: StepContext,
  { plan, decision }: { plan: DownloadPlan; decision: StepDecision },
  step: DownloadStep,
): Promise<StepOutcome> {
  const http = context.http(options);
  const since = plan.if_modified_since ?? undefined;
  const file = join(context.staging, step.file);
  let counted = 0;
  const attempt = async (): Promise<StepOutcome> => {
    await rm(context.staging, { recursive: true, force: true });
    await makeFolder(context.staging);
    const downloadedAt = Date.now();
    const { headers, notModified } = await step.fetch(http, file, since);
    context.progress.add({ requests: http.requests - counted });
    counted = http.requests;
    // Nothing newer: what the decision said it would build is not built.
    if (notModified)
      return {
        ...step.unchanged(since),
        decision: {
          decision: 'skip',
          why: `the service has nothing newer than ${since ?? 'the last download'} (304)`,
          builds: [],
          reads: [],
        },
      };
    const outcome = await step.land(file, headers);
    await saveDownload(context, plan.request, headers, downloadedAt, step.checkpoint?.());
    // Asked If-Modified-Since, and the service had a newer one: what the decision said it may build, built.
    return since === undefined
      ? outcome
      : {
          ...outcome,
          decision: {
            decision: (decision.may_build ?? decision.builds).every((s) => s.partitions === 'all')
              ? 'whole'
              : 'partial',
            why: `the service has a newer one than ${since}`,
            builds: decision.may_build ?? decision.builds,
            reads: decision.reads,
          },
        };
  };
  try {
    return step.endpoint
      ? await http.retryAnswer({ ...step.endpoint, signal: context.signal }, attempt)
      : await attempt();
  } finally {
    await rm(context.staging, { recursive: true, force: true });
  }
}
