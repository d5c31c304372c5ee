/**
 * A unit of work (a step, the report) over a folder fetched on demand: run
 * again when it read a file not fetched yet (remote-files.ts).
 */
import { relative } from 'node:path';
import { damagedFileOf } from '../duckdb/damaged.js';
import type { Logger } from '../log.js';
import { remoteMiss } from './remote-files.js';

/**
 * Runs `work`; when it fails on a placeholder of a folder fetched on demand,
 * fetches that file's partition, or more (RemoteFiles.fetchAround), says so,
 * and runs it again (`again` first: what was learnt of the folder is read anew).
 */
export async function fetchingWhatIsRead<T>(
  work: () => Promise<T>,
  options: {
    what: string;
    output: string;
    logger: Logger;
    signal?: AbortSignal | undefined;
    again?: () => void;
  },
): Promise<T> {
  const misses = new Map<string, string>();
  for (;;) {
    try {
      return await work();
    } catch (error) {
      const miss = remoteMiss(damagedFileOf(error)?.file);
      if (!miss || options.signal?.aborted) throw error;
      const fetched = await miss.remote.fetchAround(miss.file, misses);
      const file = relative(options.output, miss.file);
      options.logger.log(
        'info',
        'store.fetch',
        `${options.what} read ${file}, not fetched yet: fetched ${fetched} file(s) of its dataset, and ${options.what} runs again`,
        { file, fetched },
      );
      if (fetched === 0) throw error;
      options.again?.();
    }
  }
}
