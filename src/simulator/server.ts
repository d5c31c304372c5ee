/**
 * The simulated upstream over HTTP: the token endpoint, the bicycle endpoints
 * (4.1-4.4) under /bicycle, the traffic-sign endpoints (4.5, 4.6, v4, v5) under
 * /signs. Strict where the contract is strict, messy where the real data is
 * messy. This file routes, records and injects faults; the answers are each
 * API's routes (bicycle/routes.ts, signs/routes.ts) over shared HTTP helpers.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { BICYCLE_PATHS, SIGNS_PATHS, TOKEN_PATH } from '../endpoints.js';
import { DAY_MS } from '../util/time.js';
import { TokenIssuer } from './auth.js';
import * as bicycle from './bicycle/routes.js';
import { answerFault } from './fault-answers.js';
import { FaultPlan, type FaultKind, type QueuedFault } from './faults.js';
import { readBody, refuse, sendJson } from './http.js';
import { resolveSimulatorOptions, type SimulatorInput, type SimulatorOptions } from './options.js';
import type { RouteRequest } from './routes.js';
import * as signs from './signs/routes.js';
import { World } from './world.js';

export { TOKEN_PATH };
const BICYCLE_PREFIX = '/bicycle';
const SIGNS_PREFIX = '/signs';
/** Not NDW's: moves the simulated world on (`?days=N`), so that the daily current state changes. */
const ADVANCE_PATH = '/simulator/advance';

const ROUTES = {
  [TOKEN_PATH]: { name: 'token', method: 'POST' },
  [BICYCLE_PREFIX + BICYCLE_PATHS.measurements]: { name: 'bicycle-data', method: 'POST' },
  [BICYCLE_PREFIX + BICYCLE_PATHS.prefix]: { name: 'bicycle-data/prefix', method: 'POST' },
  [BICYCLE_PREFIX + BICYCLE_PATHS.geo]: { name: 'bicycle-data/geo', method: 'POST' },
  [BICYCLE_PREFIX + BICYCLE_PATHS.locations]: { name: 'locations', method: 'GET' },
  [SIGNS_PREFIX + SIGNS_PATHS.events]: { name: 'events', method: 'GET' },
  [SIGNS_PREFIX + SIGNS_PATHS.currentState]: { name: 'current-state', method: 'GET' },
  [SIGNS_PREFIX + SIGNS_PATHS.live.v4]: { name: 'live-v4', method: 'GET' },
  [SIGNS_PREFIX + SIGNS_PATHS.live.v5]: { name: 'live-v5', method: 'GET' },
  [ADVANCE_PATH]: { name: 'advance', method: 'POST' },
} as const;
type Route = (typeof ROUTES)[keyof typeof ROUTES];

export type RouteName = Route['name'];

const MAX_RECORDS = 100_000;
const RECORDED_BODY_BYTES = 4096;

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

export interface RequestRecord {
  route: RouteName | 'unknown';
  method: string;
  /** The query string (with its ?), and the first 4 KB of a POST's body: what was asked. */
  query: string;
  body: string;
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
          if (!res.headersSent) sendJson(res, 500, { status: 500, error: 'Internal Server Error' });
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
    const route = ROUTES[url.pathname as keyof typeof ROUTES] as Route | undefined;
    const record = this.#record(req, res, route);
    if (!route) {
      refuse(res, url, { status: 404, message: `No endpoint at ${url.pathname}` });
      return;
    }
    if (req.method !== route.method) {
      res.setHeader('Allow', route.method);
      refuse(res, url, { status: 405, message: `Request method '${req.method}' is not supported` });
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : Buffer.alloc(0);
    if (body === undefined) {
      refuse(res, url, { status: 413, message: 'Request body too large' });
      return;
    }
    record.body = body.subarray(0, RECORDED_BODY_BYTES).toString('utf8');

    const latency = this.faults.options.latencyMs;
    if (latency > 0) await sleep(latency);
    const fault = this.faults.next(url.pathname, `${url.search}\n${body.toString('utf8')}`);
    // A ragged row exists only in a CSV download; elsewhere that roll is no fault.
    const ragged =
      fault?.kind === 'ragged-csv' && route.name === 'current-state' && signs.wantsCsv(req, url);
    record.fault = fault?.kind === 'ragged-csv' && !ragged ? undefined : fault?.kind;
    if (fault && (await answerFault(fault, req, res, url, this.faults.options))) return;
    this.#answer(route.name, {
      req,
      res,
      url,
      body,
      truncate: fault?.kind === 'truncate',
      ragged,
      world: this.world,
      options: this.options,
      auth: this.auth,
    });
  }

  /** Records the request (route, status, fault) and counts it. */
  #record(req: IncomingMessage, res: ServerResponse, route: Route | undefined): RequestRecord {
    const record: RequestRecord = {
      route: route?.name ?? 'unknown',
      method: req.method ?? '',
      query: new URL(req.url ?? '/', 'http://simulator').search,
      body: '',
      status: 0,
      fault: undefined,
    };
    this.requests.push(record);
    if (this.requests.length > MAX_RECORDS)
      this.requests.splice(0, this.requests.length - MAX_RECORDS / 2);
    this.#counts.set(record.route, (this.#counts.get(record.route) ?? 0) + 1);
    res.on('finish', () => (record.status = res.statusCode));
    res.on('close', () => (record.status ||= res.statusCode));
    return record;
  }

  #answer(route: RouteName, request: RouteRequest): void {
    switch (route) {
      case 'token':
        return bicycle.token(request);
      case 'locations':
        return bicycle.locations(request);
      case 'bicycle-data':
      case 'bicycle-data/prefix':
      case 'bicycle-data/geo':
        return bicycle.measurements(route, request);
      case 'events':
        return signs.events(request);
      case 'current-state':
        return signs.currentState(request);
      case 'live-v4':
      case 'live-v5':
        return signs.live(route === 'live-v4' ? 'v4' : 'v5', request);
      case 'advance':
        return this.#advance(request);
    }
  }

  /** Moves the world on by `days` (not an NDW endpoint). */
  #advance({ res, url }: RouteRequest): void {
    const days = Number(url.searchParams.get('days') ?? '1');
    if (!Number.isInteger(days) || days < -3650 || days > 3650) {
      refuse(res, url, { status: 400, message: 'days must be a whole number' });
      return;
    }
    this.world.setNow(new Date(this.world.now + days * DAY_MS).toISOString());
    sendJson(res, 200, { now: new Date(this.world.now).toISOString() });
  }
}
