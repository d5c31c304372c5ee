/** The traffic-sign API (public): the event feed (4.5) and the current-state download (4.6). */
import type { HttpClient, HttpResponse } from '../../http/client.js';
import { UpstreamError, UpstreamRefusalError } from '../../errors.js';
import { fileEnds, notAJsonArrayOfObjects } from '../../util/fs.js';

import { SIGNS_PATHS } from '../../endpoints.js';

const EVENTS_PATH = SIGNS_PATHS.events;
const CURRENT_STATE_PATH = SIGNS_PATHS.currentState;
/** Today's API: the current state of v4 (at the v1 host) and v5 (at a host of its own). */
const LIVE_PATHS = SIGNS_PATHS.live;

export interface LiveQuery {
  api: 'v4' | 'v5';
  /** Base URL of that version's host. */
  base: string;
  format: 'geojson' | 'csv';
  countyCode?: string | undefined;
  rvvCodes?: readonly string[] | undefined;
  roadSectionIds?: readonly number[] | undefined;
  status?: string | undefined;
  ifModifiedSince?: string | undefined;
  signal?: AbortSignal | undefined;
}

/** The URL of a v4/v5 current-state request. */
export function liveUrl(query: Omit<LiveQuery, 'signal' | 'ifModifiedSince'>): string {
  const url = new URL(query.base.replace(/\/+$/, '') + LIVE_PATHS[query.api]);
  if (query.countyCode) url.searchParams.set('countyCode', query.countyCode);
  for (const code of query.rvvCodes ?? []) url.searchParams.append('rvvCode', code);
  for (const id of query.roadSectionIds ?? []) url.searchParams.append('roadSectionId', String(id));
  if (query.status) url.searchParams.set('status', query.status);
  return url.toString();
}

/** A municipality code as the service knows it (CBS: GM and four digits). */
export const TOWN_CODE = /^GM\d{4}$/;
export const TOWN_CODE_HELP = 'a town code is GM and four digits, like GM0363';

export interface EventsQuery {
  offset: string;
  limit: number;
  townCode?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface CurrentStateQuery {
  format: 'json' | 'csv';
  townCode?: string | undefined;
  rvvCode?: string | undefined;
  roadSectionIds?: readonly number[] | undefined;
  /** An HTTP date: the download is skipped (notModified) when the snapshot is no newer. */
  ifModifiedSince?: string | undefined;
  signal?: AbortSignal | undefined;
}

function checkEventsPage(value: unknown): string | undefined {
  if (!Array.isArray(value))
    return `expected a JSON array of events, got ${value === null ? 'null' : typeof value}`;
  const bad = value.findIndex(
    (item) => typeof item !== 'object' || item === null || Array.isArray(item),
  );
  return bad >= 0
    ? `expected events (objects), but item ${bad} is ${(JSON.stringify(value[bad]) as string | undefined)?.slice(0, 40)}`
    : undefined;
}

/** A GET of a current state, conditional on If-Modified-Since when the last download's date is known. */
function conditionalGet(
  url: string,
  accept: string,
  query: { ifModifiedSince?: string | undefined; signal?: AbortSignal | undefined },
): Parameters<HttpClient['download']>[0] {
  return {
    method: 'GET',
    url,
    headers: {
      accept,
      ...(query.ifModifiedSince ? { 'if-modified-since': query.ifModifiedSince } : {}),
    },
    signal: query.signal,
  };
}

/** Why a download is no CSV of signs: not CSV, or a header without `column`. */
async function csvOfSignsProblem(
  type: string,
  file: string,
  column: string,
): Promise<string | undefined> {
  if (!type.includes('csv')) return `expected CSV, got content-type "${type}"`;
  const header = (await fileEnds(file)).head.toString('utf8').split(/\r?\n/)[0] ?? '';
  return header.split(',').includes(column)
    ? undefined
    : `expected CSV of signs: its header has no ${column} column`;
}

/** Streams a v4/v5 current state to a file (decompressed); resolves to the response headers. */
export function downloadLive(
  http: HttpClient,
  query: LiveQuery,
  path: string,
): Promise<{ headers: HttpResponse['headers']; notModified: boolean }> {
  return http.download(
    conditionalGet(
      liveUrl(query),
      query.format === 'csv' ? 'text/csv' : 'application/geo+json, application/json',
      query,
    ),
    path,
    async (headers, file) => {
      const type = String(headers['content-type'] ?? '');
      if (query.format === 'csv') return csvOfSignsProblem(type, file, 'rvvCode');
      if (!type.includes('json')) return `expected GeoJSON, got content-type "${type}"`;
      const head = (await fileEnds(file)).head.toString('utf8').trimStart();
      return head.startsWith('{') ? undefined : 'expected a GeoJSON FeatureCollection';
    },
  );
}

/**
 * A v1 request answered 404 or 410: NDW no longer serves that version (v4
 * arrived in 2024, v5 serves the current state now). Said plainly, with where
 * today's API is read; any other error passes.
 */
function explainRetiredV1(error: unknown): unknown {
  if (!(error instanceof UpstreamError) || (error.status !== 404 && error.status !== 410))
    return error;
  return new UpstreamRefusalError(
    `The traffic-sign service no longer serves API v1 (${error.method} ${error.url} answered ${error.status}). ` +
      "Today's API (v5, or v4) is read by the step kind signs.live: road-etl run pipelines/traffic-signs-live.yaml",
    { cause: error },
  );
}

export class SignsClient {
  readonly #http: HttpClient;
  readonly #base: string;

