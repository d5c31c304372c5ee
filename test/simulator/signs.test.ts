import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { HOSTILE_TEXTS } from '../../src/simulator/signs/payload.js';
import { CURRENT_STATE_PATH, getEvents, useSimulator } from '../helpers/simulator.js';

type Event = Record<string, unknown> & {
  id: number | string;
  type: string;
  publication_timestamp: string;
};

const simulator = await useSimulator({ seed: 3, signs: { signs: 600 } });
const burst = await useSimulator({
  seed: 5,
  signs: { signs: 4000, rounds: 2, burst: { size: 250 } },
});
const oneTownBurst = await useSimulator({
  seed: 5,
  signs: { signs: 4000, rounds: 2, burst: { size: 150, townCode: 'GM0363' } },
});

/**
 * A reference reader: follows the feed with next offset = last timestamp and drops
 * events already seen at the current instant (by content). Stops when a chunk is
 * full of one instant it has already seen (it cannot get further).
 */
async function readFeed(sim: Simulator, limit: number, townCode?: string): Promise<Event[]> {
  const out: Event[] = [];
  let offset = '1970-01-01T00:00:00.000Z';
  let seenAtInstant = new Set<string>();
  for (;;) {
    const query: Record<string, string> = { offset, limit: String(limit) };
    if (townCode) query['town-code'] = townCode;
    const { status, json } = await getEvents(sim, query);
    if (status !== 200) throw new Error(`status ${status}`);
    const events = json as Event[];
    let added = 0;
    for (const event of events) {
      if (event.publication_timestamp !== offset) {
        offset = event.publication_timestamp;
        seenAtInstant = new Set();
      }
      const key = JSON.stringify(event);
      if (seenAtInstant.has(key)) continue;
      seenAtInstant.add(key);
      out.push(event);
      added++;
    }
    if (events.length < limit) return out;
    if (added === 0) throw new Error(`stuck at ${offset}`);
  }
}

function latestPerSign(events: Iterable<Event>, until = Infinity): Map<string, Event> {
  const latest = new Map<string, Event>();
  for (const event of events) {
    if (Date.parse(event.publication_timestamp) > until) break;
    latest.set(String(event.id), event);
  }
  for (const [id, event] of latest) if (event.type === 'deleted') latest.delete(id);
  return latest;
}

