/** v5's machine-readable conditions of a simulated sign, and the opening hours both versions give. */
import { choose } from '../../util/hash.js';

/** The properties without the absent ones: the newer API leaves a null field out. */
export function present(properties: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== undefined));
}

export const OPENING_HOURS: Record<string, string> = { 'Ma t/m vr 7-19 h': 'Mo-Fr 07:00-19:00' };
/** The vehicle types of NDW's OpenAPI file (ConditionPropertiesDtoV5). */
const VEHICLES = [
  'pedestrian',
  'rider',
  'bicycle',
  'moped',
  'microcar',
  'agriculturalVehicle',
  'car',
  'truck',
  'bus',
  'motorcycle',
  'caravan',
  'trailer',
  'deliveryVan',
  'tram',
  'taxi',
  'all',
  'unknown',
] as const;

/**
 * v5's machine-readable conditions: every vehicle type of NDW's enum, now and
 * then two, and rarely one it may add later (clients are told to expect them);
 * the opening hours of the text sign as OSM time validity; a category and a
 * maximum now and then.
 */
export function conditions({
  h,
  seed,
  sign,
  texts,
}: {
  h: (k: number) => number;
  seed: number;
  sign: number;
  texts: readonly string[];
}): Record<string, unknown> {
  return {
    restrictions: present({
      vehicleType: [
        choose(VEHICLES, seed, sign, 16),
        ...(h(18) % 6 === 0 ? [choose(VEHICLES, seed, sign, 19)] : []),
        ...(h(20) % 40 === 0 ? ['hoverboard'] : []),
      ].filter((v, i, all) => all.indexOf(v) === i),
      category: h(21) % 9 === 0 ? ['loading'] : undefined,
      timeValidity: texts.map((t) => OPENING_HOURS[t]).find((v) => v !== undefined),
      weight: h(22) % 11 === 0 ? 3.5 : undefined,
      height: h(23) % 13 === 0 ? 2.4 : undefined,
    }),
    exemptions: [
      ...(texts.includes('Uitgezonderd fietsers') ? [{ vehicleType: ['bicycle'] }] : []),
      ...(h(24) % 10 === 0
        ? [
            {
              vehicleType: ['deliveryVan', 'truck'],
              category: ['permit'],
              timeValidity: 'Mo-Sa 06:00-11:00',
            },
          ]
        : []),
    ],
  };
}
