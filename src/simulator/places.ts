/** Municipalities (town codes as the CBS writes them) with a rough centre, for realistic spread. */
export interface Town {
  code: string;
  name: string;
  latitude: number;
  longitude: number;
}

export const TOWNS: readonly Town[] = [
  { code: 'GM0363', name: 'Amsterdam', latitude: 52.3676, longitude: 4.9041 },
  { code: 'GM0599', name: 'Rotterdam', latitude: 51.9244, longitude: 4.4777 },
  { code: 'GM0518', name: "'s-Gravenhage", latitude: 52.0705, longitude: 4.3007 },
  { code: 'GM0344', name: 'Utrecht', latitude: 52.0907, longitude: 5.1214 },
  { code: 'GM0772', name: 'Eindhoven', latitude: 51.4416, longitude: 5.4697 },
  { code: 'GM0014', name: 'Groningen', latitude: 53.2194, longitude: 6.5665 },
  { code: 'GM0855', name: 'Tilburg', latitude: 51.5555, longitude: 5.0913 },
  { code: 'GM0034', name: 'Almere', latitude: 52.3508, longitude: 5.2647 },
  { code: 'GM0758', name: 'Breda', latitude: 51.5719, longitude: 4.7683 },
  { code: 'GM0268', name: 'Nijmegen', latitude: 51.8126, longitude: 5.8372 },
  { code: 'GM0193', name: 'Zwolle', latitude: 52.5168, longitude: 6.083 },
  { code: 'GM0080', name: 'Leeuwarden', latitude: 53.2012, longitude: 5.7999 },
  { code: 'GM0935', name: 'Maastricht', latitude: 50.8514, longitude: 5.691 },
  { code: 'GM0153', name: 'Enschede', latitude: 52.2215, longitude: 6.8937 },
  { code: 'GM0200', name: 'Apeldoorn', latitude: 52.2112, longitude: 5.9699 },
  { code: 'GM0392', name: 'Haarlem', latitude: 52.3874, longitude: 4.6462 },
  { code: 'GM0202', name: 'Arnhem', latitude: 51.9851, longitude: 5.8987 },
  { code: 'GM0546', name: 'Leiden', latitude: 52.1601, longitude: 4.497 },
  { code: 'GM0796', name: "'s-Hertogenbosch", latitude: 51.6978, longitude: 5.3037 },
  { code: 'GM0106', name: 'Assen', latitude: 52.9925, longitude: 6.5649 },
  { code: 'GM0439', name: 'Purmerend', latitude: 52.5055, longitude: 4.9597 },
  { code: 'GM0503', name: 'Delft', latitude: 52.0116, longitude: 4.3571 },
  { code: 'GM0228', name: 'Ede', latitude: 52.0402, longitude: 5.6649 },
  { code: 'GM0687', name: 'Middelburg', latitude: 51.4988, longitude: 3.6136 },
];

/** Street names with the diacritics that the real feed sometimes mis-encodes. */
export const STREETS: readonly string[] = [
  'Stationsweg',
  'Curaçaostraat',
  'Kerkstraat',
  'Rijksstraatweg',
  'Burgemeester Röellstraat',
  'Dorpsstraat',
  'Cruquiusweg',
  'Hoogstraat',
  'Scheveningseweg',
  'Prinses Beatrixlaan',
  'Noord-Brabantlaan',
  'Wilhelminaplein',
  'Église-Wallonnestraat',
  'Julianalaan',
  'Lange Voorhout',
  'Kanaalweg',
];

/** Text of the real feed as it sometimes arrives: UTF-8 bytes read as Latin-1. */
export function misEncode(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}
