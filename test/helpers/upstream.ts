/**
 * The upstream fault matrix shared by the two upstream test files: the
 * endpoints (each with a pipeline that reads it and the ground truth of that
 * pipeline's output), the faults (as queued on the simulator, and what the
 * message of a lasting one must show), and their product.
 */
import { committed } from './committed.js';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import type { QueuedFault } from '../../src/simulator/faults.js';
import { BICYCLE_SOURCE, idsWithPrefix, landedMeasurements, truthMeasurements } from './bicycle.js';
import { landedEventHashes, signsPipeline, truthEventHashes } from './signs.js';
import {
  BICYCLE_PATH,
  CURRENT_STATE_PATH,
  EVENTS_PATH,
  LOCATIONS_PATH,
  useSimulator,
} from './simulator.js';
import { duck } from './tmp.js';

export interface Endpoint {
  path: string;
  pipeline: string;
  /** The pipeline's output equals the simulator's. */
  truth(output: string): Promise<void>;
}

/** The matrix against a simulator of its own; steps retry each request `retries` times. */
export async function upstreamMatrix(retries: number) {
  const simulator = await useSimulator({
    seed: 47,
    signs: { signs: 120 },
    bicycle: { locations: 12, maxLocations: 20, maxPeriodDays: 10 },
    faults: { retryAfterSeconds: 1, stallMs: 1200 },
  });
  const env = { ...simulator.env };
  const TOKEN_PATH = '/openid-connect/token';
  const START = '2026-02-01T00:00:00Z';
  const END = '2026-02-03T00:00:00Z';
  // Small deadlines and few retries: failing cases end quickly.
  const HTTP = { retries, backoff_ms: 1, timeout_ms: 500 };

  const snapshotPipeline = (format: string) => `name: snapshot
source:
  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }
steps:
  - { id: signs_snapshot, kind: signs.snapshot, options: ${JSON.stringify({ ...HTTP, format })} }
`;
  const bicyclePipeline = `name: bicycle
${BICYCLE_SOURCE}steps:
  - { id: locations, kind: bicycle.locations, options: ${JSON.stringify(HTTP)} }
  - id: measurements
    kind: bicycle.measurements
    needs: [locations]
    options: ${JSON.stringify({ ...HTTP, start: START, end: END, prefixes: ['GAL', 'UTR'], concurrency: 1 })}
`;

  async function snapshotIds(output: string): Promise<string[]> {
    const rows = await duck(
      `SELECT id::VARCHAR AS id FROM read_parquet('${committed(output, 'signs/snapshot/data.parquet')}') ORDER BY id`,
    );
    return rows.map((r) => String(r['id']));
  }
  const truthSnapshotIds = (): string[] =>
    [...simulator.world.currentState(simulator.world.snapshotMoment)]
      .map((p) => String(p['id']))
      .sort();

  const ENDPOINTS: Record<string, Endpoint> = {
    'the event feed': {
      path: EVENTS_PATH,
      pipeline: signsPipeline({ ...HTTP, limit: 40, concurrency: 1 }),
      truth: async (output) =>
        expect(await landedEventHashes(output)).toEqual(truthEventHashes(simulator)),
    },
    'the current-state download (JSON)': {
      path: CURRENT_STATE_PATH,
      pipeline: snapshotPipeline('json'),
      truth: async (output) => expect(await snapshotIds(output)).toEqual(truthSnapshotIds()),
    },
    'the current-state download (CSV)': {
      path: CURRENT_STATE_PATH,
      pipeline: snapshotPipeline('csv'),
      truth: async (output) => expect(await snapshotIds(output)).toEqual(truthSnapshotIds()),
    },
    'the location catalog': {
      path: LOCATIONS_PATH,
      pipeline: bicyclePipeline,
      truth: bicycleTruth,
    },
    'the measurements': {
      path: BICYCLE_PATH,
      pipeline: bicyclePipeline,
      truth: bicycleTruth,
    },
    'the token endpoint': {
      path: TOKEN_PATH,
      pipeline: bicyclePipeline,
      truth: bicycleTruth,
    },
  };

  async function bicycleTruth(output: string): Promise<void> {
    const locations = await duck(
      `SELECT location_id FROM read_parquet('${committed(output, 'bicycle/locations/data.parquet')}') ORDER BY location_id`,
    );
    expect(locations.map((r) => r['location_id'])).toEqual(
      simulator.world.bicycle.locations.map((l) => l.id).sort(),
    );
    expect(await landedMeasurements(output)).toEqual(
      truthMeasurements(simulator, idsWithPrefix(simulator, 'GAL', 'UTR'), START, END).kept,
    );
  }

  /** The faults, as queued on the simulator, and what the message of a lasting one must show. */
  const FAULTS: Record<string, { fault: Omit<QueuedFault, 'path' | 'count'>; shows: RegExp }> = {
    '429 with Retry-After': { fault: { kind: 'rate-limit' }, shows: /429.*Too Many Requests/ },
    'a connection reset': { fault: { kind: 'reset' }, shows: /reset|socket|closed|ECONNRESET/i },
    'a stall past the timeout': { fault: { kind: 'stall' }, shows: /timed out|timeout|600 ms/i },
    'a body cut short': {
      fault: { kind: 'truncate' },
      shows:
        /cut short|truncated|incomplete|terminated|closed|Unexpected end|cannot be read|not valid/i,
    },
    'an HTML error page with 200': { fault: { kind: 'html' }, shows: /200.*(html|Onderhoud)/is },
    'a wrong content type': {
      fault: { kind: 'content-type' },
      shows: /200.*(text\/plain|Service running)/is,
    },
    'JSON of the wrong shape': {
      fault: { kind: 'not-array' },
      shows: /200.*Internal error, try again later/s,
    },
    'an array of non-objects': {
      fault: { kind: 'non-objects' },
      shows: /200.*\[1,"two",null\]|not an object|non-object|objects/is,
    },
    'a corrupt gzip body': {
      fault: { kind: 'corrupt-gzip' },
      shows: /The gzip body cannot be inflated: Z_DATA_ERROR/,
    },
  };

  // A server error: each endpoint meets one of 500, 502, 503 and 504 in turn, all of
  // them met (the client treats them alike: http/answers.ts).
  const serverError = (status: number) => ({
    fault: { kind: 'error', status },
    shows: new RegExp(`${status}.*Simulated failure`),
  });
  const CASES = Object.entries(ENDPOINTS).flatMap(([endpoint, spec], i) => {
    const status = [500, 502, 503, 504][i % 4]!;
    return Object.entries({ [String(status)]: serverError(status), ...FAULTS }).map(
      ([fault, f]) => [endpoint, fault, spec, f] as const,
    );
  });

  /**
   * Every file below the output folder that is not a whole dataset or export
   * file, and whatever the failed step left in the scratch folder (.state/tmp).
   */
  async function leftovers(output: string): Promise<string[]> {
    const found: string[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== '.state') await walk(path);
        } else if (/\.tmp-|\.partial$/.test(entry.name)) {
          found.push(relative(output, path));
        }
      }
    };
    await walk(output);
    const scratch = join(output, '.state', 'tmp');
    for (const name of await readdir(scratch).catch(() => []))
      found.push(join('.state', 'tmp', name));
    return found;
  }

  /** The next run meets a service that is well again. */
  function clear(): void {
    simulator.faults.clearQueue();
  }

  return { simulator, env, CASES, leftovers, clear };
}