async function getRaw(sim: Simulator, path: string, headers: Record<string, string> = {}) {
  return new Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: Buffer;
  }>((resolve, reject) => {
    const req = request(sim.env.ROAD_ETL_SIGNS_URL + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const truthEvents = [...simulator.world.distinctEvents()] as Event[];

describe('simulator traffic-sign events (4.5)', () => {
  it('orders events by publication_timestamp and repeats many instants', () => {
    const times = truthEvents.map((e) => Date.parse(e.publication_timestamp));
    expect(times.every((t, i) => i === 0 || t >= times[i - 1]!)).toBe(true);
    const perInstant = new Map<number, number>();
    for (const t of times) perInstant.set(t, (perInstant.get(t) ?? 0) + 1);
    const shared = [...perInstant.values()].filter((n) => n > 1).length;
    expect(shared).toBeGreaterThan(perInstant.size / 4);
  });

  it.each([100, 37, 7])(
    'serves exactly the distinct ground-truth events to a correct reader (limit %i)',
    async (limit) => {
      const served = await readFeed(simulator, limit);
      expect(served.map((e) => JSON.stringify(e))).toEqual(
        truthEvents.map((e) => JSON.stringify(e)),
      );
    },
  );

  it('includes events at exactly the offset instant (offset is inclusive)', async () => {
    const instant = truthEvents[50]!.publication_timestamp;
    const { json } = await getEvents(simulator, { offset: instant, limit: '5' });
    const events = json as Event[];
    expect(events[0]!.publication_timestamp).toBe(instant);
    expect(events[0]).toEqual(truthEvents.find((e) => e.publication_timestamp === instant));
  });

  it('repeats the events at the offset instant when reading on from the last timestamp', async () => {
    const first = (await getEvents(simulator, { limit: '10' })).json as Event[];
    const last = first[first.length - 1]!.publication_timestamp;
    const next = (await getEvents(simulator, { offset: last, limit: '10' })).json as Event[];
    expect(next[0]!.publication_timestamp).toBe(last);
    expect(first.map((e) => JSON.stringify(e))).toContain(JSON.stringify(next[0]));
  });

  it('uses 100 and the beginning of the feed when no parameters are given', async () => {
    const { status, json } = await getEvents(simulator, {});
    expect(status).toBe(200);
    expect(json as Event[]).toHaveLength(100);
    expect((json as Event[])[0]!.publication_timestamp).toBe(truthEvents[0]!.publication_timestamp);
  });

  it.each(['0', '101', '-1', '1.5', 'abc', ''])('refuses limit=%j with 400', async (limit) => {
    const { status, json } = await getEvents(simulator, { limit });
    expect(status).toBe(400);
    expect((json as { message: string }).message).toMatch(/limit/);
  });

  it.each([
    '2021-05-01T00:00:00Z',
    '2021-05-01',
    '2021-05-01T00:00:00.000+01:00',
    'yesterday',
    '2021-13-01T00:00:00.000Z',
  ])('refuses offset=%j with 400', async (offset) => {
    const { status, json } = await getEvents(simulator, { offset });
    expect(status).toBe(400);
    expect((json as { message: string }).message).toMatch(/offset/);
  });

  it('filters by town-code, and answers [] for a town it does not know', async () => {
    const served = await readFeed(simulator, 100, 'GM0363');
    const truth = [...simulator.world.distinctEvents('GM0363')];
    expect(served.length).toBeGreaterThan(0);
    expect(served).toEqual(truth);
    expect(
      served.every((e) => (e['location'] as { county: { code: string } }).county.code === 'GM0363'),
    ).toBe(true);
    expect((await getEvents(simulator, { 'town-code': 'GM9999' })).json).toEqual([]);
  });

  it('creates, updates several times, deletes and re-creates signs', () => {
    const histories = new Map<string, string[]>();
    for (const e of truthEvents)
      histories.set(String(e.id), [...(histories.get(String(e.id)) ?? []), e.type]);
    const joined = [...histories.values()].map((h) => h.join(','));
    expect(joined.some((h) => /^created(,updated){2,}/.test(h))).toBe(true);
    expect(joined.some((h) => /deleted,created/.test(h))).toBe(true);
    expect(joined.every((h) => h.startsWith('created'))).toBe(true);
    expect(joined.every((h) => !/deleted,(updated|deleted)/.test(h))).toBe(true);
  });

  it('publishes two different events of one sign at one instant, and some events twice', () => {
    const raw = [...simulator.world.feed.events(simulator.world.feed.start, simulator.world.now)];
    expect(raw.some((e) => e.duplicate)).toBe(true);
    const key = (e: Event) => `${String(e.id)}@${e.publication_timestamp}`;
    const counts = new Map<string, number>();
    for (const e of truthEvents) counts.set(key(e), (counts.get(key(e)) ?? 0) + 1);
    expect([...counts.values()].some((n) => n > 1)).toBe(true);
  });

  it('sends payloads as messy as the real feed', () => {
    const text = JSON.stringify(truthEvents);
    expect(text).toMatch(/"latitude":"\d+\.\d+"/);
    expect(text).toMatch(/"id":"\d+"/);
    expect(text).toMatch(/"validated_on":"\d\d\/\d\d\/\d{4}"/);
    expect(text).toMatch(/"validated_on":"\d{4}-\d\d-\d\d"/);
    expect(text).toMatch(/"removed":""/);
    expect(text).toMatch(/"text_signs":null/);
    expect(text).toMatch(/"text_signs":""/);
    expect(text).toMatch(/"text_signs":\["/);
    expect(text).toContain('Ã');
    expect(text).toMatch(/"schema_version":"1\.1"/);
    expect(text).toMatch(/"condition":/);
  });

  it('hides events published after its clock, and shows them once the clock moves on', async () => {
    const early = await useSimulator({
      seed: 3,
      signs: { signs: 600 },
      now: '2023-01-01T00:00:00.000Z',
    });
    const served = await readFeed(early, 100);
    expect(
      served.every(
        (e) => Date.parse(e.publication_timestamp) <= Date.parse('2023-01-01T00:00:00.000Z'),
      ),
    ).toBe(true);
    expect(served).toEqual(
      truthEvents.filter(
        (e) => Date.parse(e.publication_timestamp) <= Date.parse('2023-01-01T00:00:00.000Z'),
      ),
    );
    early.world.setNow('2026-11-15T00:00:00.000Z');
    expect(await readFeed(early, 100)).toEqual(truthEvents);
  });
});

describe('simulator burst instants', () => {
  it('publishes one instant with more events than a chunk holds, reachable per town-code', async () => {
    const info = burst.world.feed.burst!;
    expect(info.size).toBe(250);
    const instant = new Date(info.time).toISOString();
    const { json } = await getEvents(burst, { offset: instant, limit: '100' });
    const chunk = json as Event[];
    expect(chunk).toHaveLength(100);
    expect(chunk.every((e) => e.publication_timestamp === instant)).toBe(true);
    await expect(readFeed(burst, 100)).rejects.toThrow(`stuck at ${instant}`);
    const atInstant = [...burst.world.distinctEvents()].filter(
      (e) => e['publication_timestamp'] === instant,
    );
    const towns = new Set(
      atInstant.map((e) => (e['location'] as { county: { code: string } }).county.code),
    );
    let reached = 0;
    for (const town of towns) {
      const part = (await getEvents(burst, { offset: instant, limit: '100', 'town-code': town }))
        .json as Event[];
      const here = part.filter((e) => e.publication_timestamp === instant);
      expect(here.length).toBeLessThan(100);
      reached += here.length;
    }
    expect(reached).toBe(atInstant.length);
  });

  it('can put a whole burst in one town, beyond reach of any chunk', async () => {
    const info = oneTownBurst.world.feed.burst!;
    const instant = new Date(info.time).toISOString();
    const part = (
      await getEvents(oneTownBurst, { offset: instant, limit: '100', 'town-code': 'GM0363' })
    ).json as Event[];
    expect(part).toHaveLength(100);
    expect(part.every((e) => e.publication_timestamp === instant)).toBe(true);
  });
});

describe('simulator current state (4.6)', () => {
  const moment = simulator.world.snapshotMoment;
  const snapshot = [...simulator.world.currentState(moment)] as Event[];

  it('is the latest non-deleted event per sign as of the monthly snapshot moment', () => {
    const replayed = latestPerSign(truthEvents, moment);
    expect(new Map(snapshot.map((e) => [String(e.id), e]))).toEqual(replayed);
    expect(new Date(moment).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(truthEvents.some((e) => Date.parse(e.publication_timestamp) > moment)).toBe(true);
  });

  it('after the whole feed equals a replay of every event', () => {
    const final = [...simulator.world.currentState()] as Event[];
    expect(new Map(final.map((e) => [String(e.id), e]))).toEqual(latestPerSign(truthEvents));
    expect(final).not.toEqual(snapshot);
  });

  it('serves JSON by default with Last-Modified at the snapshot moment', async () => {
    const response = await getRaw(simulator, CURRENT_STATE_PATH);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toContain('application/json');
    expect(response.headers['last-modified']).toBe(new Date(moment).toUTCString());
    expect(JSON.parse(response.body.toString('utf8'))).toEqual(snapshot);
  });

  it('serves CSV on content-type=csv or Accept: text/csv, one line per sign', async () => {
    for (const [path, headers] of [
      [`${CURRENT_STATE_PATH}?content-type=csv`, {}],
      [CURRENT_STATE_PATH, { accept: 'text/csv' }],
    ] as const) {
      const response = await getRaw(simulator, path, headers);
      expect(response.headers['content-type']).toContain('text/csv');
      const lines = response.body.toString('utf8').trimEnd().split('\r\n');
      expect(lines[0]!.split(',')).toContain('location.wgs84.latitude');
      expect(lines).toHaveLength(snapshot.length + 1);
      expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(snapshot.map((e) => String(e.id)));
    }
  });

  it('compresses with gzip on Accept-Encoding: gzip', async () => {
    const plain = await getRaw(simulator, CURRENT_STATE_PATH);
    const zipped = await getRaw(simulator, CURRENT_STATE_PATH, { 'accept-encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(plain.body.length / 3);
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
  });

  it('filters by town-code, rvv-code and a long road-section-ids list', async () => {
    const town = (e: Event) => (e['location'] as { county: { code: string } }).county.code;
    const wvk = (e: Event) => String((e['location'] as { road: { wvk_id: unknown } }).road.wvk_id);
    const byTown = JSON.parse(
      (await getRaw(simulator, `${CURRENT_STATE_PATH}?town-code=GM0599`)).body.toString(),
    ) as Event[];
    expect(byTown).toEqual(snapshot.filter((e) => town(e) === 'GM0599'));
    const byRvv = JSON.parse(
      (await getRaw(simulator, `${CURRENT_STATE_PATH}?rvv-code=C2`)).body.toString(),
    ) as Event[];
    expect(byRvv.length).toBeGreaterThan(0);
    expect(byRvv).toEqual(snapshot.filter((e) => e['rvv_code'] === 'C2'));
    const wanted = snapshot.filter((_, i) => i % 5 === 0).map(wvk);
    const ids = [...wanted, ...Array.from({ length: 5000 }, (_, i) => String(900_000_000 + i))];
    const bySection = JSON.parse(
      (
        await getRaw(simulator, `${CURRENT_STATE_PATH}?road-section-ids=${ids.join(',')}`)
      ).body.toString(),
    ) as Event[];
    expect(bySection).toEqual(snapshot.filter((e) => wanted.includes(wvk(e))));
  });

  it('answers 304 Not Modified to If-Modified-Since at or after the snapshot moment', async () => {
    const at = new Date(moment).toUTCString();
    expect((await getRaw(simulator, CURRENT_STATE_PATH, { 'if-modified-since': at })).status).toBe(
      304,
    );
    const before = new Date(moment - 86_400_000).toUTCString();
    const fresh = await getRaw(simulator, CURRENT_STATE_PATH, { 'if-modified-since': before });
    expect(fresh.status).toBe(200);
    expect(JSON.parse(fresh.body.toString('utf8'))).toEqual(snapshot);
  });

  it('refuses road-section-ids that are not ids', async () => {
    expect((await getRaw(simulator, `${CURRENT_STATE_PATH}?road-section-ids=12,abc`)).status).toBe(
      400,
    );
  });
});

describe('simulator hostile text', () => {
  it('gives the chosen share of signs a hostile road name, served as such', async () => {
    const hostile = await useSimulator({ seed: 3, signs: { signs: 300, hostileTextRate: 0.5 } });
    const roads = (events: Record<string, unknown>[]) =>
      events.map((e) => (e['location'] as { road: { name: string } }).road.name);
    const isHostile = (road: string) => (HOSTILE_TEXTS as readonly string[]).includes(road);
    const all = [...hostile.world.distinctEvents()] as Record<string, unknown>[];
    const share = roads(all).filter(isHostile).length / all.length;
    expect(share).toBeGreaterThan(0.4);
    expect(share).toBeLessThan(0.6);
    const served = await getEvents(hostile, { offset: '1970-01-01T00:00:00.000Z', limit: '100' });
    const page = served.json as Record<string, unknown>[];
    const known = new Set(all.map((e) => JSON.stringify(e)));
    expect(page.every((e) => known.has(JSON.stringify(e)))).toBe(true);
    expect(roads(page).filter(isHostile).length).toBeGreaterThan(20);
    expect(roads(truthEvents as unknown as Record<string, unknown>[]).some(isHostile)).toBe(false);
  });
});
