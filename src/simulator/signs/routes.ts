/** The traffic-sign API's endpoints: the v1 event feed (4.5) and download (4.6), the v4/v5 current state. */
import type { IncomingMessage } from 'node:http';
import { wgs84ToRd } from '../../util/geo.js';
import { parseMilliTimestamp } from '../../util/time.js';
import { jsonArray, notModified, refuse, sendJson, startDownload, stream } from '../http.js';
import type { RouteRequest } from '../routes.js';
import { LIVE_STATUSES, liveMoment, liveState, type LiveApi, type LiveStatus } from './live.js';
import { LIVE_CSV_COLUMNS, liveCsvLine } from './live-csv.js';
import { CSV_HEADER, toCsvLine } from './payload.js';

/** A current-state request for CSV: content-type=csv, or an Accept of text/csv. */
export function wantsCsv(req: IncomingMessage, url: URL): boolean {
  return (
    url.searchParams.get('content-type') === 'csv' ||
    (req.headers.accept ?? '').includes('text/csv')
  );
}

/** A chunk of the feed from an inclusive offset (the feed's order), for a town or all. */
export function events({ res, url, world, truncate }: RouteRequest): void {
  const offsetText = url.searchParams.get('offset');
  const limitText = url.searchParams.get('limit');
  const offset = offsetText === null ? Date.UTC(1970, 0, 1) : parseMilliTimestamp(offsetText);
  if (offset === undefined) {
    refuse(res, url, {
      status: 400,
      message: `Invalid offset '${offsetText}': expected yyyy-MM-ddTHH:mm:ss.SSSZ`,
    });
    return;
  }
  const limit = limitText === null ? 100 : /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= 100)) {
    refuse(res, url, {
      status: 400,
      message: `Invalid limit '${limitText}': must be between 1 and 100`,
    });
    return;
  }
  const town = world.townIndex(url.searchParams.get('town-code') ?? undefined);
  const chunk = [];
  if (town !== -2) {
    for (const event of world.feed.events(offset, world.now, town)) {
      chunk.push(world.payload(event));
      if (chunk.length >= limit) break;
    }
  }
  sendJson(res, 200, chunk, truncate);
}

/** The road section ids of `road-section-ids` (comma-separated), or a refusal's message. */
function sectionIdsOf(text: string | null): Set<number> | string | undefined {
  if (text === null || text === '') return undefined;
  const parts = text.split(',').map((s) => s.trim());
  const bad = parts.find((p) => !/^\d+$/.test(p));
  if (bad !== undefined) return `Invalid road-section-ids: '${bad}' is not a road section id`;
  return new Set(parts.map(Number));
}

/** The v1 current-state download: JSON or CSV, by town, RVV code or road sections. */
export function currentState(request: RouteRequest): void {
  const { req, res, url, world } = request;
  const params = url.searchParams;
  const sectionIds = sectionIdsOf(params.get('road-section-ids'));
  if (typeof sectionIds === 'string') {
    refuse(res, url, { status: 400, message: sectionIds });
    return;
  }
  const csv = wantsCsv(req, url);
  const rvv = params.get('rvv-code') ?? undefined;
  const moment = world.snapshotMoment;
  const payloads = (function* () {
    for (const payload of world.currentState(moment, params.get('town-code') ?? undefined)) {
      if (rvv !== undefined && payload['rvv_code'] !== rvv) continue;
      const section = (payload['location'] as { road: { wvk_id: unknown } }).road.wvk_id;
      if (sectionIds && !sectionIds.has(Number(section))) continue;
      yield payload;
    }
  })();
  // The snapshot changes monthly: a client that has it gets 304 Not Modified.
  if (notModified(req, res, moment)) return;
  const gzip = startDownload(
    req,
    res,
    csv ? 'text/csv; charset=utf-8' : 'application/json',
    moment,
  );
  const text = csv ? csvLines(payloads) : jsonArray(payloads);
  void stream(res, request.ragged && csv ? withRaggedRow(text) : text, gzip, request.truncate);
}

/** The filters of a v4/v5 request, or a refusal's message. */
function liveFilters(url: URL):
  | {
      countyCode: string | undefined;
      rvvCodes: string[];
      roadSectionIds: number[];
      status: LiveStatus | undefined;
    }
  | string {
  const params = url.searchParams;
  const countyCode = params.get('countyCode') ?? undefined;
  if (countyCode !== undefined && !/^GM\d{4}$/.test(countyCode))
    return `Invalid countyCode '${countyCode}': expected GM followed by 4 digits`;
  const status = params.get('status') ?? undefined;
  if (status !== undefined && !(LIVE_STATUSES as readonly string[]).includes(status))
    return `Invalid status '${status}': expected one of ${LIVE_STATUSES.join(', ')}`;
  const list = (name: string): string[] =>
    params.getAll(name).flatMap((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    );
  const sections = list('roadSectionId');
  const bad = sections.find((s) => !/^\d+$/.test(s));
  if (bad !== undefined) return `Invalid roadSectionId '${bad}': not a road section id`;
  return {
    countyCode,
    rvvCodes: list('rvvCode'),
    roadSectionIds: sections.map(Number),
    status: status as LiveStatus | undefined,
  };
}

/**
 * v4 and v5 current state: GeoJSON (v4 also CSV), the day's state, filtered by
 * countyCode, rvvCode and roadSectionId (repeatable or comma-separated) and status.
 */
export function live(api: LiveApi, { req, res, url, world, truncate }: RouteRequest): void {
  const filters = liveFilters(url);
  if (typeof filters === 'string') {
    refuse(res, url, { status: 400, message: filters });
    return;
  }
  const accept = req.headers.accept ?? '';
  const wantsText = accept.includes('text/csv') && !accept.includes('json');
  if (api === 'v5' && wantsText && !accept.includes('*/*')) {
    refuse(res, url, { status: 406, message: 'v5 serves GeoJSON only' });
    return;
  }
  const csv = api === 'v4' && wantsText;
  const moment = liveMoment(world.now);
  if (notModified(req, res, moment)) return;
  const features = liveState(world, world.now, api, filters);
  const gzip = startDownload(
    req,
    res,
    csv ? 'text/csv;charset=UTF-8' : 'application/geo+json',
    moment,
  );
  const text = csv
    ? (function* () {
        yield LIVE_CSV_COLUMNS.join(',') + '\r\n';
        for (const feature of features) yield liveCsvLine(feature, wgs84ToRd);
      })()
    : (function* () {
        yield '{"type":"FeatureCollection","features":[';
        let first = true;
        for (const feature of features) {
          yield (first ? '' : ',') + JSON.stringify(feature);
          first = false;
        }
        yield ']}';
      })();
  void stream(res, text, gzip, truncate);
}

/** The CSV lines with the first row after the header given a field more than the header. */
function* withRaggedRow(lines: Iterable<string>): Generator<string> {
  let n = 0;
  for (const line of lines) yield ++n === 2 ? line.replace(/\r?\n$/, '') + ',extra\r\n' : line;
}

function* csvLines(payloads: Iterable<Record<string, unknown>>): Generator<string> {
  yield CSV_HEADER;
  for (const payload of payloads) yield toCsvLine(payload);
}
