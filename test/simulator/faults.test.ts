import { describe, expect, it } from 'vitest';
import { parseRfc4180 } from '../helpers/csv.js';
import { CURRENT_STATE_PATH, EVENTS_PATH, useSimulator } from '../helpers/simulator.js';

const simulator = await useSimulator({ seed: 2, signs: { signs: 3000 } });
const events = simulator.env.ROAD_ETL_SIGNS_URL + EVENTS_PATH;

describe('simulator faults', () => {
  it('answers queued errors with their status and a body, then recovers', async () => {
    simulator.inject({ kind: 'error', status: 503, count: 2, path: '/events' });
    const before = simulator.count('events');
    const first = await fetch(events);
    const second = await fetch(events);
    const third = await fetch(events);
    expect([first.status, second.status, third.status]).toEqual([503, 503, 200]);
    expect(((await first.json()) as { message: string }).message).toBe('Simulated failure');
    expect(simulator.count('events') - before).toBe(3);
  });

  it('resets the connection', async () => {
    simulator.inject({ kind: 'reset' });
    const error = (await fetch(events).catch((e: unknown) => e)) as Error & {
      cause?: { code?: string };
    };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.cause?.code).toMatch(/ECONNRESET|UND_ERR_SOCKET/);
  });

  it('cuts a body off halfway, so that it cannot be parsed', async () => {
    simulator.inject({ kind: 'truncate', path: '/events' });
    const response = await fetch(events);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('cuts off a streamed current-state download', async () => {
    simulator.inject({ kind: 'truncate', path: '/current-state' });
    const response = await fetch(simulator.env.ROAD_ETL_SIGNS_URL + CURRENT_STATE_PATH);
    const outcome = await response.text().then(
      (text) => JSON.parse(text) as unknown,
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(Error);
  });

  it('answers 429 with Retry-After', async () => {
    simulator.inject({ kind: 'rate-limit' });
    const response = await fetch(events);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('1');
  });

  it('answers 200 with an HTML page', async () => {
    simulator.inject({ kind: 'html' });
    const response = await fetch(events);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toMatch(/^<!DOCTYPE html>/);
  });

  it('stalls before answering', async () => {
    simulator.faults.configure({ stallMs: 300 });
    simulator.inject({ kind: 'stall' });
    const started = performance.now();
    const response = await fetch(events);
    expect(response.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('adds latency to every request', async () => {
    simulator.faults.configure({ latencyMs: 120 });
    const started = performance.now();
    await fetch(events);
    expect(performance.now() - started).toBeGreaterThanOrEqual(115);
    simulator.faults.configure({ latencyMs: 0 });
  });

  it('faults a configured fraction of requests, only on the configured paths', async () => {
    simulator.faults.configure({ errorRate: 0.5, paths: ['/events'] });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) statuses.push((await fetch(`${events}?limit=1`)).status);
    const failed = statuses.filter((s) => s === 500).length;
    expect(failed).toBeGreaterThan(60);
    expect(failed).toBeLessThan(140);
    const other = await fetch(
      simulator.env.ROAD_ETL_SIGNS_URL + CURRENT_STATE_PATH + '?town-code=GM0014',
    );
    expect(other.status).toBe(200);
    simulator.faults.configure({ errorRate: 0, paths: [] });
    expect((await fetch(events)).status).toBe(200);
  });

  it('records every request with its route, status and fault', () => {
    const kinds = new Set(simulator.requests.map((r) => r.fault).filter(Boolean));
    expect(kinds).toEqual(new Set(['error', 'reset', 'truncate', 'rate-limit', 'html', 'stall']));
    expect(
      simulator.requests.filter((r) => r.fault === 'rate-limit').every((r) => r.status === 429),
    ).toBe(true);
  });

  it('gives the malformed answers at configured rates too (every request at rate 1)', async () => {
    const csvUrl = `${simulator.env.ROAD_ETL_SIGNS_URL}${CURRENT_STATE_PATH}?town-code=GM0014&content-type=csv`;
    const fieldCounts = async (): Promise<Set<number>> =>
      new Set(parseRfc4180(await (await fetch(csvUrl)).text()).map((row) => row.length));
    try {
      simulator.faults.configure({ contentTypeRate: 1 });
      const plain = await fetch(events);
      expect([plain.status, plain.headers.get('content-type')]).toEqual([
        200,
        'text/plain; charset=utf-8',
      ]);
      simulator.faults.configure({ contentTypeRate: 0, notArrayRate: 1 });
      expect(Array.isArray(await (await fetch(events)).json())).toBe(false);
      simulator.faults.configure({ notArrayRate: 0, nonObjectsRate: 1 });
      expect(await (await fetch(events)).json()).toEqual([1, 'two', null]);
      simulator.faults.configure({ nonObjectsRate: 0, corruptGzipRate: 1 });
      const gzip = await fetch(events);
      expect(gzip.headers.get('content-encoding')).toBe('gzip');
      await expect(gzip.arrayBuffer()).rejects.toThrow();
      simulator.faults.configure({ corruptGzipRate: 0 });
      expect(await fieldCounts()).toHaveProperty('size', 1);
      simulator.faults.configure({ raggedCsvRate: 1 });
      // One row of the CSV has a field more than the header; the feed is untouched.
      expect((await fieldCounts()).size).toBe(2);
      // The feed is served as it is, and not recorded as faulted.
      const before = simulator.requests.length;
      expect((await fetch(events)).status).toBe(200);
      expect(simulator.requests.slice(before).map((r) => r.fault)).toEqual([undefined]);
    } finally {
      simulator.faults.configure({
        contentTypeRate: 0,
        notArrayRate: 0,
        nonObjectsRate: 0,
        corruptGzipRate: 0,
        raggedCsvRate: 0,
      });
    }
  });
});