  constructor(http: HttpClient, baseUrl: string) {
    this.#http = http;
    this.#base = baseUrl.replace(/\/+$/, '');
  }

  eventsUrl(query: Omit<EventsQuery, 'signal'>): string {
    const url = new URL(this.#base + EVENTS_PATH);
    url.searchParams.set('offset', query.offset);
    url.searchParams.set('limit', String(query.limit));
    if (query.townCode) url.searchParams.set('town-code', query.townCode);
    return url.toString();
  }

  /**
   * One chunk of the feed: its event objects, and the body they were parsed
   * from, on one line (a body with line breaks is written anew without them).
   */
  async events(query: EventsQuery): Promise<{ events: Record<string, unknown>[]; body: Buffer }> {
    const { value, body } = await this.#http
      .json({ method: 'GET', url: this.eventsUrl(query), signal: query.signal }, checkEventsPage)
      .catch((error: unknown) => {
        throw explainRetiredV1(error);
      });
    const events = value as Record<string, unknown>[];
    return {
      events,
      body: body.includes(0x0a) ? Buffer.from(JSON.stringify(events)) : body,
    };
  }

  /** Streams the current state to a file (decompressed); resolves to the response headers. */
  async downloadCurrentState(
    query: CurrentStateQuery,
    path: string,
  ): Promise<{ headers: HttpResponse['headers']; notModified: boolean }> {
    const url = new URL(this.#base + CURRENT_STATE_PATH);
    if (query.townCode) url.searchParams.set('town-code', query.townCode);
    if (query.rvvCode) url.searchParams.set('rvv-code', query.rvvCode);
    if (query.roadSectionIds && query.roadSectionIds.length > 0)
      url.searchParams.set('road-section-ids', query.roadSectionIds.join(','));
    if (query.format === 'csv') url.searchParams.set('content-type', 'csv');
    return this.#http
      .download(
        conditionalGet(
          url.toString(),
          query.format === 'csv' ? 'text/csv' : 'application/json',
          query,
        ),
        path,
        async (headers, file) => {
          const type = String(headers['content-type'] ?? '');
          if (query.format === 'csv') return csvOfSignsProblem(type, file, 'publication_timestamp');
          if (!type.includes('json')) return `expected JSON, got content-type "${type}"`;
          const problem = await notAJsonArrayOfObjects(file);
          return problem && `expected a JSON array of signs: ${problem}`;
        },
      )
      .catch((error: unknown) => {
        throw explainRetiredV1(error);
      });
  }
}
