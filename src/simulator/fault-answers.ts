/** How the simulated services answer a request that a fault of the plan (faults.ts) falls on. */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultKind } from './faults.js';
import type { FaultOptions } from './options.js';
import { refuse, sendJson } from './http.js';

/** Answers with the fault; true when the fault answered the request (false: the route answers, maybe cut short). */
export async function answerFault(
  fault: { kind: FaultKind; status: number },
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: FaultOptions,
): Promise<boolean> {
  switch (fault.kind) {
    case 'error':
      refuse(res, url, { status: fault.status, message: 'Simulated failure' });
      return true;
    case 'reset':
      req.socket.resetAndDestroy();
      return true;
    case 'rate-limit':
      res.setHeader('Retry-After', String(options.retryAfterSeconds));
      refuse(res, url, { status: 429, message: 'Too Many Requests' });
      return true;
    case 'html':
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(
        '<!DOCTYPE html><html><head><title>Onderhoud</title></head><body><h1>Service tijdelijk niet beschikbaar</h1></body></html>',
      );
      return true;
    case 'stall': {
      const closed = once(res, 'close');
      await Promise.race([sleep(options.stallMs), closed]);
      return res.destroyed;
    }
    case 'content-type':
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('Service running');
      return true;
    case 'not-array':
      sendJson(res, 200, { status: 'error', message: 'Internal error, try again later' });
      return true;
    case 'non-objects':
      sendJson(res, 200, [1, 'two', null]);
      return true;
    case 'corrupt-gzip': {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
      // a gzip header, then bytes that are no deflate stream
      res.end(
        Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.alloc(64, 0xff)]),
      );
      return true;
    }
    case 'truncate':
    case 'ragged-csv':
      return false;
  }
}
