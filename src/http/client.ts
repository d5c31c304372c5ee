/**
 * HTTP for the upstream APIs: a keep-alive connection pool, a deadline per
 * request, and bounded retries with exponential backoff and jitter where a retry
 * can help (network errors, 5xx, 429 with Retry-After, bodies cut short or not
 * the JSON that was promised). What cannot be helped fails with the endpoint,
 * the status and an excerpt of the body.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGunzip, gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { Agent, request, type Dispatcher } from 'undici';
import { RoadEtlError, UpstreamError, excerptOf, explainIoError } from '../errors.js';
import { fileEnds } from '../util/fs.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';

export interface HttpClientOptions {
  /** Deadline of one attempt (headers and body), ms. Default 60000. */
  timeoutMs?: number;
  /** Attempts after the first one. Default 5. */
  retries?: number;
  /** First backoff, ms; doubles each attempt, with full jitter. Default 500. */
  backoffMs?: number;
  /** Longest backoff, ms (also caps Retry-After). Default 30000. */
  maxBackoffMs?: number;
  /** Connections kept open per origin. Default 16. */
  connections?: number;
  logger?: Logger | undefined;
}

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
class RetryableError extends Error {
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
function networkError(error: unknown, doing = 'Network error', status?: number): RetryableError {
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

/** Whether the server compressed the body (asked for or not). */
function isGzip(response: Dispatcher.ResponseData): boolean {
  return /\bgzip\b/.test(String(response.headers['content-encoding'] ?? ''));
}

const gunzipAsync = promisify(gunzip);

/** The whole body of a response; a transfer that breaks off is worth another attempt. */
async function readBody(
  response: Dispatcher.ResponseData,
  req: HttpRequest,
  signal: AbortSignal,
): Promise<Buffer> {
  try {
    const body = Buffer.from(await response.body.arrayBuffer());
    return isGzip(response) ? await gunzipAsync(body) : body;
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
function notOk(req: HttpRequest, response: HttpResponse, what = 'Request failed'): HttpResponse {
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
type FileCheck = (headers: HttpResponse['headers'], path: string) => Promise<string | undefined>;

/**
 * Streams a 2xx body to `path` (gunzipped when compressed) and lets check()
 * refuse the file. A transfer that breaks off, or a refused file, is removed and
 * worth another attempt; a transfer stopped by the caller's signal is not.
 */
async function bodyToFile(
  response: Dispatcher.ResponseData,
  path: string,
  check: FileCheck | undefined,
  stopped: () => boolean,
  doing: string,
): Promise<void> {
  const { statusCode: status, headers } = response;
  try {
    const decoded = isGzip(response) ? [response.body, createGunzip()] : [response.body];
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
    const excerpt = await fileEnds(path).then(
      ({ head }) => head.toString('utf8'),
      () => '',
    );
    await rm(path, { force: true });
    throw new RetryableError(problem, status, excerpt, undefined);
  }
}

/** A URL short enough for a message (long road-section-id lists get cut). */
function shortUrl(url: string): string {
  return url.length > 300 ? `${url.slice(0, 300)}…` : url;
}

export class HttpClient {
  readonly #dispatcher: Dispatcher;
  readonly #options: Required<Omit<HttpClientOptions, 'logger'>>;
  readonly #logger: Logger | undefined;
  /** Requests sent (attempts), for progress and tests. */
  requests = 0;

  constructor(options: HttpClientOptions = {}) {
    this.#options = {
      timeoutMs: options.timeoutMs ?? 60_000,
      retries: options.retries ?? 5,
      backoffMs: options.backoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 30_000,
      connections: options.connections ?? 16,
    };
    this.#logger = options.logger;
    this.#dispatcher = new Agent({
      connections: this.#options.connections,
      keepAliveTimeout: 30_000,
      headersTimeout: this.#options.timeoutMs,
      bodyTimeout: this.#options.timeoutMs,
    });
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  /**
   * Sends a request, retrying where that can help, and returns the whole body.
   * check() may refuse a 200 body (not JSON, cut short): that is retried too.
   */
  async send(
    req: HttpRequest,
    check?: (response: HttpResponse) => string | undefined,
  ): Promise<HttpResponse> {
    return this.#withRetries(req, async (signal) => {
      const opened = await this.#open(req, signal);
      const response = {
        status: opened.statusCode,
        headers: opened.headers,
        body: await readBody(opened, req, signal),
      };
      if (response.status >= 200 && response.status < 300) {
        const problem = check?.(response);
        if (problem)
          throw new RetryableError(problem, response.status, response.body.toString(), undefined);
        return response;
      }
      return notOk(req, response);
    });
  }

  /**
   * Sends a request and streams a 2xx body to `path` (never held in memory);
   * check() may refuse the written file (cut short, not what was promised):
   * that is retried. Statuses in `pass` come back with their (small) body.
   */
  async sendToFile(
    req: HttpRequest,
    path: string,
    check?: FileCheck,
  ): Promise<{ status: number; headers: HttpResponse['headers']; body: Buffer }> {
    return this.#withRetries(req, async (signal) => {
      const response = await this.#open(req, signal);
      const { statusCode: status, headers } = response;
      if (status >= 200 && status < 300) {
        const stopped = (): boolean => signal.aborted && req.signal?.aborted === true;
        await bodyToFile(response, path, check, stopped, 'The body broke off');
        return { status, headers, body: Buffer.alloc(0) };
      }
      return notOk(req, { status, headers, body: await readBody(response, req, signal) });
    });
  }

  /** Sends a request and parses a JSON body; a body that is not JSON is retried (it was cut short or is an error page). */
  async json(
    req: HttpRequest,
    validate?: (value: unknown) => string | undefined,
  ): Promise<{ status: number; value: unknown; headers: HttpResponse['headers']; body: Buffer }> {
    let parsed: unknown;
    const response = await this.send(
      { ...req, headers: { accept: 'application/json', ...req.headers } },
      (r) => {
        const type = String(r.headers['content-type'] ?? '');
        if (!type.includes('json')) return `expected JSON, got content-type "${type}"`;
        try {
          parsed = JSON.parse(r.body.toString('utf8'));
        } catch (error) {
          return `the body is not valid JSON (${(error as Error).message})`;
        }
        return validate?.(parsed);
      },
    );
    if (response.status < 200 || response.status >= 300) {
      try {
        parsed = JSON.parse(response.body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
    }
    return {
      status: response.status,
      value: parsed,
      headers: response.headers,
      body: response.body,
    };
  }

  /**
   * Streams a response body to a file (gunzipped when the server compressed it),
   * retrying from the start on failure. Resolves to the response headers.
   */
  async download(
    req: HttpRequest,
    path: string,
    check?: FileCheck,
  ): Promise<{ headers: HttpResponse['headers']; notModified: boolean }> {
    return this.#withRetries(
      req,
      async (signal) => {
        const response = await this.#open(
          { ...req, headers: { 'accept-encoding': 'gzip', ...req.headers } },
          signal,
        );
        if (response.statusCode === 304) {
          await response.body.dump();
          return { headers: response.headers, notModified: true };
        }
        if (response.statusCode !== 200) {
          const body = await readBody(response, req, signal).catch(() => Buffer.alloc(0));
          notOk(
            { ...req, pass: [] },
            { status: response.statusCode, headers: response.headers, body },
            'Download failed',
          );
        }
        await bodyToFile(
          response,
          path,
          check,
          () => req.signal?.aborted === true,
          'The download broke off',
        );
        return { headers: response.headers, notModified: false };
      },
      false,
    );
  }

  /** Sends the request and resolves once the headers are in (the body is left to the caller). */
  async #open(req: HttpRequest, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    this.requests++;
    try {
      return await request(req.url, {
        method: req.method,
        headers: { 'user-agent': `road-etl/${VERSION}`, ...req.headers },
        body: req.body ?? null,
        dispatcher: this.#dispatcher,
        signal,
      });
    } catch (error) {
      if (signal.aborted && req.signal?.aborted) throw error;
      throw networkError(error);
    }
  }

  async #withRetries<T>(
    req: HttpRequest,
    attempt: (signal: AbortSignal) => Promise<T>,
    whole = true,
  ): Promise<T> {
    const { retries, backoffMs, maxBackoffMs, timeoutMs } = this.#options;
    let last: RetryableError | undefined;
    for (let n = 0; n <= retries; n++) {
      req.signal?.throwIfAborted();
      // A download has no deadline as a whole: undici's timeouts catch a stall.
      const deadline = whole ? AbortSignal.timeout(timeoutMs) : new AbortController().signal;
      const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
      try {
        return await attempt(signal);
      } catch (error) {
        if (!(error instanceof RetryableError)) throw error;
        last = error;
        if (n === retries) break;
        const backoff = Math.min(
          maxBackoffMs,
          error.retryAfterMs ?? Math.random() * backoffMs * 2 ** n,
        );
        this.#logger?.log(
          'warn',
          'http.retry',
          `${req.method} ${shortUrl(req.url)}: ${error.message}; retrying in ${Math.round(backoff)} ms (attempt ${n + 2} of ${retries + 1})`,
          {
            status: error.status,
            attempt: n + 1,
            backoff_ms: Math.round(backoff),
          },
        );
        await sleep(backoff, undefined, req.signal ? { signal: req.signal } : undefined);
      }
    }
    throw new UpstreamError(
      `Request failed after ${retries + 1} attempts (${last?.message ?? 'unknown error'})`,
      {
        method: req.method,
        url: shortUrl(req.url),
        status: last?.status,
        body: excerptOf(last?.body ?? ''),
      },
      { cause: last },
    );
  }
}
