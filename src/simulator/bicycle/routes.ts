/** The bicycle data's endpoints: the token (Keycloak), the catalog, the measurements (4.1-4.4). */
import { checkGeoJsonPolygon, pointInPolygon, type Position } from '../../util/geo.js';
import { DAY_MS, parseSecondTimestamp } from '../../util/time.js';
import { BadRequest, jsonArray, refuse, sendJson, stream } from '../http.js';
import type { RouteRequest } from '../routes.js';
import type { BicycleLocation } from './world.js';

export type MeasurementsRoute = 'bicycle-data' | 'bicycle-data/prefix' | 'bicycle-data/geo';

/** The password grant; answers as Keycloak does. */
export function token({ req, res, body, truncate, auth }: RouteRequest): void {
  if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    sendJson(res, 400, {
      error: 'invalid_request',
      error_description: 'Content-Type must be application/x-www-form-urlencoded',
    });
    return;
  }
  const answer = auth.handle(new URLSearchParams(body.toString('utf8')));
  res.setHeader('Cache-Control', 'no-store');
  sendJson(res, answer.status, answer.body, truncate);
}

/** Whether the request carries a valid token; answers 401 when not. */
export function authorized({ req, res, url, auth }: RouteRequest): boolean {
  if (auth.authorizes(req.headers.authorization)) return true;
  res.setHeader('WWW-Authenticate', 'Bearer realm="ndw", error="invalid_token"');
  sendJson(res, 401, {
    error: 'invalid_token',
    error_description: 'Token missing, invalid or expired',
    path: url.pathname,
  });
  return false;
}

export function locations(request: RouteRequest): void {
  if (!authorized(request)) return;
  sendJson(request.res, 200, request.world.bicycle.featureCollection(), request.truncate);
}

export function measurements(route: MeasurementsRoute, request: RouteRequest): void {
  if (!authorized(request)) return;
  const { res, url, world, options, truncate } = request;
  let asked: { start: number; end: number; locations: BicycleLocation[] };
  try {
    asked = measurementRequest(route, request);
  } catch (error) {
    if (!(error instanceof BadRequest)) throw error;
    refuse(res, url, { status: 400, message: error.message });
    return;
  }
  const { start, end } = asked;
  const until = options.bicycle.endInclusive ? end + 1 : end;
  const rows = world.bicycle.rows(asked.locations, start, until, world.now);
  if (truncate) {
    sendJson(res, 200, [...rows], true);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  void stream(res, jsonArray(rows));
}

/** The JSON object of a measurements request, checked as the service does. */
function requestFields({ req, body }: RouteRequest): Record<string, unknown> {
  if (!(req.headers['content-type'] ?? '').includes('application/json')) {
    throw new BadRequest(
      `Content-Type '${req.headers['content-type'] ?? ''}' is not supported, use application/json`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new BadRequest(`JSON parse error: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest('Request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function timeField(fields: Record<string, unknown>, name: string): number {
  const value = fields[name];
  if (value === undefined || value === null)
    throw new BadRequest(`Required field '${name}' is missing`);
  const ms = typeof value === 'string' ? parseSecondTimestamp(value) : undefined;
  if (ms === undefined) {
    throw new BadRequest(
      `Field '${name}' must be a timestamp in the format YYYY-MM-DDTHH:mm:ssZ, got ${JSON.stringify(value)}`,
    );
  }
  return ms;
}

function measurementRequest(
  route: MeasurementsRoute,
  request: RouteRequest,
): { start: number; end: number; locations: BicycleLocation[] } {
  const fields = requestFields(request);
  const start = timeField(fields, 'startTime');
  const end = timeField(fields, 'endTime');
  if (end <= start) throw new BadRequest('endTime must be after startTime');
  const { bicycle } = request.options;
  const selected = selectedLocations(route, fields, request);
  if (selected.count > bicycle.maxLocations) {
    throw new BadRequest(`Too many locations requested (${selected.count})`);
  }
  if (end - start > bicycle.maxPeriodDays * DAY_MS) {
    throw new BadRequest('The requested period is too long');
  }
  return { start, end, locations: selected.locations };
}

/** The locations a request names (by ids, prefixes or polygon), and how many it names. */
function selectedLocations(
  route: MeasurementsRoute,
  fields: Record<string, unknown>,
  { world }: RouteRequest,
): { locations: BicycleLocation[]; count: number } {
  const catalog = world.bicycle;
  if (route === 'bicycle-data') {
    const ids = new Set(stringList(fields, 'locations'));
    const locations = [...ids]
      .map((id) => catalog.byId(id))
      .filter((l): l is BicycleLocation => l !== undefined);
    return { locations, count: ids.size };
  }
  if (route === 'bicycle-data/prefix') {
    const prefixes = stringList(fields, 'prefixes');
    const short = prefixes.find((p) => p.length < 3);
    if (short !== undefined)
      throw new BadRequest(`Invalid prefix '${short}': a prefix has at least 3 characters`);
    for (const prefix of prefixes) {
      if (!catalog.locations.some((l) => l.id.startsWith(prefix))) {
        throw new BadRequest(`Invalid prefix '${prefix}': no locations exist for it`);
      }
    }
    const locations = catalog.locations.filter((l) => prefixes.some((p) => l.id.startsWith(p)));
    return { locations, count: locations.length };
  }
  const polygon = fields['locationPolygoon'];
  if (polygon === undefined) throw new BadRequest("Required field 'locationPolygoon' is missing");
  const problems = checkGeoJsonPolygon(polygon);
  if (problems.length > 0) {
    const first = problems[0]!;
    throw new BadRequest(
      `Invalid polygon: locationPolygoon${first.path ? '.' + first.path : ''} ${first.message}`,
    );
  }
  const rings = (polygon as { coordinates: Position[][] }).coordinates;
  const locations = catalog.locations.filter((l) =>
    pointInPolygon([l.longitude, l.latitude], rings),
  );
  if (locations.length === 0) throw new BadRequest('Invalid polygon: no locations exist within it');
  return { locations, count: locations.length };
}

function stringList(fields: Record<string, unknown>, name: string): string[] {
  const value = fields[name];
  if (value === undefined || value === null)
    throw new BadRequest(`Required field '${name}' is missing`);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '')) {
    throw new BadRequest(`Field '${name}' must be an array of non-empty strings`);
  }
  if (value.length === 0) throw new BadRequest(`Field '${name}' must not be empty`);
  return value as string[];
}
