import { afterAll } from 'vitest';
import { BICYCLE_PATHS, SIGNS_PATHS } from '../../src/endpoints.js';
import {
  DEFAULT_SIMULATOR_OPTIONS,
  Simulator,
  type SimulatorInput,
} from '../../src/simulator/index.js';

/**
 * The sign feed of the tests' simulators: three months up to the simulator's
 * feed end, not its five years. The events are the same in number; a run lands
 * them in at most 92 day files instead of hundreds (1,169 for 800 signs),
 * which were most of what a test of the signs pipelines cost (writing,
 * copying, hashing and reading those files). A test whose setting depends on
 * the long feed asks for it (LONG_FEED); one that sets `feedStart` keeps it.
 */
const TEST_FEED: SimulatorInput = { signs: { feedStart: '2026-08-15T00:00:00.000Z' } };

/** The simulator's own five-year feed. */
export const LONG_FEED: SimulatorInput = {
  signs: { feedStart: DEFAULT_SIMULATOR_OPTIONS.signs.feedStart },
};

/**
 * Starts a simulator on a free port for this test file (on the tests' three-month
 * feed unless the inputs say otherwise); closed after the file's tests.
 */
export async function useSimulator(...inputs: SimulatorInput[]): Promise<Simulator> {
  const simulator = await Simulator.start(TEST_FEED, ...inputs);
  afterAll(() => simulator.close());
  return simulator;
}

export const EVENTS_PATH = SIGNS_PATHS.events;
export const CURRENT_STATE_PATH = SIGNS_PATHS.currentState;
export const BICYCLE_PATH = BICYCLE_PATHS.measurements;
export const LOCATIONS_PATH = BICYCLE_PATHS.locations;

/** Obtains an access token with the password grant. */
export async function login(simulator: Simulator): Promise<string> {
  const env = simulator.env;
  const response = await fetch(env.ROAD_ETL_AUTH_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: env.ROAD_ETL_CLIENT_ID,
      username: env.ROAD_ETL_USERNAME,
      password: env.ROAD_ETL_PASSWORD,
    }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** POSTs JSON to a bicycle endpoint with a bearer token. */
export async function postBicycle(
  simulator: Simulator,
  path: string,
  token: string,
  body: unknown,
): Promise<{ status: number; json: unknown; text: string }> {
  const response = await fetch(simulator.env.ROAD_ETL_BICYCLE_URL + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

/** GETs the events endpoint with the given query. */
export async function getEvents(
  simulator: Simulator,
  query: Record<string, string>,
): Promise<{ status: number; json: unknown }> {
  const url = new URL(simulator.env.ROAD_ETL_SIGNS_URL + EVENTS_PATH);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const response = await fetch(url);
  return { status: response.status, json: await response.json() };
}
