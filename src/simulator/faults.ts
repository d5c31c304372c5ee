/**
 * Fault injection: random faults at configured rates (seeded, so a run can be
 * repeated), and faults queued by tests for the next matching requests, so that
 * a test can assert exactly how many requests a retry made.
 */
import { unit } from '../util/hash.js';
import { FAULT_RATES, type FaultOptions } from './options.js';

export type FaultKind =
  | 'error'
  | 'reset'
  | 'truncate'
  | 'rate-limit'
  | 'stall'
  | 'html'
  /** 200 with a text/plain body */
  | 'content-type'
  /** 200 with a JSON object where an array belongs */
  | 'not-array'
  /** 200 with a JSON array of numbers, strings and null */
  | 'non-objects'
  /** 200 announcing gzip, with bytes that do not inflate */
  | 'corrupt-gzip'
  /** the current-state CSV with a row of more fields than the header (other routes: no fault) */
  | 'ragged-csv';

const KIND_OF_RATE: Record<(typeof FAULT_RATES)[number], FaultKind> = {
  errorRate: 'error',
  resetRate: 'reset',
  rateLimitRate: 'rate-limit',
  stallRate: 'stall',
  htmlRate: 'html',
  truncateRate: 'truncate',
  contentTypeRate: 'content-type',
  notArrayRate: 'not-array',
  nonObjectsRate: 'non-objects',
  corruptGzipRate: 'corrupt-gzip',
  raggedCsvRate: 'ragged-csv',
};

export interface QueuedFault {
  kind: FaultKind;
  /** Only requests whose path contains this; any request when undefined. */
  path?: string;
  /** Only requests whose query or body contains this text (a location id, a town code). */
  contains?: string;
  /** How many matching requests get it. Default 1. */
  count?: number;
  /** For 'error': the status to answer with. Default 500. */
  status?: number;
}

export class FaultPlan {
  #options: FaultOptions;
  readonly #seed: number;
  readonly #queue: {
    kind: FaultKind;
    path: string | undefined;
    contains: string | undefined;
    count: number;
    status: number;
  }[] = [];
  #counter = 0;

  constructor(seed: number, options: FaultOptions) {
    this.#seed = seed;
    this.#options = options;
  }

  get options(): FaultOptions {
    return this.#options;
  }

  /** Replaces the random fault rates while the server runs. */
  configure(options: Partial<FaultOptions>): void {
    this.#options = { ...this.#options, ...options };
  }

  /** Queues faults for the next matching requests. */
  inject(fault: QueuedFault): void {
    this.#queue.push({
      kind: fault.kind,
      path: fault.path,
      contains: fault.contains,
      count: fault.count ?? 1,
      status: fault.status ?? 500,
    });
  }

  /** Forgets the queued faults not yet given. */
  clearQueue(): void {
    this.#queue.length = 0;
  }

  /** Decides the fault for one request (its path, and its query and body as text), if any. */
  next(path: string, detail = ''): { kind: FaultKind; status: number } | undefined {
    const queued = this.#queue.find(
      (f) =>
        (f.path === undefined || path.includes(f.path)) &&
        (f.contains === undefined || detail.includes(f.contains)),
    );
    if (queued) {
      queued.count--;
      if (queued.count <= 0) this.#queue.splice(this.#queue.indexOf(queued), 1);
      return { kind: queued.kind, status: queued.status };
    }
    const o = this.#options;
    if (o.paths.length > 0 && !o.paths.some((p) => path.includes(p))) return undefined;
    const roll = unit(this.#seed, ++this.#counter, 0xfa17);
    let edge = 0;
    for (const key of FAULT_RATES) {
      edge += o[key];
      if (roll < edge) {
        const kind = KIND_OF_RATE[key];
        return { kind, status: kind === 'error' ? 500 : 200 };
      }
    }
    return undefined;
  }
}
