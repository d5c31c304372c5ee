import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gathered } from '../../src/http/answers.js';
import { HttpClient } from '../../src/http/client.js';
import { testDir } from '../helpers/tmp.js';

/** Text that compresses as JSON does, of about `bytes`. */
function jsonText(bytes: number): Buffer {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < bytes; i++) {
    const line = `{"id":"${randomBytes(16).toString('hex')}","n":${i},"name":"Straat ${i % 977}"},\n`;
    lines.push(line);
    n += line.length;
  }
  return Buffer.from(lines.join(''));
}

describe('a body gathered into large pieces', () => {
  it('passes every byte in order, in pieces of at least the size but the last', async () => {
    const input = randomBytes(3_300_000);
    const pieces: Buffer[] = [];
    for (let at = 0, n = 1; at < input.length; n = (n * 7919) % 20_011) {
      pieces.push(input.subarray(at, at + n));
      at += n;
    }
    const out: Buffer[] = [];
    await pipeline(Readable.from(pieces), gathered(1 << 20), async (source) => {
      for await (const piece of source) out.push(piece as Buffer);
    });
    expect(Buffer.concat(out).equals(input)).toBe(true);
    expect(out.slice(0, -1).every((piece) => piece.length >= 1 << 20)).toBe(true);
    expect(out).toHaveLength(4);
  });

  it('downloads a gzip answer sent in 16 kB chunks as the file it is', async () => {
    const text = jsonText(8_000_000);
    const gzip = gzipSync(text);
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      // Chunked, 16 kB at a time, as a gzip stream writes them.
      const write = (at: number): void => {
        if (at >= gzip.length) return void res.end();
        if (res.write(gzip.subarray(at, at + 16_384))) setImmediate(() => write(at + 16_384));
        else res.once('drain', () => write(at + 16_384));
      };
      write(0);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = new HttpClient({ retries: 0 });
    try {
      const path = join(await testDir(), 'answer.json');
      const { port } = server.address() as AddressInfo;
      await client.download({ method: 'GET', url: `http://127.0.0.1:${port}/answer` }, path);
      expect((await readFile(path)).equals(text)).toBe(true);
    } finally {
      await client.close();
      server.close();
    }
  });
});
