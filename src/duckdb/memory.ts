/**
 * The memory budget of a run (`duckdb.memory_limit`): what the whole process
 * may use, whatever the number of cores. DuckDB gets most of it as its own
 * memory_limit (it spills to the run's temporary folder beyond that) and as
 * many threads as the budget can feed: each DuckDB thread holds buffers of its
 * own (a row group being written, the column chunks being read, its part of a
 * hash table), so sixteen threads under a budget sized for four fail where
 * four succeed. The rest of the budget is for Node (the readers, V8's heap)
 * and the memory DuckDB allocates outside its buffer manager.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { RunError } from '../errors.js';

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** A size as DuckDB writes it: a number and a unit (KB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB: of 1024). */
const SIZE_PATTERN = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)$/i;
export const SIZE_HELP = 'a size like 1GB, 512MB or 2GiB';

/** Bytes of a size like "1GB" or "512 MiB"; undefined for anything else. */
export function parseSize(text: string): number | undefined {
  const match = SIZE_PATTERN.exec(text.trim());
  if (!match) return undefined;
  return Math.floor(Number(match[1]) * UNITS[match[2]!.toLowerCase()]!);
}

/** A size for messages: "1.0 GB", "512 MB". */
export function formatSize(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

/** The smallest budget a run can have: DuckDB and Node need this much to start at all. */
export const MIN_BUDGET = 256 * 2 ** 20;

/** The default budget: this share of the memory the process can have. */
export const DEFAULT_BUDGET_SHARE = 0.25;

/** DuckDB's share of the budget; the rest is Node's and DuckDB's memory outside its buffer manager. */
export const DUCKDB_SHARE = 0.6;

/** DuckDB memory each thread needs (of DuckDB's share) for the statements of the shipped pipelines. */
export const MEMORY_PER_THREAD = 200 * 2 ** 20;

/**
 * Parquet a DuckDB thread reads in a statement worth its start: a step that
 * reads less runs on fewer threads (threadsFor).
 */
export const BYTES_PER_THREAD = 16 * 2 ** 20;

/**
 * The threads a step that reads `bytes` of Parquet runs on, at most `threads`.
 * DuckDB splits a scan by row group and a file has a few: on a small read the
 * other threads only wait, and each costs its own buffers and hash tables (a
 * night of the bicycle pipeline takes 10-13% less CPU with its sql and export
 * steps on one thread than on two, in the same time: bench/README.md).
 */
export function threadsFor(bytes: number, threads: number): number {
  return Math.max(1, Math.min(threads, Math.ceil(bytes / BYTES_PER_THREAD)));
}

/**
 * The memory this process can have: the machine's, or less where a control
 * group (a container, a systemd slice, a Kubernetes or Airflow worker's limit)
 * says so.
 */
function availableMemory(): number {
  const limits = [totalmem()];
  for (const file of [
    '/sys/fs/cgroup/memory.max', // cgroup v2
    '/sys/fs/cgroup/memory/memory.limit_in_bytes', // cgroup v1
  ]) {
    try {
      const value = Number(readFileSync(file, 'utf8').trim());
      if (Number.isFinite(value) && value > 0) limits.push(value);
    } catch {
      // not there ("max" is no limit)
    }
  }
  return Math.min(...limits);
}

/** The budget when the definition names none: a quarter of the memory available, at least MIN_BUDGET. */
export function defaultBudget(available = availableMemory()): number {
  return Math.max(MIN_BUDGET, Math.floor(available * DEFAULT_BUDGET_SHARE));
}

export interface DuckDbMemory {
  /** The whole budget, in bytes. */
  budget: number;
  /** DuckDB's memory_limit, in bytes. */
  memoryLimit: number;
  /** DuckDB's threads: what was asked (or the cores), capped by what the budget can feed. */
  threads: number;
  /** The threads asked for (or the cores), before the cap. */
  wanted: number;
}

/** How a budget is shared out: DuckDB's memory_limit and threads. */
export function shareBudget(
  budget: number,
  threads: number | undefined,
  cores = availableParallelism(),
): DuckDbMemory {
  const memoryLimit = Math.floor(budget * DUCKDB_SHARE);
  const wanted = threads ?? cores;
  const affordable = Math.max(1, Math.floor(memoryLimit / MEMORY_PER_THREAD));
  return { budget, memoryLimit, threads: Math.min(wanted, affordable), wanted };
}

/** DuckDB's out-of-memory error in an error or its causes, if there is one. */
function outOfMemoryError(error: unknown): Error | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if (e instanceof Error && /Out of Memory Error/i.test(e.message)) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** DuckDB's words for running out of memory within its memory_limit. */
export function isOutOfMemory(error: unknown): boolean {
  return outOfMemoryError(error) !== undefined;
}

/**
 * An out-of-memory error of DuckDB as what it is: the budget was too small for
 * a statement (exit 1), with what to change; undefined for any other error.
 */
export function explainOutOfMemory(
  error: unknown,
  doing: string,
  memory: DuckDbMemory | undefined,
): RunError | undefined {
  const said = outOfMemoryError(error)?.message;
  if (said === undefined) return undefined;
  const budget = memory
    ? `the budget of ${formatSize(memory.budget)} (duckdb.memory_limit; ${formatSize(memory.memoryLimit)} of it for DuckDB, ${memory.threads} thread${memory.threads === 1 ? '' : 's'})`
    : 'its memory limit';
  return new RunError(
    `${doing}: DuckDB ran out of memory within ${budget}. Raise duckdb.memory_limit in the pipeline definition` +
      `${memory && memory.threads > 1 ? ', or lower duckdb.threads' : ''}, and run again (${said.split('\n')[0]!.trim()})`,
    { cause: error },
  );
}
