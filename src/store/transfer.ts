/** How a folder's files move between the local copy and the store: several at once. */
import pLimit from 'p-limit';

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
