import { describe, expect, it } from 'vitest';
import { liveState } from '../../src/simulator/index.js';
import { useSimulator } from '../helpers/simulator.js';

const simulator = await useSimulator({ seed: 5, signs: { signs: 300 } });
const base = `${simulator.env.ROAD_ETL_SIGNS_V5_URL}/api/rest/static-road-data/traffic-signs`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function collection(
  version: 'v4' | 'v5',
  query = '',
): Promise<{ type: string; features: { id: string; properties: Record<string, unknown> }[] }> {
  const response = await fetch(`${base}/${version}/current-state${query}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/geo+json');
  return (await response.json()) as Awaited<ReturnType<typeof collection>>;
}

describe('simulator: today’s traffic-sign API (v4, v5 current state)', () => {
  it('serves each sign under one UUID in both versions, properties absent rather than null', async () => {
    const v4 = await collection('v4');
    const v5 = await collection('v5');
    expect(v4.type).toBe('FeatureCollection');
    expect(v4.features.length).toBeGreaterThan(100);
    expect(v4.features.map((f) => f.id)).toEqual(v5.features.map((f) => f.id));
    for (const f of v5.features) {
      expect(f.id).toMatch(UUID);
      expect(Object.values(f.properties)).not.toContain(null);
      expect(f.properties).not.toHaveProperty('status');
    }
    expect(new Set(v4.features.map((f) => f.properties['status']))).toEqual(
      new Set(['PLACED', 'REMOVED']),
    );
  });

  it('filters by countyCode, rvvCode and status, and refuses a malformed filter', async () => {
    const amsterdam = await collection('v4', '?countyCode=GM0363&status=PLACED');
    expect(amsterdam.features.length).toBeGreaterThan(0);
    for (const f of amsterdam.features) {
      expect(f.properties['countyCode']).toBe('GM0363');
      expect(f.properties['status']).toBe('PLACED');
    }
    const codes = await collection('v5', '?rvvCode=A1&rvvCode=C22');
    expect(new Set(codes.features.map((f) => f.properties['rvvCode']))).toEqual(
      new Set(['A1', 'C22']),
    );
    expect((await fetch(`${base}/v4/current-state?countyCode=0363`)).status).toBe(400);
    expect((await fetch(`${base}/v4/current-state?status=GONE`)).status).toBe(400);
    expect((await fetch(`${base}/v5/current-state?roadSectionId=x`)).status).toBe(400);
  });

  it('serves v4 as CSV with NDW’s header and v5 as GeoJSON only, gzip when asked', async () => {
    const csv = await fetch(`${base}/v4/current-state`, {
      headers: { accept: 'text/csv', 'accept-encoding': 'gzip' },
    });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await csv.text(); // fetch undoes the gzip
    expect(text.split('\r\n')[0]).toMatch(/^id,externalId,validated,validatedOn,rvvCode,/);
    const gz = await fetch(`${base}/v5/current-state`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(((await gz.json()) as { type: string }).type).toBe('FeatureCollection'); // fetch gunzips
    const asCsv = await fetch(`${base}/v5/current-state`, { headers: { accept: 'text/csv' } });
    expect(asCsv.status).toBe(406);
  });

  it('changes daily: 304 for the same day, the next day’s state after POST /simulator/advance', async () => {
    const first = await fetch(`${base}/v5/current-state`);
    const lastModified = first.headers.get('last-modified')!;
    await first.arrayBuffer();
    const same = await fetch(`${base}/v5/current-state`, {
      headers: { 'if-modified-since': lastModified },
    });
    expect(same.status).toBe(304);
    const start = simulator.world.now;
    try {
      const advanced = await fetch(`${simulator.url}/simulator/advance?days=1`, { method: 'POST' });
      expect(advanced.status).toBe(200);
      expect(simulator.world.now).toBe(start + 86_400_000);
      const next = await fetch(`${base}/v5/current-state`, {
        headers: { 'if-modified-since': lastModified },
      });
      expect(next.status).toBe(200);
      const served = ((await next.json()) as Awaited<ReturnType<typeof collection>>).features;
      expect(served.map((f) => f.id)).toEqual(
        [...liveState(simulator.world, simulator.world.now, 'v5')].map((f) => f.id),
      );
    } finally {
      simulator.world.setNow(new Date(start).toISOString());
    }
  });

  it('moves like NDW’s: each day adds signs under new UUIDs and removes some; a removed sign is served two weeks, then left out', () => {
    const DAY = 86_400_000;
    const world = simulator.world;
    const ids = (days: number) =>
      new Set([...liveState(world, world.now + days * DAY, 'v5')].map((f) => f.id));
    let added = 0;
    let removed = 0;
    let before = ids(-8);
    for (let day = -7; day <= 0; day++) {
      const now = ids(day);
      added += [...now].filter((id) => !before.has(id)).length;
      removed += [...before].filter((id) => !now.has(id)).length;
      before = now;
    }
    expect(added).toBeGreaterThan(0);
    expect(removed).toBeGreaterThan(0);
    // What a sign looks like while it is still served after its removal, and after.
    const today = [...liveState(world, world.now, 'v5')];
    const gone = today.find((f) => f.properties['removedOn'] !== undefined)!;
    expect(gone).toBeDefined();
    const removedOn = Date.parse(String(gone.properties['removedOn']));
    expect(world.now - removedOn).toBeLessThanOrEqual(15 * DAY);
    expect(ids((removedOn - world.now) / DAY + 16).has(gone.id)).toBe(false);
  });
});
