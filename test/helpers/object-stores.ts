/**
 * Real object-store servers for the tests, started from npm packages: s3rver
 * (S3, in this process) and Microsoft's Azurite (Azure Blob, a process of its
 * own, in memory, no telemetry). Each resolves to the variables a run is given.
 */
import { spawn } from 'node:child_process';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { ContainerClient } from '@azure/storage-blob';
import S3rver from 's3rver';
import type { ObjectStore } from '../../src/store/store.js';
import { testDir } from './tmp.js';

export interface StoreServer {
  env: Record<string, string>;
  close(): Promise<void>;
}

/** s3rver with the buckets named. */
export async function startS3(buckets: readonly string[]): Promise<StoreServer> {
  const served = await mkdtemp(join(tmpdir(), 'road-etl-s3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: served,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const address = await server.run();
  return {
    env: {
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'eu-west-1',
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${address.port}`,
    },
    close: async () => {
      await server.close();
      await rm(served, { recursive: true, force: true });
    },
  };
}

/** Azurite's well-known development account (its documentation's; no secret). */
const ACCOUNT = 'devstoreaccount1';
const KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** Azurite's blob service, with the containers named. */
export async function startAzure(containers: readonly string[]): Promise<StoreServer> {
  const main = join(
    createRequire(import.meta.url).resolve('azurite/package.json'),
    '..',
    'dist',
    'src',
    'blob',
    'main.js',
  );
  const child = spawn(
    process.execPath,
    [main, '--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--disableTelemetry', '--skipApiVersionCheck', '--silent'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  ); // prettier-ignore
  // Its port, from the line that says it listens (the rest of its output is read and dropped).
  const port = await new Promise<string>((found, failed) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (m) found(m[1]!);
    });
    child.once('exit', (code) =>
      failed(new Error(`Azurite exited with ${code} before it listened`)),
    );
  });
  const connection = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=http://127.0.0.1:${port}/${ACCOUNT};`;
  for (const name of containers) await new ContainerClient(connection, name).createIfNotExists();
  return {
    env: { AZURE_STORAGE_CONNECTION_STRING: connection },
    close: async () => {
      child.kill();
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/**
 * A proxy in front of an object-store server that lets a test stop a run in
 * the middle of its upload: `uploads(n)` resolves when the n-th upload of a
 * data object (a Parquet file) from now arrives, which it holds, with every
 * later one (never forwarded); what came before is forwarded as it is.
 */
export interface UploadGate {
  /** The server's variables, pointed at the proxy. */
  env: Record<string, string>;
  uploads(count: number): Promise<void>;
  /** Cuts the connection of each of the next `count` uploads of a data object (as a network does). */
  drop(count: number): void;
  /**
   * Resolves when the first request that `match` takes (its method, and its
   * URL's path and query decoded) arrives: held with every later request, or,
   * `answered`, forwarded and its answer held (the store has done it; the
   * client never hears so).
   */
  hold(match: (method: string, url: string) => boolean, answered?: boolean): Promise<void>;
  /** Lets every request through again (those held are cut). */
  free(): void;
  /**
   * The objects read (GET) through the proxy since the last call, by their
   * path (`/bucket/key`, decoded; listings left out), with how often.
   */
  reads(): Map<string, number>;
  close(): Promise<void>;
}

export async function gateUploads(server: StoreServer): Promise<UploadGate> {
  const target = new URL(
    server.env['AWS_ENDPOINT_URL_S3'] ??
      /BlobEndpoint=([^;]+)/.exec(server.env['AZURE_STORAGE_CONNECTION_STRING'] ?? '')![1]!,
  );
  const held: IncomingMessage[] = [];
  let waiting: { left: number; reached: () => void } | undefined;
  let holding = false;
  let dropping = 0;
  let holdOn:
    | { match: (method: string, url: string) => boolean; answered: boolean; reached: () => void }
    | undefined;
  let reads = new Map<string, number>();
  const proxy = createServer((incoming, answer) => {
    const [path = '/', query = ''] = decodeURIComponent(incoming.url ?? '/').split('?');
    if (incoming.method === 'GET' && !/(^|&)(list-type|comp=list|restype)/.test(query))
      reads.set(path, (reads.get(path) ?? 0) + 1);
    const hit =
      holdOn?.match(incoming.method ?? '', decodeURIComponent(incoming.url ?? '/')) ?? false;
    if (hit && !holding) {
      holding = true;
      holdOn!.reached();
      if (holdOn!.answered) {
        const forwarded = request({
          host: target.hostname,
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        });
        // Done by the store; its answer never reaches the client.
        forwarded.on('response', (answered) => answered.resume());
        forwarded.on('error', () => undefined);
        incoming.pipe(forwarded);
        held.push(incoming);
        return;
      }
    }
    if (holdOn && holding) {
      held.push(incoming);
      return;
    }
    const upload = incoming.method === 'PUT' && /\.parquet(\?|$)/.test(incoming.url ?? '');
    if (upload && dropping > 0) {
      dropping--;
      incoming.socket.destroy();
      return;
    }
    if (upload && !holding && waiting && --waiting.left === 0) {
      holding = true;
      waiting.reached();
    }
    if (upload && holding) {
      held.push(incoming);
      return;
    }
    const forwarded = request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answered) => {
        answer.writeHead(answered.statusCode ?? 502, answered.headers);
        answered.pipe(answer);
      },
    );
    forwarded.on('error', () => answer.destroy());
    incoming.on('aborted', () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const env = Object.fromEntries(
    Object.entries(server.env).map(([name, value]) => [
      name,
      name === 'AWS_ENDPOINT_URL_S3'
        ? origin
        : value.replace(`BlobEndpoint=${target.origin}`, `BlobEndpoint=${origin}`),
    ]),
  );
  return {
    env,
    uploads: (count) =>
      new Promise<void>((reached) => {
        for (const request of held.splice(0)) request.socket.destroy();
        holding = false;
        holdOn = undefined;
        waiting = { left: count, reached };
      }),
    drop: (count) => {
      dropping = count;
    },
    reads: () => {
      const seen = reads;
      reads = new Map();
      return seen;
    },
    free: () => {
      for (const request of held.splice(0)) request.socket.destroy();
      holding = false;
      holdOn = undefined;
      waiting = undefined;
    },
    hold: (match, answered = false) =>
      new Promise<void>((reached) => {
        for (const request of held.splice(0)) request.socket.destroy();
        holding = false;
        waiting = undefined;
        holdOn = { match, answered, reached };
      }),
    close: async () => {
      for (const request of held.splice(0)) request.socket.destroy();
      proxy.closeAllConnections();
      proxy.close();
      await once(proxy, 'close');
    },
  };
}

/** A copy of every object under the store's prefix, by key (as `aws s3 sync` or `azcopy` makes it). */
export async function copyOfPrefix(store: ObjectStore): Promise<string> {
  const copy = await testDir();
  for (const { key } of await store.list()) {
    const file = join(copy, ...key.split('/'));
    await mkdir(dirname(file), { recursive: true });
    await store.download(key, file);
  }
  return copy;
}
