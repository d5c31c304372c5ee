import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LOCATIONS_PATH, login, useSimulator } from '../helpers/simulator.js';

const simulator = await useSimulator({ auth: { accessTokenSeconds: 1, refreshTokenSeconds: 2 } });
const env = simulator.env;

async function token(
  form: Record<string, string>,
  contentType = 'application/x-www-form-urlencoded',
) {
  const response = await fetch(env.ROAD_ETL_AUTH_URL, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: contentType.includes('json') ? JSON.stringify(form) : new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function locations(accessToken: string | undefined) {
  const headers: Record<string, string> = accessToken
    ? { authorization: `Bearer ${accessToken}` }
    : {};
  return fetch(env.ROAD_ETL_BICYCLE_URL + LOCATIONS_PATH, { headers });
}

const password = {
  grant_type: 'password',
  client_id: 'road-etl',
  username: 'demo',
  password: 'demo',
};

describe('simulator token endpoint', () => {
  it('issues a Keycloak-shaped token answer for the password grant', async () => {
    const { status, body } = await token(password);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(
      [
        'access_token',
        'expires_in',
        'not-before-policy',
        'refresh_expires_in',
        'refresh_token',
        'scope',
        'session_state',
        'token_type',
      ].sort(),
    );
    expect(body).toMatchObject({
      expires_in: 1,
      refresh_expires_in: 2,
      token_type: 'Bearer',
      'not-before-policy': 0,
      scope: 'profile email',
    });
    expect(body['access_token']).not.toEqual(body['refresh_token']);
  });

  it.each([
    ['a wrong password', { ...password, password: 'nope' }, 401, 'invalid_grant'],
    ['an unknown user', { ...password, username: 'someone' }, 401, 'invalid_grant'],
    [
      'no client_id',
      { grant_type: 'password', username: 'demo', password: 'demo' },
      401,
      'invalid_client',
    ],
    [
      'no grant_type',
      { client_id: 'x', username: 'demo', password: 'demo' },
      400,
      'invalid_request',
    ],
    [
      'an unknown grant_type',
      { ...password, grant_type: 'client_credentials' },
      400,
      'unsupported_grant_type',
    ],
    [
      'an unknown refresh token',
      { grant_type: 'refresh_token', client_id: 'x', refresh_token: 'abc' },
      401,
      'invalid_grant',
    ],
  ])('refuses %s with %i and error %s', async (_case, form, status, error) => {
    const answer = await token(form);
    expect(answer.status).toBe(status);
    expect(answer.body['error']).toBe(error);
    expect(typeof answer.body['error_description']).toBe('string');
  });

  it('refuses a JSON body: the endpoint is form-encoded', async () => {
    expect((await token(password, 'application/json')).status).toBe(400);
  });

  it('refreshes with the refresh token, and the new access token works', async () => {
    const first = await token(password);
    const refreshed = await token({
      grant_type: 'refresh_token',
      client_id: 'road-etl',
      refresh_token: String(first.body['refresh_token']),
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body['access_token']).not.toEqual(first.body['access_token']);
    expect((await locations(String(refreshed.body['access_token']))).status).toBe(200);
  });

  it('lets the access token expire after expires_in, and the refresh token after refresh_expires_in', async () => {
    const first = await token(password);
    expect((await locations(String(first.body['access_token']))).status).toBe(200);
    await sleep(1100);
    const expired = await locations(String(first.body['access_token']));
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toContain('Bearer');
    await sleep(1000);
    const refresh = await token({
      grant_type: 'refresh_token',
      client_id: 'road-etl',
      refresh_token: String(first.body['refresh_token']),
    });
    expect(refresh.status).toBe(401);
    expect(refresh.body['error']).toBe('invalid_grant');
  });

  it('answers 401 to bicycle requests without a token or with a made-up one', async () => {
    expect((await locations(undefined)).status).toBe(401);
    expect((await locations('made.up.token')).status).toBe(401);
    expect((await locations(await login(simulator))).status).toBe(200);
  });
});
