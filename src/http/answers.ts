/**
 * How the HTTP client reads an answer: its body (gunzipped), a file written
 * from it, and what a failed answer is: worth another attempt (network errors,
 * 408/429/5xx, bodies cut short or refused) or a failure naming the endpoint,
 * the status and the body.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createGunzip, gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { Dispatcher } from 'undici';
import { RoadEtlError, UpstreamError, explainIoError } from '../errors.js';
import { fileExcerpt } from '../util/fs.js';

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | undefined;
  /** Statuses returned to the caller instead of failing (e.g. 400, 401). */
  pass?: readonly number[];
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** A failure worth another attempt; carries what the last attempt saw. */
export class RetryableError extends Error {
  override name = 'RetryableError';
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly body: string,
    readonly retryAfterMs: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

function retryAfter(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** A failure of the connection or the transfer, worth another attempt. */
export function networkError(
  error: unknown,
  doing = 'Network error',
  status?: number,
): RetryableError {
  const e = error as { code?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  const what = [code, e.message].filter(Boolean).join(': ');
  const gzip = typeof code === 'string' && code.startsWith('Z_');
  return new RetryableError(
    `${gzip ? 'The gzip body cannot be inflated' : doing}: ${what}`,
    status,
    '',
    undefined,
    { cause: error },
  );
}

/**
 * The wait before attempt `n + 2`: exponential from `first`, with full jitter,
 * at most `max`.
 */
export function backoffDelay(n: number, first: number, max = 30_000): number {
  return Math.min(max, Math.random() * first * 2 ** n);
}

/** The least rate a body must come at: `minRate` bytes a second over each span of `windowMs` (0: any). */
export interface Rate {
  minRate: number;
  windowMs: number;
}

/**
 * A pass-through that fails when the body comes slower than the rate (an
 * answer that trickles would otherwise never end: undici's idle timeout starts
 * again at every byte). The readers take its failure for a transfer that broke
 * off, worth another attempt.
 */
function rateGuard({ minRate, windowMs }: Rate): Transform {
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
    destroy(error, done) {
      clearInterval(timer);
      done(error);
    },
    flush(done) {
      clearInterval(timer);
      done();
    },
  });
  if (minRate > 0) {
    timer = setInterval(() => {
      if (bytes < (minRate * windowMs) / 1000) {
        const seconds = windowMs / 1000;
        guard.destroy(
          Object.assign(
            new Error(
              `the answer came too slowly (${bytes} bytes in ${seconds} s, less than min_rate ${minRate} bytes a second)`,
            ),
            { code: 'ETOOSLOW' },
          ),
        );
      }
      bytes = 0;
    }, windowMs);
    timer.unref();
  }
  return guard;
}

/** Whether the server compressed the body (asked for or not). */
function isGzip(response: Dispatcher.ResponseData): boolean {
  return /\bgzip\b/.test(String(response.headers['content-encoding'] ?? ''));
}

const gunzipAsync = promisify(gunzip);

/**
 * The size of the pieces a gzip body is inflated into. zlib's default
 * (16 kB) makes 130,000 pieces of a national current state, each a write and
 * a turn of the stream machinery: a third of the CPU of inflating it in
 * 1 MB pieces.
 */
export const INFLATE_CHUNK = 1 << 20;

/**
 * The pieces of a body gathered into pieces of at least `size` bytes, the
 * last one whatever is left. A server that streams its answer in small
 * chunks (16 kB, as a gzip stream writes them) hands undici a body piece
 * for each; inflated as they came, the pieces of 60 MB of gzip took 50 s of
 * CPU, gathered 1.9 s (curl: 2.2 s).
 */
export function gathered(size = INFLATE_CHUNK): Transform {
  let held: Buffer[] = [];
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      held.push(chunk);
      bytes += chunk.length;
      if (bytes < size) {
        done();
        return;
      }
      const piece = held.length === 1 ? held[0]! : Buffer.concat(held, bytes);
      held = [];
      bytes = 0;
      done(null, piece);
    },
    flush(done) {
      done(null, bytes > 0 ? Buffer.concat(held, bytes) : undefined);
    },
  });
}

/** The whole body of a response; a transfer that breaks off is worth another attempt. */
export async function readBody(
  response: Dispatcher.ResponseData,
  req: HttpRequest,
  signal: AbortSignal,
  rate: Rate,
): Promise<Buffer> {
  try {
    const chunks: Buffer[] = [];
    await pipeline(response.body, rateGuard(rate), async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) chunks.push(chunk);
    });
    const body = Buffer.concat(chunks);
    return isGzip(response) ? await gunzipAsync(body, { chunkSize: INFLATE_CHUNK }) : body;
  } catch (error) {
    if (signal.aborted && req.signal?.aborted) throw error;
    throw networkError(error);
  }
}

/**
 * A response that is not a success: returned when the caller takes its status
 * (`pass`), retried where that can help, otherwise a failure naming endpoint,
 * status and body.
 */
export function notOk(
  req: HttpRequest,
  response: HttpResponse,
  what = 'Request failed',
): HttpResponse {
  if (req.pass?.includes(response.status)) return response;
  const body = response.body.toString('utf8');
  if (RETRY_STATUSES.has(response.status)) {
    throw new RetryableError(
      `Upstream answered ${response.status}`,
      response.status,
      body,
      retryAfter(response.headers['retry-after']),
    );
  }
  throw new UpstreamError(what, {
    method: req.method,
    url: shortUrl(req.url),
    status: response.status,
    body,
  });
}

/** A file check: why the written body is not what was asked for, or undefined. */
export type FileCheck = (
  headers: HttpResponse['headers'],
  path: string,
) => Promise<string | undefined>;

/**
 * Streams a 2xx body to `path` (gunzipped when compressed) and lets check()
 * refuse the file. A transfer that breaks off, or a refused file, is removed and
 * worth another attempt; a transfer stopped by the caller's signal is not.
 */
export async function bodyToFile(
  response: Dispatcher.ResponseData,
  path: string,
  check: FileCheck | undefined,
  stopped: () => boolean,
  doing: string,
  rate: Rate,
): Promise<void> {
  const { statusCode: status, headers } = response;
  try {
    const received = [response.body, rateGuard(rate), gathered()];
    const decoded = isGzip(response)
      ? [...received, createGunzip({ chunkSize: INFLATE_CHUNK })]
      : received;
    await pipeline([...decoded, createWriteStream(path)]);
  } catch (error) {
    await rm(path, { force: true });
    if (stopped()) throw error;
    // The local disk, not the service: a full disk or a read-only folder is no reason to ask again.
    const local = explainIoError(error, `writing the response body to ${path}`);
    if (local instanceof RoadEtlError) throw local;
    throw networkError(error, doing, status);
  }
  const problem = await check?.(headers, path);
  if (problem) {
    const excerpt = await fileExcerpt(path, 'start', 4096);
    await rm(path, { force: true });
    throw new RetryableError(problem, status, excerpt, undefined);
  }
}

/** A URL short enough for a message (long road-section-id lists get cut). */
export function shortUrl(url: string): string {
  return url.length > 300 ? `${url.slice(0, 300)}…` : url;
}
