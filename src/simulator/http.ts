/** What the simulator's routes share: reading a request, and answering it as NDW's services do. */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGzip } from 'node:zlib';

const MAX_BODY_BYTES = 10 * 1024 * 1024;
const WRITE_CHUNK = 64 * 1024;

/** A request the service refuses with 400 and this message. */
export class BadRequest extends Error {
  override name = 'BadRequest';
}

/** Answers a request failed with: status, and the text the service would put in its body. */
export interface Refusal {
  status: number;
  message: string;
}

/** The body of a request, or undefined when it is larger than the service takes. */
export function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
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

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  truncate = false,
): void {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': bytes.length });
  if (truncate) {
    // Flush the headers and half the body, then drop the connection.
    res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
    return;
  }
  res.end(bytes);
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The body of a refusal, in the Spring style the real services use. */
export function refuse(res: ServerResponse, url: URL, refusal: Refusal): void {
  sendJson(res, refusal.status, {
    timestamp: new Date().toISOString(),
    status: refusal.status,
    error: REASONS[refusal.status] ?? 'Error',
    message: refusal.message,
    path: url.pathname,
  });
}

/** Answers 304 Not Modified when the client has the data of `moment` already; true if it did. */
export function notModified(req: IncomingMessage, res: ServerResponse, moment: number): boolean {
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  if (Number.isNaN(since) || Math.floor(moment / 1000) * 1000 > since) return false;
  res.writeHead(304, { 'Last-Modified': new Date(moment).toUTCString() });
  res.end();
  return true;
}

/**
 * Starts a 200 answer of a download: its type, the moment of its data
 * (Last-Modified), gzip when the client takes it. Returns whether it is gzip.
 */
export function startDownload(
  req: IncomingMessage,
  res: ServerResponse,
  contentType: string,
  moment: number,
): boolean {
  const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
  const headers: Record<string, string> = {
    'Content-Type': contentType,
    'Last-Modified': new Date(moment).toUTCString(),
    Vary: 'Accept, Accept-Encoding',
  };
  if (gzip) headers['Content-Encoding'] = 'gzip';
  res.writeHead(200, headers);
  return gzip;
}

/** Streams text pieces to the response, respecting backpressure; optionally gzip, optionally cut short. */
export async function stream(
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

/** A JSON array, element by element. */
export function* jsonArray(items: Iterable<unknown>): Generator<string> {
  yield '[';
  let first = true;
  for (const item of items) {
    yield first ? JSON.stringify(item) : ',' + JSON.stringify(item);
    first = false;
  }
  yield ']';
}
