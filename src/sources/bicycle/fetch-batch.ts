/**
 * One batch of measurements: the request, its body written to the staging
 * folder, typed by DuckDB into the batch's staged file, and asked for again
 * when DuckDB cannot read the body as JSON (a body cut short on the way).
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamError } from '../../errors.js';
import { backoffDelay } from '../../http/answers.js';
import { join } from 'node:path';
import type { Database } from '../../duckdb/database.js';
import { fileExcerpt } from '../../util/fs.js';
import { formatSecondTimestamp } from '../../util/time.js';
import type { Batch } from './batches.js';
import type { BicycleClient, Selection } from './client.js';
import { UnreadableBodyError, stageBatch, type StagedBatch } from './landing.js';

/** The name of a batch's staged file, without extension: the same batch, the same file. */
function batchStem(batch: Batch): string {
  return `b${createHash('sha256')
    .update(JSON.stringify([batch.from, batch.to, batch.ids]))
    .digest('hex')
    .slice(0, 20)}`;
}

export interface BatchRequest {
  batch: Batch;
  /** What the request names: the batch's ids, or the selection as given (server side). */
  selection: Selection;
}

export type BatchAnswer =
  { ok: true; staged: StagedBatch; file: string } | { ok: false; message: string };

export interface FetchBatchOptions {
  client: BicycleClient;
  /** The staging folder. */
  staging: string;
  /** Stages a body: DuckDB work, one batch at a time on the run's connection. */
  stage: (work: (db: Database) => Promise<StagedBatch>) => Promise<StagedBatch>;
  /** The most passages a location counts in an hour (max_count). */
  maxCount: number;
  /** Times an unreadable body is asked for again, and the first wait before it (doubling, with jitter). */
  retries: number;
  backoffMs: number;
  signal: AbortSignal;
  /** Told of each request answered; of an answer with data (before it is staged); of a request that failed without an answer; of each body asked for again. */
  onRequest: () => void;
  onOk: () => void;
  onFailed: () => void;
  onRetry: (message: string, attempt: number) => void;
}

/**
 * Requests a batch and stages its body as `<stem>.parquet`; a refusal (400)
 * comes back with the service's message. Other upstream trouble is thrown.
 */
export async function fetchBatch(
  request: BatchRequest,
  options: FetchBatchOptions,
): Promise<BatchAnswer> {
  const { batch, selection } = request;
  const stem = batchStem(batch);
  const body = join(options.staging, `${stem}.json`);
  for (let attempt = 0; ; attempt++) {
    try {
      let answer;
      try {
        answer = await options.client.measurements(
          selection,
          formatSecondTimestamp(batch.from),
          formatSecondTimestamp(batch.to),
          body,
          options.signal,
        );
      } catch (error) {
        options.onFailed();
        throw error;
      }
      options.onRequest();
      if (!answer.ok) return { ok: false, message: answer.message };
      options.onOk();
      const staged = await options.stage((db) =>
        stageBatch(db, options.staging, stem, body, { ...batch, maxCount: options.maxCount }),
      );
      return { ok: true, staged, file: `${stem}.parquet` };
    } catch (error) {
      if (!(error instanceof UnreadableBodyError)) throw error;
      // A body that came whole on the wire but cannot be read is upstream trouble, as a broken transfer is.
      if (attempt >= options.retries)
        throw new UpstreamError(
          `Request failed after ${attempt + 1} attempts (${error.message})`,
          {
            method: 'POST',
            url: options.client.measurementsUrl(selection),
            status: 200,
            body: await fileExcerpt(body, 'start'),
          },
          { cause: error },
        );
      options.onRetry(error.message, attempt + 2);
      await sleep(backoffDelay(attempt, options.backoffMs), undefined, { signal: options.signal });
    } finally {
      await rm(body, { force: true });
    }
  }
}
