/**
 * The bicycle API (4.1-4.4): every request carries a bearer token; a 401 gets
 * one new token and one retry. A 400 is returned to the caller with the
 * service's message (the batching learns its limits from it).
 */
import { UpstreamError } from '../../errors.js';
import { BICYCLE_PATHS } from '../../endpoints.js';
import type { HttpClient } from '../../http/client.js';
import { notAJsonArrayOfObjects } from '../../util/fs.js';
import type { TokenSource } from './auth.js';

const MEASUREMENTS_PATH = BICYCLE_PATHS.measurements;
const LOCATIONS_PATH = BICYCLE_PATHS.locations;

export type Selection =
  { locations: readonly string[] } | { prefixes: readonly string[] } | { polygon: unknown };

/** A 200 leaves the body in the given file (DuckDB parses it); a 400 carries the service's message. */
export type MeasurementsAnswer = { ok: true } | { ok: false; status: 400; message: string };

/** The message of a 400 body, whatever its shape. */
function errorMessage(body: Buffer): string {
  const text = body.toString('utf8').trim();
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object') {
      const fields = parsed as Record<string, unknown>;
      for (const key of ['message', 'error_description', 'error', 'detail', 'title']) {
        if (typeof fields[key] === 'string' && fields[key] !== '') return fields[key];
      }
    }
    if (typeof parsed === 'string') return parsed;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

export class BicycleClient {
  readonly #http: HttpClient;
  readonly #tokens: TokenSource;
  readonly #base: string;

  constructor(http: HttpClient, tokens: TokenSource, baseUrl: string) {
    this.#http = http;
    this.#tokens = tokens;
    this.#base = baseUrl.replace(/\/+$/, '');
  }

  /**
   * Sends with a bearer token; after a 401, once more with a new one. With
   * `file`, a 200 body is streamed there and only its ends are checked (DuckDB
   * parses it); otherwise it is parsed as JSON and checked by `check`.
   */
  async #send(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
    check?: (value: unknown) => string | undefined,
    file?: string,
  ): Promise<{ status: number; value: unknown; body: Buffer }> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.#tokens.accessToken(signal);
      const request = {
        method,
        url: this.#base + path,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
        signal,
        pass: [400, 401],
      };
      const answer = file
        ? await this.#http
            .sendToFile(request, file, async (headers, path) => {
              const type = String(headers['content-type'] ?? '');
              if (!type.includes('json')) return `expected JSON, got content-type "${type}"`;
              const problem = await notAJsonArrayOfObjects(path);
              return problem && `expected a JSON array of measurements: ${problem}`;
            })
            .then((r) => ({ ...r, value: undefined }))
        : await this.#http.json(request, check);
      if (answer.status !== 401) return answer;
      this.#tokens.invalidate(token);
      if (attempt >= 1) {
        throw new UpstreamError('Request refused after a new token', {
          method,
          url: this.#base + path,
          status: 401,
          body: answer.body.toString('utf8'),
        });
      }
    }
  }

  /** 4.4: the catalog as a FeatureCollection. */
  async locations(signal?: AbortSignal): Promise<{ body: Buffer; value: unknown }> {
    const answer = await this.#send('GET', LOCATIONS_PATH, undefined, signal, (value) => {
      const features = (value as { features?: unknown } | null)?.features;
      return Array.isArray(features)
        ? undefined
        : 'expected a FeatureCollection with a features array';
    });
    if (answer.status !== 200) {
      throw new UpstreamError('Request failed', {
        method: 'GET',
        url: this.#base + LOCATIONS_PATH,
        status: answer.status,
        body: answer.body.toString('utf8'),
      });
    }
    return { body: answer.body, value: answer.value };
  }

  /**
   * 4.1-4.3: measurements of a selection over [start, end] (timestamps
   * `YYYY-MM-DDTHH:mm:ssZ`); a 200 body is written to `file`.
   */
  async measurements(
    selection: Selection,
    startTime: string,
    endTime: string,
    file: string,
    signal?: AbortSignal,
  ): Promise<MeasurementsAnswer> {
    const fields =
      'locations' in selection
        ? { locations: selection.locations }
        : 'prefixes' in selection
          ? { prefixes: selection.prefixes }
          : { locationPolygoon: selection.polygon };
    const answer = await this.#send(
      'POST',
      measurementsPath(selection),
      JSON.stringify({ startTime, endTime, ...fields }),
      signal,
      undefined,
      file,
    );
    if (answer.status === 400)
      return { ok: false, status: 400, message: errorMessage(answer.body) };
    return { ok: true };
  }

  /** The endpoint a selection's measurements are asked of (for messages). */
  measurementsUrl(selection: Selection): string {
    return this.#base + measurementsPath(selection);
  }
}

/** 4.1-4.3: the path of a selection's measurements: by ids, by prefixes or by polygon. */
function measurementsPath(selection: Selection): string {
  if ('locations' in selection) return MEASUREMENTS_PATH;
  return 'prefixes' in selection ? BICYCLE_PATHS.prefix : BICYCLE_PATHS.geo;
}
