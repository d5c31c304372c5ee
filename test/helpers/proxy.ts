/**
 * A fault-injecting proxy in front of a simulator: it forwards every request
 * as it is, and spoils the next answers of a path as a test asks, the way a
 * real network or a troubled service does, with a 200 that still looks well:
 * a FeatureCollection with fewer features, a body cut short that ends as if
 * whole, a body that trickles, a body broken in the middle, or an error page
 * that echoes the request's body. road-etl cannot tell it from the service.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll } from 'vitest';

export type Spoil =
  /** A 200 whose FeatureCollection keeps only what `keep` gives of its features. */
  | { kind: 'features'; keep: (features: unknown[]) => unknown[] }
  /** A 200 whose JSON body is what `edit` makes of it. */
  | { kind: 'json'; edit: (body: unknown) => unknown }
  /** A 200 whose body ends after `fraction` of it, as a whole chunked answer ends. */
  | { kind: 'cut'; fraction: number }
  /** The same, cut just after a feature in the middle of a FeatureCollection. */
  | { kind: 'cut-after-feature' }
  /** A 200 whose body comes `bytes` at a time every `everyMs`. */
  | { kind: 'trickle'; bytes: number; everyMs: number }
  /** A 200 whose body has bytes in its middle replaced by others (same length). */
  | { kind: 'break' }
  /** An answer of `status` whose body echoes the request's body (by default as it came), or its headers. */
  | {
      kind: 'echo';
      status: number;
      as?: (body: string, headers: IncomingMessage['headers']) => string;
    }
  /** An answer of `status` with a short page of the service's, the request never forwarded. */
  | { kind: 'status'; status: number };

interface Rule {
  path: string;
  left: number;
  spoil: Spoil;
  when: ((query: URLSearchParams, body: string) => boolean) | undefined;
}

export interface Proxy {
  /** The proxy's origin. */
  origin: string;
  /** The simulator's ROAD_ETL_* variables, pointed at the proxy. */
  env<T extends Record<string, string>>(env: T): T;
  /** Spoils the next `count` answers of requests whose path ends with `path` (and whose query and body `when` takes). */
  spoil(
    path: string,
    spoil: Spoil,
    count?: number,
    when?: (query: URLSearchParams, body: string) => boolean,
  ): void;
  /** Answers spoiled so far, and requests forwarded, by path. */
  spoiled: number;
  forwarded: Map<string, number>;
  /** The answers the target gave to the requests forwarded: each one's URL and status. */
  answered: { url: URL; status: number }[];
  /** Forgets the spoils not used yet. */
  clear(): void;
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/** Starts a proxy to `target` (an origin) for this test file; closed after its tests. */
export async function useProxy(target: string): Promise<Proxy> {
  const rules: Rule[] = [];
  const base = new URL(target);
  const proxy: Proxy = {
    origin: '',
    env(env) {
      return Object.fromEntries(
        Object.entries(env).map(([k, v]) => [
          k,
          v.startsWith(base.origin) ? proxy.origin + v.slice(base.origin.length) : v,
        ]),
      ) as typeof env;
    },
    spoil(path, spoil, count = 1, when?) {
      rules.push({ path, left: count, spoil, when });
    },
    spoiled: 0,
    forwarded: new Map(),
    answered: [],
    clear() {
      rules.length = 0;
    },
  };

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const url = new URL(req.url ?? '/', 'http://proxy');
    const path = url.pathname;
    const rule = rules.find(
      (r) =>
        r.left > 0 &&
        path.endsWith(r.path) &&
        (r.when?.(url.searchParams, body.toString('utf8')) ?? true),
    );
    if (rule) {
      rule.left--;
      proxy.spoiled++;
    } else proxy.forwarded.set(path, (proxy.forwarded.get(path) ?? 0) + 1);
    const spoil = rule?.spoil;
    if (spoil?.kind === 'echo') {
      res.writeHead(spoil.status, { 'content-type': 'text/plain' });
      const text = body.toString('utf8');
      res.end(spoil.as ? spoil.as(text, req.headers) : `Bad request body: ${text}`);
      return;
    }
    if (spoil?.kind === 'status') {
      res.writeHead(spoil.status, { 'content-type': 'text/html' });
      res.end(`<html><body><h1>${spoil.status}</h1>Internal error, try again later</body></html>`);
      return;
    }
    const headers = { ...req.headers, host: base.host };
    // A spoiled answer is read whole and uncompressed; any other passes as it comes.
    if (spoil) delete headers['accept-encoding'];
    const upstream = request(
      { host: base.hostname, port: base.port, method: req.method, path: req.url, headers },
      (response) => {
        if (!spoil) proxy.answered.push({ url, status: response.statusCode ?? 0 });
        if (!spoil || response.statusCode !== 200) {
          res.writeHead(response.statusCode ?? 502, response.headers);
          response.pipe(res);
          return;
        }
        void readAll(response).then(async (whole) => {
          const rest = { ...response.headers };
          delete rest['content-length'];
          let out = whole;
          if (spoil.kind === 'features') {
            const collection = JSON.parse(whole.toString('utf8')) as { features: unknown[] };
            collection.features = spoil.keep(collection.features);
            out = Buffer.from(JSON.stringify(collection));
          } else if (spoil.kind === 'json') {
            out = Buffer.from(JSON.stringify(spoil.edit(JSON.parse(whole.toString('utf8')))));
          } else if (spoil.kind === 'cut') {
            out = whole.subarray(0, Math.floor(whole.length * spoil.fraction));
          } else if (spoil.kind === 'cut-after-feature') {
            const at = whole.indexOf('},{"type":"Feature"', Math.floor(whole.length / 2));
            out = whole.subarray(0, at + 1);
          } else if (spoil.kind === 'break') {
            out = Buffer.from(whole);
            const middle = Math.floor(out.length / 2);
            out.fill('#', middle, Math.min(out.length, middle + 16));
          }
          // Chunked: the end of the body is the end of the answer, cut or not.
          res.writeHead(200, { ...rest, 'transfer-encoding': 'chunked' });
          if (spoil.kind !== 'trickle') {
            res.end(out);
            return;
          }
          for (let at = 0; at < out.length && !res.destroyed; at += spoil.bytes) {
            res.write(out.subarray(at, at + spoil.bytes));
            await sleep(spoil.everyMs);
          }
          res.end();
        });
      },
    );
    upstream.on('error', () => res.destroy());
    upstream.end(body);
  }

  const server = createServer((req, res) => {
    answer(req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  proxy.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close').catch(() => undefined);
  });
  return proxy;
}
