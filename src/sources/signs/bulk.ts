/**
 * NDW's daily bulk file of the current state: the way in for a network that
 * reaches a download but not the API. A file at an http(s) URL or a local path,
 * gzip-compressed or not (recognised by its first bytes), in the v4 CSV layout
 * or as GeoJSON; it is read as the API's answer would be.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, link, open, rename, rm, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { InputError } from '../../errors.js';
import type { HttpClient } from '../../http/client.js';
import { INFLATE_CHUNK } from '../../http/answers.js';

function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * Fetches the bulk file `source` to `path`, decompressed. `ifModifiedSince` is
 * the Last-Modified of the file read last time (for a local file, its time):
 * the same again gives notModified. Resolves to the file's Last-Modified.
 */
export async function fetchBulkFile(
  http: HttpClient,
  source: string,
  path: string,
  query: { ifModifiedSince?: string | undefined; signal?: AbortSignal | undefined },
): Promise<{ lastModified: string | undefined; notModified: boolean }> {
  const raw = `${path}.raw`;
  let lastModified: string | undefined;
  if (isUrl(source)) {
    const { headers, notModified } = await http.download(
      {
        method: 'GET',
        url: source,
        headers: query.ifModifiedSince ? { 'if-modified-since': query.ifModifiedSince } : {},
        signal: query.signal,
      },
      raw,
    );
    if (notModified) return { lastModified: query.ifModifiedSince, notModified: true };
    const header = headers['last-modified'];
    lastModified = typeof header === 'string' ? header : undefined;
  } else {
    const info = await stat(source).catch(() => undefined);
    if (!info?.isFile()) throw new InputError(`signs.live: the bulk file ${source} does not exist`);
    lastModified = info.mtime.toUTCString();
    if (query.ifModifiedSince === lastModified) return { lastModified, notModified: true };
  }
  // What was fetched: the download, or the local file itself (read where it lies).
  const fetched = isUrl(source) ? raw : source;
  if (await isGzip(fetched)) {
    await pipeline(
      createReadStream(fetched, { highWaterMark: INFLATE_CHUNK }),
      createGunzip({ chunkSize: INFLATE_CHUNK }),
      createWriteStream(path),
    );
    await rm(raw, { force: true });
  } else if (fetched === raw) {
    await rename(raw, path);
  } else {
    // linked into staging (copied where a link cannot be made), never written
    await link(source, path).catch(() => copyFile(source, path));
  }
  return { lastModified, notModified: false };
}
