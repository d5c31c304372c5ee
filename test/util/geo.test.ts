import { describe, expect, it } from 'vitest';
import { checkGeoJsonPolygon, pointInPolygon, wgs84ToRd } from '../../src/util/geo.js';

describe('wgs84ToRd', () => {
  it.each([
    // The RD origin (Amersfoort, Onze Lieve Vrouwetoren) and published reference points.
    ['Amersfoort', 52.1551744, 5.38720621, 155000, 463000],
    ['Dom tower, Utrecht', 52.09063, 5.12142, 136_700, 455_900],
    ['Martinitoren, Groningen', 53.21934, 6.56844, 233_900, 582_100],
  ])('maps %s to RD within tolerance', (_name, lat, lon, x, y) => {
    const rd = wgs84ToRd(lat, lon);
    const tolerance = x === 155000 ? 0.01 : 150;
    expect(Math.abs(rd.x - x)).toBeLessThan(tolerance);
    expect(Math.abs(rd.y - y)).toBeLessThan(tolerance);
  });
});

describe('pointInPolygon', () => {
  const square = [
    [
      [0, 0],
      [10, 0],
      [10, 10],
      [0, 10],
      [0, 0],
    ],
  ] as [number, number][][];
  const withHole = [
    ...square,
    [
      [4, 4],
      [6, 4],
      [6, 6],
      [4, 6],
      [4, 4],
    ],
  ] as [number, number][][];
  it.each([
    [[5, 5], square, true],
    [[11, 5], square, false],
    [[5, 5], withHole, false],
    [[2, 2], withHole, true],
  ] as const)('says %j in %j is %s', (point, rings, inside) => {
    expect(pointInPolygon(point, rings)).toBe(inside);
  });
});

describe('checkGeoJsonPolygon', () => {
  it.each([
    [
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      [],
    ],
    [{ type: 'Point', coordinates: [0, 0] }, ['type']],
    [{ type: 'Polygon', coordinates: [] }, ['coordinates']],
    [
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [0, 0],
          ],
        ],
      },
      ['coordinates[0]'],
    ],
    [
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 1],
            [0, 1],
          ],
        ],
      },
      ['coordinates[0]'],
    ],
    [
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            [1, 1],
            [1, 0],
            [0, 1],
            [0, 0],
          ],
        ],
      },
      ['coordinates[0]'],
    ],
    [
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            ['a', 0],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      ['coordinates[0][1]'],
    ],
    ['not an object', ['']],
  ])('checks %j', (value, paths) => {
    expect(checkGeoJsonPolygon(value).map((p) => p.path)).toEqual(paths);
  });
});
