/**
 * The simulated upstream over HTTP: the token endpoint, the bicycle endpoints
 * (4.1-4.4) under /bicycle, the traffic-sign endpoints (4.5, 4.6) under /signs.
 * Strict where the contract is strict, messy where the real data is messy.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGzip } from 'node:zlib';
import { checkGeoJsonPolygon, pointInPolygon, wgs84ToRd, type Position } from '../util/geo.js';
import { DAY_MS, parseMilliTimestamp, parseSecondTimestamp } from '../util/time.js';
import { TokenIssuer } from './auth.js';
import type { BicycleLocation } from './bicycle/world.js';
import { FaultPlan, type FaultKind, type QueuedFault } from './faults.js';
import { resolveSimulatorOptions, type SimulatorInput, type SimulatorOptions } from './options.js';
import {
  LIVE_CSV_COLUMNS,
  LIVE_STATUSES,
  liveCsvLine,
  liveMoment,
  liveState,
  type LiveApi,
  type LiveStatus,
} from './signs/live.js';
import { CSV_HEADER, toCsvLine } from './signs/payload.js';
import { World } from './world.js';

export const TOKEN_PATH = '/auth/realms/ndw/protocol/openid-connect/token';
const BICYCLE_PREFIX = '/bicycle';
const SIGNS_PREFIX = '/signs';
const BICYCLE_API = `${BICYCLE_PREFIX}/api/explore/bicycle-data`;
const LOCATIONS_PATH = `${BICYCLE_PREFIX}/api/gis/bicycle-data/complete`;
const SIGNS_API = `${SIGNS_PREFIX}/api/rest/static-road-data/traffic-signs/v1`;
const SIGNS_API_V4 = `${SIGNS_PREFIX}/api/rest/static-road-data/traffic-signs/v4`;
const SIGNS_API_V5 = `${SIGNS_PREFIX}/api/rest/static-road-data/traffic-signs/v5`;
/** Not NDW's: moves the simulated world on (`?days=N`), so that the daily current state changes. */
const ADVANCE_PATH = '/simulator/advance';

const ROUTES = {
  [TOKEN_PATH]: { name: 'token', method: 'POST' },
  [BICYCLE_API]: { name: 'bicycle-data', method: 'POST' },
  [`${BICYCLE_API}/prefix`]: { name: 'bicycle-data/prefix', method: 'POST' },
  [`${BICYCLE_API}/geo`]: { name: 'bicycle-data/geo', method: 'POST' },
  [LOCATIONS_PATH]: { name: 'locations', method: 'GET' },
  [`${SIGNS_API}/events`]: { name: 'events', method: 'GET' },
  [`${SIGNS_API}/current-state`]: { name: 'current-state', method: 'GET' },
  [`${SIGNS_API_V4}/current-state`]: { name: 'live-v4', method: 'GET' },
  [`${SIGNS_API_V5}/current-state`]: { name: 'live-v5', method: 'GET' },
  [ADVANCE_PATH]: { name: 'advance', method: 'POST' },
} as const;

export type RouteName = (typeof ROUTES)[keyof typeof ROUTES]['name'];

const MAX_BODY_BYTES = 10 * 1024 * 1024;
const WRITE_CHUNK = 64 * 1024;
const MAX_RECORDS = 100_000;

/** The environment lines that point road-etl at a running simulator. */
export interface SimulatorEnv {
  ROAD_ETL_BICYCLE_URL: string;
  ROAD_ETL_SIGNS_URL: string;
  ROAD_ETL_SIGNS_V5_URL: string;
  ROAD_ETL_AUTH_URL: string;
  ROAD_ETL_USERNAME: string;
  ROAD_ETL_PASSWORD: string;
  ROAD_ETL_CLIENT_ID: string;
}

class BadRequest extends Error {
  override name = 'BadRequest';
}

/** Answers a request failed with: status, and the text the service would put in its body. */
interface Refusal {
  status: number;
  message: string;
}

export interface RequestRecord {
  route: RouteName | 'unknown';
  method: string;
  status: number;
  fault: FaultKind | undefined;
}

export class Simulator {
  readonly options: SimulatorOptions;
  readonly world: World;
  readonly auth: TokenIssuer;
  readonly faults: FaultPlan;
  /** The latest requests answered, in order (route, status, fault); at most MAX_RECORDS. */
  readonly requests: RequestRecord[] = [];
  /** Requests answered per route since the start. */
  readonly #counts = new Map<RouteName | 'unknown', number>();
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #url = '';

