/**
 * The maps' background without the network: the outlines of the Netherlands
 * and its neighbours, from Natural Earth's 1:10m countries (the world-atlas
 * package, TopoJSON, decoded by topojson-client), rounded to about 100 m.
 * About 70 KB in the page.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Feature, FeatureCollection, Geometry } from 'geojson';
import type { GeometryCollection, Topology } from 'topojson-specification';

const require = createRequire(import.meta.url);
const { feature } = require('topojson-client') as typeof import('topojson-client');

/** The countries drawn: those a Dutch map shows. */
const COUNTRIES = ['Netherlands', 'Belgium', 'Germany', 'Luxembourg'];

type Position = number[];
type Nested = Position | Nested[];

function rounded(coordinates: Nested): Nested {
  if (typeof coordinates[0] === 'number')
    return (coordinates as Position).map((c) => Math.round(c * 1000) / 1000);
  return (coordinates as Nested[]).map(rounded);
}

let cached: Promise<FeatureCollection> | undefined;

export function countryOutlines(): Promise<FeatureCollection> {
  cached ??= (async () => {
    const topology = JSON.parse(
      await readFile(require.resolve('world-atlas/countries-10m.json'), 'utf8'),
    ) as Topology<{ countries: GeometryCollection<{ name: string }> }>;
    const countries = feature(topology, topology.objects.countries);
    const features: Feature[] = countries.features
      .filter((f) => COUNTRIES.includes(f.properties.name))
      .map((f) => {
        const geometry = f.geometry as Geometry & { coordinates: Nested };
        return {
          type: 'Feature',
          properties: { name: f.properties.name },
          geometry: { ...geometry, coordinates: rounded(geometry.coordinates) } as Geometry,
        };
      });
    return { type: 'FeatureCollection', features };
  })();
  cached.catch(() => (cached = undefined));
  return cached;
}
