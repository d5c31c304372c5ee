/**
 * HTTP for the upstream APIs: a keep-alive connection pool, a deadline per
 * request, and bounded retries with exponential backoff and jitter where a retry
 * can help (network errors, 5xx, 429 with Retry-After, bodies cut short or not
 * the JSON that was promised). What cannot be helped fails with the endpoint,
 * the status and an excerpt of the body.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { UpstreamError, excerptOf } from '../errors.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';
import {
  RetryableError,
  backoffDelay,
  networkError,
  readBody,
  notOk,
  bodyToFile,
  shortUrl,
  type FileCheck,
  type HttpRequest,
  type HttpResponse,
  type Rate,
} from './answers.js';

export interface HttpClientOptions {
  /** Deadline of one attempt (headers and body), ms. Default 60000. */
  timeoutMs?: number;
  /** Attempts after the first one. Default 5. */
  retries?: number;
  /** First backoff, ms; doubles each attempt, with full jitter. Default 500. */
  backoffMs?: number;
  /** Longest backoff, ms (also caps Retry-After). Default 30000. */
  maxBackoffMs?: number;
  /**
   * Least bytes a second a body must come at, measured over rateWindowMs: an
   * answer that trickles is given up and retried (0: no bound). Default 2048.
   */
  minRate?: number;
  /** The span over which minRate is measured, ms. Default 60000. */
  rateWindowMs?: number;
  /** Connections kept open per origin. Default 16. */
  connections?: number;
  logger?: Logger | undefined;
}

export type { HttpRequest, HttpResponse };

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
      minRate: options.minRate ?? 2048,
      rateWindowMs: options.rateWindowMs ?? 60_000,
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

  get #rate(): Rate {
    return { minRate: this.#options.minRate, windowMs: this.#options.rateWindowMs };
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
        body: await readBody(opened, req, signal, this.#rate),
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
        await bodyToFile(response, path, check, stopped, 'The body broke off', this.#rate);
        return { status, headers, body: Buffer.alloc(0) };
      }
      return notOk(req, {
        status,
        headers,
        body: await readBody(response, req, signal, this.#rate),
      });
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
          const body = await readBody(response, req, signal, this.#rate).catch(() =>
            Buffer.alloc(0),
          );
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
          this.#rate,
        );
        return { headers: response.headers, notModified: false };
      },
      false,
    );
  }

  /**
   * Retries work made of an answer that came whole (a download and what is read
   * from it: cut short but ended cleanly, empty, implausible) while it throws a
   * RetryableError, with the same backoff; its own requests' failures pass.
   */
  async retryAnswer<T>(
    req: Pick<HttpRequest, 'method' | 'url' | 'signal'>,
    work: () => Promise<T>,
  ): Promise<T> {
    return this.#withRetries(req, work, false);
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
    req: Pick<HttpRequest, 'method' | 'url' | 'signal'>,
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
          error.retryAfterMs ?? backoffDelay(n, backoffMs, maxBackoffMs),
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
