/** v4's current state as CSV (its layout in ../shared/ndw/README.md): a feature a line. */
import type { LiveFeature } from './live.js';
import { csvField } from './payload.js';

export const LIVE_CSV_COLUMNS = [
  'id',
  'externalId',
  'validated',
  'validatedOn',
  'rvvCode',
  'blackCode',
  'zoneCode',
  'status',
  'textSigns',
  'latitude',
  'longitude',
  'rdX',
  'rdY',
  'placement',
  'side',
  'bearing',
  'nenTurningDirection',
  'fraction',
  'drivingDirection',
  'roadName',
  'roadType',
  'roadNumber',
  'roadSectionId',
  'nwbVersion',
  'countyName',
  'countyCode',
  'townName',
  'bgtCode',
  'imageUrl',
  'firstSeenOn',
  'lastSeenOn',
  'removedOn',
  'placedOn',
  'expectedPlacedOn',
  'expectedRemovedOn',
  'trafficOrderUrl',
] as const;

/** A v4 feature as a CSV line: textSigns as TYPE(text)(openingHours) joined by ";". */
export function liveCsvLine(
  feature: LiveFeature,
  rd: (lat: number, lon: number) => { x: number; y: number },
): string {
  const p = feature.properties;
  const [longitude, latitude] = feature.geometry.coordinates;
  const { x, y } = rd(latitude, longitude);
  const texts =
    (p['textSigns'] as { type: string; text?: string; openingHours?: string }[] | undefined) ?? [];
  const row: Record<string, unknown> = {
    ...p,
    id: feature.id,
    latitude,
    longitude,
    rdX: Math.round(x * 1000) / 1000,
    rdY: Math.round(y * 1000) / 1000,
    textSigns: texts.map((t) => `${t.type}(${t.text ?? ''})(${t.openingHours ?? ''})`).join(';'),
  };
  return LIVE_CSV_COLUMNS.map((c) => csvField(row[c])).join(',') + '\r\n';
}
