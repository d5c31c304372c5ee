/** How a folder's files move between the local copy and the store: several at once, each with its commit's time. */
import { copyFile, rename, stat, utimes } from 'node:fs/promises';
import pLimit from 'p-limit';
import { mtimeMillis } from '../duckdb/fingerprints.js';

/** Objects fetched or put at once. */
export const TRANSFERS = 8;

/**
 * Runs `transfer` for each item, TRANSFERS at once; fails with the first
 * failure once every one ended (nothing writes into the local folder then).
 */
export async function transferAll<T>(
  items: readonly T[],
  transfer: (item: T) => Promise<void>,
): Promise<void> {
  const limit = pLimit(TRANSFERS);
  const ended = await Promise.allSettled(items.map((item) => limit(() => transfer(item))));
  const failed = ended.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Gives a fetched file the time its commit records. Left as it is when it has
 * that time already: a local folder's file fetched by a link is its object.
 */
export async function giveTime(file: string, mtimeMs: number): Promise<void> {
  const now = await stat(file, { bigint: true });
  if (mtimeMillis(now.mtimeNs) === BigInt(mtimeMs)) return;
  // A link to the object: a copy of its own gets the time, the object keeps its own.
  if (now.nlink > 1n) {
    const copy = `${file}.copy-${process.pid}`;
    await copyFile(file, copy);
    await rename(copy, file);
  }
  const time = new Date(mtimeMs);
  await utimes(file, time, time);
}
