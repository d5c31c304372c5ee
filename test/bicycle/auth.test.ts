import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../src/http/client.js';
import { TokenSource } from '../../src/sources/bicycle/auth.js';
import { BicycleClient } from '../../src/sources/bicycle/client.js';
import { useSimulator } from '../helpers/simulator.js';

// Tokens that live 2 s (renewed 0.5 s ahead), refresh tokens 5 s.
const simulator = await useSimulator({
  seed: 3,
  auth: {
    username: 'svc-road-etl-user',
    password: 'pw-9f8e7d6c5b',
    accessTokenSeconds: 2,
    refreshTokenSeconds: 5,
  },
  bicycle: { locations: 30 },
});
const http = new HttpClient({ retries: 1, backoffMs: 1 });
afterAll(() => http.close());

function credentials(overrides: Partial<Record<'username' | 'password', string>> = {}) {
  const env = simulator.env;
  return {
    authUrl: env.ROAD_ETL_AUTH_URL,
    clientId: env.ROAD_ETL_CLIENT_ID,
    username: 'svc-road-etl-user',
    password: 'pw-9f8e7d6c5b',
    ...overrides,
  };
}

const grants = () => ({ ...simulator.auth.counts });

describe('bicycle tokens', () => {
  it('shares one login among concurrent requests', async () => {
    const before = grants();
    const tokens = new TokenSource(http, credentials());
    const client = new BicycleClient(http, tokens, simulator.env.ROAD_ETL_BICYCLE_URL);
    const answers = await Promise.all(Array.from({ length: 8 }, () => client.locations()));
    expect(answers.every((a) => Array.isArray((a.value as { features: unknown[] }).features))).toBe(
      true,
    );
    expect(grants().passwordGrants - before.passwordGrants).toBe(1);
  });

  it('refreshes ahead of expiry, and logs in again once the refresh token has expired too', async () => {
    const before = grants();
    const tokens = new TokenSource(http, credentials());
    const client = new BicycleClient(http, tokens, simulator.env.ROAD_ETL_BICYCLE_URL);
    await client.locations();
    await sleep(1700); // past renewAt (2 s - 0.5 s)
    await client.locations();
    expect(grants().refreshGrants - before.refreshGrants).toBe(1);
    expect(grants().passwordGrants - before.passwordGrants).toBe(1);
    await sleep(5200); // the refresh token has expired as well
    await client.locations();
    expect(grants().passwordGrants - before.passwordGrants).toBe(2);
    // it knew the refresh token had expired: no refused refresh first
    expect(grants().rejected - before.rejected).toBe(0);
    expect(tokens.counts).toEqual({ logins: 2, refreshes: 1 });
  }, 15_000);

  it('gets a new token and retries once when the service answers 401', async () => {
    // A clock that stops: the source keeps believing in a token the service has expired.
    let behind = 0;
    const tokens = new TokenSource(http, credentials(), () => Date.now() - behind);
    const client = new BicycleClient(http, tokens, simulator.env.ROAD_ETL_BICYCLE_URL);
    await client.locations();
    await sleep(2100);
    behind = 2100;
    const before = simulator.requests.length;
    const answer = await client.locations();
    expect(Array.isArray((answer.value as { features: unknown[] }).features)).toBe(true);
    const statuses = simulator.requests
      .slice(before)
      .filter((r) => r.route === 'locations')
      .map((r) => r.status);
    expect(statuses).toEqual([401, 200]);
    expect(tokens.counts).toEqual({ logins: 1, refreshes: 1 });
  }, 15_000);

  it('fails a refused login with a clear error that holds no secret', async () => {
    const tokens = new TokenSource(http, credentials({ password: 'wrong-password-1234' }));
    const client = new BicycleClient(http, tokens, simulator.env.ROAD_ETL_BICYCLE_URL);
    const error = (await client.locations().catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/Login to the bicycle API refused: POST .* answered 401/);
    expect(error.message).toContain('ROAD_ETL_PASSWORD');
    expect(error.message).not.toContain('wrong-password-1234');
    expect(error.message).not.toContain('svc-road-etl-user');
  });
});
