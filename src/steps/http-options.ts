/** The options extract steps share (requests, lists), and the HTTP client made from them. */
import { z } from 'zod';
import { HttpClient } from '../http/client.js';
import type { StepContext } from './step-kind.js';

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
  };
}

export interface RequestOptions {
  timeout_ms: number;
  retries: number;
  backoff_ms: number;
}

export function httpClientFor(
  options: RequestOptions,
  context: Pick<StepContext, 'log'>,
): HttpClient {
  return new HttpClient({
    timeoutMs: options.timeout_ms,
    retries: options.retries,
    backoffMs: options.backoff_ms,
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