  private constructor(options: SimulatorOptions) {
    this.options = options;
    this.world = new World(options);
    this.auth = new TokenIssuer(options.auth);
    this.faults = new FaultPlan(options.seed, options.faults);
    this.#server = createServer(
      { maxHeaderSize: 16 * 1024 * 1024, keepAliveTimeout: 30_000 },
      (req, res) => {
        this.#handle(req, res).catch((error: unknown) => {
          // A bug in the simulator itself: answer 500 so the client sees it, and say so.
          console.error('simulator: unexpected error', error);
          if (!res.headersSent)
            this.#sendJson(res, 500, { status: 500, error: 'Internal Server Error' });
          else res.destroy();
        });
      },
    );
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  /** Starts a simulator on options.host:options.port (0 = any free port). */
  static async start(...inputs: SimulatorInput[]): Promise<Simulator> {
    const simulator = new Simulator(resolveSimulatorOptions(...inputs));
    await simulator.#listen();
    return simulator;
  }

  async #listen(): Promise<void> {
    this.#server.listen(this.options.port, this.options.host);
    await once(this.#server, 'listening');
    const { port } = this.#server.address() as AddressInfo;
    this.#url = `http://${this.options.host}:${port}`;
  }

  /** Base URL, e.g. http://127.0.0.1:40123. */
  get url(): string {
    return this.#url;
  }

  get env(): SimulatorEnv {
    return {
      ROAD_ETL_BICYCLE_URL: `${this.#url}${BICYCLE_PREFIX}`,
      ROAD_ETL_SIGNS_URL: `${this.#url}${SIGNS_PREFIX}`,
      ROAD_ETL_SIGNS_V5_URL: `${this.#url}${SIGNS_PREFIX}`,
      ROAD_ETL_AUTH_URL: `${this.#url}${TOKEN_PATH}`,
      ROAD_ETL_USERNAME: this.options.auth.username,
      ROAD_ETL_PASSWORD: this.options.auth.password,
      ROAD_ETL_CLIENT_ID: this.options.auth.clientId ?? 'dexter',
    };
  }

  /** Number of requests answered on a route (all routes when omitted). */
  count(route?: RouteName): number {
    if (route !== undefined) return this.#counts.get(route) ?? 0;
    let total = 0;
    for (const count of this.#counts.values()) total += count;
    return total;
  }

  /** Queues faults for the next matching requests. */
  inject(fault: QueuedFault): void {
    this.faults.inject(fault);
  }

  async close(): Promise<void> {
    const closed = once(this.#server, 'close');
    this.#server.close();
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const route = ROUTES[url.pathname as keyof typeof ROUTES] as
      (typeof ROUTES)[keyof typeof ROUTES] | undefined;
    const record: RequestRecord = {
      route: route?.name ?? 'unknown',
      method: req.method ?? '',
      status: 0,
      fault: undefined,
    };
    this.requests.push(record);
    if (this.requests.length > MAX_RECORDS)
      this.requests.splice(0, this.requests.length - MAX_RECORDS / 2);
    this.#counts.set(record.route, (this.#counts.get(record.route) ?? 0) + 1);
    res.on('finish', () => (record.status = res.statusCode));
    res.on('close', () => (record.status ||= res.statusCode));

    if (!route) {
      this.#refuse(res, url, { status: 404, message: `No endpoint at ${url.pathname}` });
      return;
    }
    if (req.method !== route.method) {
      res.setHeader('Allow', route.method);
      this.#refuse(res, url, {
        status: 405,
        message: `Request method '${req.method}' is not supported`,
      });
      return;
    }
    const body = req.method === 'POST' ? await this.#readBody(req) : Buffer.alloc(0);
    if (body === undefined) {
      this.#refuse(res, url, { status: 413, message: 'Request body too large' });
      return;
    }

    const latency = this.faults.options.latencyMs;
    if (latency > 0) await sleep(latency);
    const fault = this.faults.next(url.pathname, `${url.search}\n${body.toString('utf8')}`);
    // A ragged row exists only in a CSV download; elsewhere that roll is no fault.
    const ragged =
      fault?.kind === 'ragged-csv' && route.name === 'current-state' && wantsCsv(req, url);
    record.fault = fault?.kind === 'ragged-csv' && !ragged ? undefined : fault?.kind;
    if (fault && (await this.#applyFault(fault, req, res, url))) return;
    const truncate = fault?.kind === 'truncate';

    switch (route.name) {
      case 'token': {
        this.#token(req, res, body, truncate);
        return;
      }
      case 'locations':
        if (!this.#authorized(req, res, url)) return;
        {
          this.#sendJson(res, 200, this.world.bicycle.featureCollection(), truncate);
          return;
        }
      case 'bicycle-data':
      case 'bicycle-data/prefix':
      case 'bicycle-data/geo':
        if (!this.#authorized(req, res, url)) return;
        {
          this.#measurements(route.name, req, res, url, body, truncate);
          return;
        }
      case 'events': {
        this.#events(res, url, truncate);
        return;
      }
      case 'current-state': {
        this.#currentState(req, res, url, truncate, ragged);
        return;
      }
      case 'live-v4':
      case 'live-v5': {
        this.#live(route.name === 'live-v4' ? 'v4' : 'v5', req, res, url, truncate);
        return;
      }
      case 'advance': {
        const days = Number(url.searchParams.get('days') ?? '1');
        if (!Number.isInteger(days) || days < -3650 || days > 3650) {
          this.#refuse(res, url, { status: 400, message: 'days must be a whole number' });
          return;
        }
        this.world.setNow(new Date(this.world.now + days * DAY_MS).toISOString());
        this.#sendJson(res, 200, { now: new Date(this.world.now).toISOString() });
        return;
      }
    }
  }

  /**
   * v4 and v5 current state: GeoJSON (v4 also CSV), the day's state, filtered by
   * countyCode, rvvCode and roadSectionId (repeatable or comma-separated) and status.
   */
  #live(
    api: LiveApi,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    truncate: boolean,
  ): void {
    const params = url.searchParams;
    const countyCode = params.get('countyCode') ?? undefined;
    if (countyCode !== undefined && !/^GM\d{4}$/.test(countyCode))
      return this.#refuse(res, url, {
        status: 400,
        message: `Invalid countyCode '${countyCode}': expected GM followed by 4 digits`,
      });
    const status = params.get('status') ?? undefined;
    if (status !== undefined && !(LIVE_STATUSES as readonly string[]).includes(status))
      return this.#refuse(res, url, {
        status: 400,
        message: `Invalid status '${status}': expected one of ${LIVE_STATUSES.join(', ')}`,
      });
    const list = (name: string): string[] =>
      params.getAll(name).flatMap((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      );
    const sections = list('roadSectionId');
    const bad = sections.find((s) => !/^\d+$/.test(s));
    if (bad !== undefined)
      return this.#refuse(res, url, {
        status: 400,
        message: `Invalid roadSectionId '${bad}': not a road section id`,
      });
    const accept = req.headers.accept ?? '';
    const csv = api === 'v4' && accept.includes('text/csv') && !accept.includes('json');
    if (
      api === 'v5' &&
      accept.includes('text/csv') &&
      !accept.includes('json') &&
      !accept.includes('*/*')
    )
      return this.#refuse(res, url, { status: 406, message: 'v5 serves GeoJSON only' });
    const moment = liveMoment(this.world.now);
    const since = Date.parse(req.headers['if-modified-since'] ?? '');
    if (!Number.isNaN(since) && Math.floor(moment / 1000) * 1000 <= since) {
      res.writeHead(304, { 'Last-Modified': new Date(moment).toUTCString() });
      res.end();
      return;
    }
    const features = liveState(this.world, this.world.now, api, {
      countyCode,
      rvvCodes: list('rvvCode'),
      roadSectionIds: sections.map(Number),
      status: status as LiveStatus | undefined,
    });
    const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
    const headers: Record<string, string> = {
      'Content-Type': csv ? 'text/csv;charset=UTF-8' : 'application/geo+json',
      'Last-Modified': new Date(moment).toUTCString(),
      Vary: 'Accept, Accept-Encoding',
    };
    if (gzip) headers['Content-Encoding'] = 'gzip';
    res.writeHead(200, headers);
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
    void this.#stream(res, text, gzip, truncate);
  }

  /** Applies a fault; true when the fault answered the request. */
  async #applyFault(
    fault: { kind: FaultKind; status: number },
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
  ): Promise<boolean> {
    switch (fault.kind) {
      case 'error':
        this.#refuse(res, url, { status: fault.status, message: 'Simulated failure' });
        return true;
      case 'reset':
        req.socket.resetAndDestroy();
        return true;
      case 'rate-limit':
        res.setHeader('Retry-After', String(this.faults.options.retryAfterSeconds));
        this.#refuse(res, url, { status: 429, message: 'Too Many Requests' });
        return true;
      case 'html':
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        res.end(
          '<!DOCTYPE html><html><head><title>Onderhoud</title></head><body><h1>Service tijdelijk niet beschikbaar</h1></body></html>',
        );
        return true;
      case 'stall': {
        const closed = once(res, 'close');
        await Promise.race([sleep(this.faults.options.stallMs), closed]);
        return res.destroyed;
      }
      case 'content-type':
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('Service running');
        return true;
      case 'not-array':
        this.#sendJson(res, 200, { status: 'error', message: 'Internal error, try again later' });
        return true;
      case 'non-objects':
        this.#sendJson(res, 200, [1, 'two', null]);
        return true;
      case 'corrupt-gzip': {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        // a gzip header, then bytes that are no deflate stream
        res.end(
          Buffer.concat([
            Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]),
            Buffer.alloc(64, 0xff),
          ]),
        );
        return true;
      }
      case 'truncate':
      case 'ragged-csv':
        return false;
    }
  }

  #readBody(req: IncomingMessage): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      });
      req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks)));
      req.on('error', reject);
    });
  }

  #authorized(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (this.auth.authorizes(req.headers.authorization)) return true;
    res.setHeader('WWW-Authenticate', 'Bearer realm="ndw", error="invalid_token"');
    this.#sendJson(res, 401, {
      error: 'invalid_token',
      error_description: 'Token missing, invalid or expired',
      path: url.pathname,
    });
    return false;
  }

  #token(req: IncomingMessage, res: ServerResponse, body: Buffer, truncate: boolean): void {
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      return this.#sendJson(res, 400, {
        error: 'invalid_request',
        error_description: 'Content-Type must be application/x-www-form-urlencoded',
      });
    }
    const answer = this.auth.handle(new URLSearchParams(body.toString('utf8')));
    res.setHeader('Cache-Control', 'no-store');
    this.#sendJson(res, answer.status, answer.body, truncate);
  }

  /** The body of a refusal, in the Spring style the real service uses. */
  #refuse(res: ServerResponse, url: URL, refusal: Refusal): void {
    const reason =
      {
        400: 'Bad Request',
        404: 'Not Found',
        405: 'Method Not Allowed',
        413: 'Payload Too Large',
        429: 'Too Many Requests',
        500: 'Internal Server Error',
        502: 'Bad Gateway',
        503: 'Service Unavailable',
        504: 'Gateway Timeout',
      }[refusal.status] ?? 'Error';
    this.#sendJson(res, refusal.status, {
      timestamp: new Date().toISOString(),
      status: refusal.status,
      error: reason,
      message: refusal.message,
      path: url.pathname,
    });
  }

  #sendJson(res: ServerResponse, status: number, body: unknown, truncate = false): void {
    const bytes = Buffer.from(JSON.stringify(body), 'utf8');
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': bytes.length });
    if (truncate) {
      // Flush the headers and half the body, then drop the connection.
      res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
      return;
    }
    res.end(bytes);
  }

  // --- bicycle -------------------------------------------------------------------

  #measurements(
    route: RouteName,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    body: Buffer,
    truncate: boolean,
  ): void {
    let request: { start: number; end: number; locations: BicycleLocation[] };
    try {
      request = this.#parseMeasurementRequest(route, req, body);
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      return this.#refuse(res, url, { status: 400, message: error.message });
    }
    const { start, end, locations } = request;
    const until = this.options.bicycle.endInclusive ? end + 1 : end;
    const rows = this.world.bicycle.rows(locations, start, until, this.world.now);
    if (truncate) {
      return this.#sendJson(res, 200, [...rows], true);
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    void this.#stream(res, jsonArray(rows));
  }

  #parseMeasurementRequest(
    route: RouteName,
    req: IncomingMessage,
    body: Buffer,
  ): { start: number; end: number; locations: BicycleLocation[] } {
    if (!(req.headers['content-type'] ?? '').includes('application/json')) {
      throw new BadRequest(
        `Content-Type '${req.headers['content-type'] ?? ''}' is not supported, use application/json`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new BadRequest(`JSON parse error: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new BadRequest('Request body must be a JSON object');
    }
    const fields = parsed as Record<string, unknown>;
    const time = (name: string): number => {
      const value = fields[name];
      if (value === undefined || value === null)
        throw new BadRequest(`Required field '${name}' is missing`);
      const ms = typeof value === 'string' ? parseSecondTimestamp(value) : undefined;
      if (ms === undefined) {
        throw new BadRequest(
          `Field '${name}' must be a timestamp in the format YYYY-MM-DDTHH:mm:ssZ, got ${JSON.stringify(value)}`,
        );
      }
      return ms;
    };
    const start = time('startTime');
    const end = time('endTime');
    if (end <= start) throw new BadRequest('endTime must be after startTime');

    const catalog = this.world.bicycle;
    let locations: BicycleLocation[];
    if (route === 'bicycle-data') {
      const ids = stringList(fields, 'locations');
      locations = [...new Set(ids)]
        .map((id) => catalog.byId(id))
        .filter((l): l is BicycleLocation => l !== undefined);
      this.#checkCount(new Set(ids).size);
    } else if (route === 'bicycle-data/prefix') {
      const prefixes = stringList(fields, 'prefixes');
      const short = prefixes.find((p) => p.length < 3);
      if (short !== undefined)
        throw new BadRequest(`Invalid prefix '${short}': a prefix has at least 3 characters`);
      for (const prefix of prefixes) {
        if (!catalog.locations.some((l) => l.id.startsWith(prefix))) {
          throw new BadRequest(`Invalid prefix '${prefix}': no locations exist for it`);
        }
      }
      locations = catalog.locations.filter((l) => prefixes.some((p) => l.id.startsWith(p)));
      this.#checkCount(locations.length);
    } else {
      const polygon = fields['locationPolygoon'];
      if (polygon === undefined)
        throw new BadRequest("Required field 'locationPolygoon' is missing");
      const problems = checkGeoJsonPolygon(polygon);
      if (problems.length > 0) {
        const first = problems[0]!;
        throw new BadRequest(
          `Invalid polygon: locationPolygoon${first.path ? '.' + first.path : ''} ${first.message}`,
        );
      }
      const rings = (polygon as { coordinates: Position[][] }).coordinates;
      locations = catalog.locations.filter((l) => pointInPolygon([l.longitude, l.latitude], rings));
      if (locations.length === 0)
        throw new BadRequest('Invalid polygon: no locations exist within it');
      this.#checkCount(locations.length);
    }
    if (end - start > this.options.bicycle.maxPeriodDays * DAY_MS) {
      throw new BadRequest('The requested period is too long');
    }
    return { start, end, locations };
  }

  #checkCount(count: number): void {
    if (count > this.options.bicycle.maxLocations) {
      throw new BadRequest(`Too many locations requested (${count})`);
    }
  }

  // --- traffic signs ---------------------------------------------------------------

  #events(res: ServerResponse, url: URL, truncate: boolean): void {
    const offsetText = url.searchParams.get('offset');
    const limitText = url.searchParams.get('limit');
    const offset = offsetText === null ? Date.UTC(1970, 0, 1) : parseMilliTimestamp(offsetText);
    if (offset === undefined) {
      return this.#refuse(res, url, {
        status: 400,
        message: `Invalid offset '${offsetText}': expected yyyy-MM-ddTHH:mm:ss.SSSZ`,
      });
    }
    const limit = limitText === null ? 100 : /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= 100)) {
      return this.#refuse(res, url, {
        status: 400,
        message: `Invalid limit '${limitText}': must be between 1 and 100`,
      });
    }
    const town = this.world.townIndex(url.searchParams.get('town-code') ?? undefined);
    const events = [];
    if (town !== -2) {
      for (const event of this.world.feed.events(offset, this.world.now, town)) {
        events.push(this.world.payload(event));
        if (events.length >= limit) break;
      }
    }
    this.#sendJson(res, 200, events, truncate);
  }

  #currentState(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    truncate: boolean,
    ragged = false,
  ): void {
    const params = url.searchParams;
    const sections = params.get('road-section-ids');
    let sectionIds: Set<number> | undefined;
    if (sections !== null && sections !== '') {
      const parts = sections.split(',').map((s) => s.trim());
      const bad = parts.find((p) => !/^\d+$/.test(p));
      if (bad !== undefined) {
        return this.#refuse(res, url, {
          status: 400,
          message: `Invalid road-section-ids: '${bad}' is not a road section id`,
        });
      }
      sectionIds = new Set(parts.map(Number));
    }
    const csv = wantsCsv(req, url);
    const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
    const rvv = params.get('rvv-code') ?? undefined;
    const world = this.world;
    const moment = world.snapshotMoment;
    const payloads = (function* () {
      for (const payload of world.currentState(moment, params.get('town-code') ?? undefined)) {
        if (rvv !== undefined && payload['rvv_code'] !== rvv) continue;
        if (
          sectionIds &&
          !sectionIds.has(
            Number((payload['location'] as { road: { wvk_id: unknown } }).road.wvk_id),
          )
        )
          continue;
        yield payload;
      }
    })();
    // The snapshot changes monthly: a client that has it gets 304 Not Modified.
    const since = Date.parse(req.headers['if-modified-since'] ?? '');
    if (!Number.isNaN(since) && Math.floor(moment / 1000) * 1000 <= since) {
      res.writeHead(304, { 'Last-Modified': new Date(moment).toUTCString() });
      res.end();
      return;
    }
    const headers: Record<string, string> = {
      'Content-Type': csv ? 'text/csv; charset=utf-8' : 'application/json',
      'Last-Modified': new Date(moment).toUTCString(),
      Vary: 'Accept, Accept-Encoding',
    };
    if (gzip) headers['Content-Encoding'] = 'gzip';
    res.writeHead(200, headers);
    const text = csv ? csvLines(payloads) : jsonArray(payloads);
    void this.#stream(res, ragged && csv ? withRaggedRow(text) : text, gzip, truncate);
  }

  /** Streams text pieces to the response, respecting backpressure; optionally gzip, optionally cut short. */
  async #stream(
    res: ServerResponse,
    pieces: Iterable<string>,
    gzip = false,
    truncate = false,
  ): Promise<void> {
    const sink = gzip ? createGzip() : res;
    if (gzip) sink.pipe(res);
    let buffer = '';
    let written = 0;
    for (const piece of pieces) {
      buffer += piece;
      if (buffer.length < WRITE_CHUNK) continue;
      if (res.destroyed) return;
      written += buffer.length;
      if (!sink.write(buffer)) await once(sink, 'drain');
      buffer = '';
      if (truncate && written > WRITE_CHUNK) {
        res.socket?.destroy();
        return;
      }
    }
    if (truncate) {
      sink.write(buffer.slice(0, Math.floor(buffer.length / 2)));
      await sleep(10);
      res.socket?.destroy();
      return;
    }
    sink.end(buffer);
  }
}

/** A current-state request for CSV: content-type=csv, or an Accept of text/csv. */
function wantsCsv(req: IncomingMessage, url: URL): boolean {
  return (
    url.searchParams.get('content-type') === 'csv' ||
    (req.headers.accept ?? '').includes('text/csv')
  );
}

/** The CSV lines with the first row after the header given a field more than the header. */
function* withRaggedRow(lines: Iterable<string>): Generator<string> {
  let n = 0;
  for (const line of lines) yield ++n === 2 ? line.replace(/\r?\n$/, '') + ',extra\r\n' : line;
}

function stringList(fields: Record<string, unknown>, name: string): string[] {
  const value = fields[name];
  if (value === undefined || value === null)
    throw new BadRequest(`Required field '${name}' is missing`);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '')) {
    throw new BadRequest(`Field '${name}' must be an array of non-empty strings`);
  }
  if (value.length === 0) throw new BadRequest(`Field '${name}' must not be empty`);
  return value as string[];
}

function* jsonArray(items: Iterable<unknown>): Generator<string> {
  yield '[';
  let first = true;
  for (const item of items) {
    yield first ? JSON.stringify(item) : ',' + JSON.stringify(item);
    first = false;
  }
  yield ']';
}

function* csvLines(payloads: Iterable<Record<string, unknown>>): Generator<string> {
  yield CSV_HEADER;
  for (const payload of payloads) yield toCsvLine(payload);
}
