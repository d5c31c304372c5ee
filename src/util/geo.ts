/** Geometry helpers that need no spatial extension: RD New coordinates and point in polygon. */

export type Position = readonly [longitude: number, latitude: number];

/**
 * WGS84 -> RD New (EPSG:28992) with the published polynomial approximation
 * (Schreutelkamp and Strang van Hees), accurate to about a metre inside the Netherlands.
 */
export function wgs84ToRd(latitude: number, longitude: number): { x: number; y: number } {
  const dPhi = 0.36 * (latitude - 52.1551744);
  const dLam = 0.36 * (longitude - 5.38720621);
  const x =
    155000 +
    190094.945 * dLam +
    -11832.228 * dPhi * dLam +
    -114.221 * dPhi ** 2 * dLam +
    -32.391 * dLam ** 3 +
    -0.705 * dPhi +
    -2.34 * dPhi ** 3 * dLam +
    -0.608 * dPhi * dLam ** 3 +
    -0.008 * dLam ** 2 +
    0.148 * dPhi ** 2 * dLam ** 3;
  const y =
    463000 +
    309056.544 * dPhi +
    3638.893 * dLam ** 2 +
    73.077 * dPhi ** 2 +
    -157.984 * dPhi * dLam ** 2 +
    59.788 * dPhi ** 3 +
    0.433 * dLam +
    -6.439 * dPhi ** 2 * dLam ** 2 +
    -0.032 * dPhi * dLam +
    0.092 * dLam ** 4 +
    -0.054 * dPhi * dLam ** 4;
  return { x, y };
}

/** Even-odd ray casting against one closed ring of [longitude, latitude] positions. */
function insideRing(point: Position, ring: readonly Position[]): boolean {
  const [px, py] = point;
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i]!;
    const [xj, yj] = ring[j]!;
    if (yi > py !== yj > py && px < ((xj - xi) * (py - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** True when point lies inside the polygon's outer ring and outside all its holes. */
export function pointInPolygon(point: Position, rings: readonly (readonly Position[])[]): boolean {
  const [outer, ...holes] = rings;
  if (!outer || !insideRing(point, outer)) return false;
  return !holes.some((hole) => insideRing(point, hole));
}

function segmentsCross(a: Position, b: Position, c: Position, d: Position): boolean {
  const orient = (p: Position, q: Position, r: Position): number =>
    Math.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]));
  const o1 = orient(a, b, c);
  const o2 = orient(a, b, d);
  const o3 = orient(c, d, a);
  const o4 = orient(c, d, b);
  return o1 * o2 < 0 && o3 * o4 < 0;
}

/** True when two non-adjacent edges of a closed ring properly cross each other. */
function ringSelfIntersects(ring: readonly Position[]): boolean {
  const edges = ring.length - 1;
  for (let i = 0; i < edges; i++) {
    for (let j = i + 2; j < edges; j++) {
      if (i === 0 && j === edges - 1) continue;
      if (segmentsCross(ring[i]!, ring[i + 1]!, ring[j]!, ring[j + 1]!)) return true;
    }
  }
  return false;
}

export type PolygonProblem = { path: string; message: string };

/**
 * Checks that value is a GeoJSON Polygon (RFC 7946 3.1.6): linear rings of at least
 * four positions, closed, with finite coordinates, not self-intersecting.
 */
export function checkGeoJsonPolygon(value: unknown): PolygonProblem[] {
  const problems: PolygonProblem[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ path: '', message: 'must be a GeoJSON Polygon object' }];
  }
  const record = value as Record<string, unknown>;
  if (record['type'] !== 'Polygon') {
    problems.push({
      path: 'type',
      message: `must be "Polygon", got ${JSON.stringify(record['type'] ?? null)}`,
    });
    return problems;
  }
  const rings = record['coordinates'];
  if (!Array.isArray(rings) || rings.length === 0) {
    return [{ path: 'coordinates', message: 'must be a non-empty array of linear rings' }];
  }
  rings.forEach((ring: unknown, r) => {
    const path = `coordinates[${r}]`;
    if (!Array.isArray(ring) || ring.length < 4) {
      problems.push({ path, message: 'a linear ring needs at least 4 positions' });
      return;
    }
    const positions: Position[] = [];
    for (const [i, position] of (ring as unknown[]).entries()) {
      if (
        !Array.isArray(position) ||
        position.length < 2 ||
        !position.every((n) => typeof n === 'number' && Number.isFinite(n))
      ) {
        problems.push({ path: `${path}[${i}]`, message: 'must be [longitude, latitude] numbers' });
        return;
      }
      positions.push([position[0] as number, position[1] as number]);
    }
    const first = positions[0]!;
    const last = positions[positions.length - 1]!;
    if (first[0] !== last[0] || first[1] !== last[1]) {
      problems.push({ path, message: 'ring is not closed (first and last positions differ)' });
      return;
    }
    if (ringSelfIntersects(positions)) problems.push({ path, message: 'ring intersects itself' });
  });
  return problems;
}

/**
 * Why a map tile URL template cannot be used (undefined when it can): it must
 * be http(s) and name {z}, {x} and {y}.
 */
export function tileTemplateProblem(url: string): string | undefined {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url.replace(/[{}]/g, ''));
  } catch {
    parsed = undefined;
  }
  if (!parsed || !/^https?:$/.test(parsed.protocol))
    return `expected an http(s) URL template, got ${JSON.stringify(url)}`;
  const missing = ['{z}', '{x}', '{y}'].filter((p) => !url.includes(p));
  if (missing.length > 0) return `the URL template names no ${missing.join(', ')}`;
  return undefined;
}
