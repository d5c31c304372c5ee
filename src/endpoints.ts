/**
 * NDW's endpoint paths, below each service's base URL: one list for the
 * clients (sources/), the simulator and the tests.
 */

/** The bicycle data (4.1-4.4): measurements by ids, by prefixes, by polygon; the catalog. */
export const BICYCLE_PATHS = {
  measurements: '/api/explore/bicycle-data',
  prefix: '/api/explore/bicycle-data/prefix',
  geo: '/api/explore/bicycle-data/geo',
  locations: '/api/gis/bicycle-data/complete',
} as const;

const SIGNS = '/api/rest/static-road-data/traffic-signs';

/** The traffic-sign API: the v1 event feed (4.5) and download (4.6); today's v4 and v5 current state. */
export const SIGNS_PATHS = {
  events: `${SIGNS}/v1/events`,
  currentState: `${SIGNS}/v1/current-state`,
  live: { v4: `${SIGNS}/v4/current-state`, v5: `${SIGNS}/v5/current-state` },
} as const;

/** NDW's Keycloak token endpoint (below its host). */
export const TOKEN_PATH = '/auth/realms/ndw/protocol/openid-connect/token';
