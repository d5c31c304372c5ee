/** The options of the steps that ask an upstream (requests, lists), and the HTTP client made from them. */
import { z } from 'zod';
import { HttpClient } from './client.js';
import type { Logger } from '../log.js';

/** Zod fields timeout_ms, retries and backoff_ms, with this step's default deadline. */
export function requestOptions(timeoutMs: number) {
  return {
    timeout_ms: z
      .number()
      .int()
      .positive()
      .default(timeoutMs)
      .describe(`Deadline per request. Default ${timeoutMs}.`),
    retries: z.number().int().min(0).default(5).describe('Retries per request. Default 5.'),
    backoff_ms: z.number().int().min(0).default(500).describe('First retry backoff. Default 500.'),
    ...rateOptions(),
  };
}

/** Zod fields min_rate and rate_window_ms: an answer that trickles is given up and retried. */
export function rateOptions() {
  return {
    min_rate: z
      .number()
      .int()
      .min(0)
      .default(2048)
      .describe(
        'Least bytes a second an answer must come at, over rate_window_ms, or the attempt is given up and retried (0: no bound). Default 2048.',
      ),
    rate_window_ms: z
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe('The span over which min_rate is measured. Default 60000.'),
  };
}

export interface RequestOptions {
  timeout_ms: number;
  retries: number;
  backoff_ms: number;
  min_rate: number;
  rate_window_ms: number;
}

export function httpClientFor(options: RequestOptions, context: { log: Logger }): HttpClient {
  return new HttpClient({
    timeoutMs: options.timeout_ms,
    retries: options.retries,
    backoffMs: options.backoff_ms,
    minRate: options.min_rate,
    rateWindowMs: options.rate_window_ms,
    logger: context.log,
  });
}

/** A list option: a YAML list, or one comma-separated text (as a param gives it). */
export const textList = z.preprocess(
  (value) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : value,
  z.array(z.string().trim().min(1, 'must not be empty')),
);

/** The HTTP clients made for one piece of work (a step, a check), closed together when it ends. */
export class HttpClients {
  readonly #log: Logger;
  readonly #clients: HttpClient[] = [];

  constructor(log: Logger) {
    this.#log = log;
  }

  /** A client with these request options, closed by close(). */
  readonly make = (options: RequestOptions): HttpClient => {
    const client = httpClientFor(options, { log: this.#log });
    this.#clients.push(client);
    return client;
  };

  async close(): Promise<void> {
    const clients = this.#clients.splice(0);
    await Promise.all(clients.map((c) => c.close()));
  }
}
