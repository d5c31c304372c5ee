import { describe, expect, it } from 'vitest';
import { BICYCLE_SOURCE } from '../helpers/bicycle.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 11, bicycle: { locations: 75 } });

const PIPELINE = `name: locations
${BICYCLE_SOURCE}steps:
  - { id: locations, kind: bicycle.locations, options: { backoff_ms: 1 } }
`;

describe('bicycle.locations', () => {
  it('lands the catalog: one row per location, flat, equal to the simulator', async () => {
    const dir = await testDir();
    const { output, summary, failure } = await runDefinition(
      dir,
      PIPELINE,
      {},
      { env: { ...simulator.env } },
    );
    expect(summary.status, JSON.stringify(failure?.message)).toBe('succeeded');
    const rows = await duck(
      `SELECT location_id, authority, name, aliases, license_category, bearing, location_type,
              equipment_type, epoch_ms(valid_from)::DOUBLE AS valid_from, epoch_ms(valid_until)::DOUBLE AS valid_until,
              longitude, latitude, properties ->> '$.authorityId' AS authority_id_raw
       FROM read_parquet('${output}/bicycle/locations/*.parquet') ORDER BY location_id`,
    );
    const truth = [...simulator.world.bicycle.locations].sort((a, b) =>
      a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
    );
    expect(rows.length).toBe(75);
    expect(rows.map((r) => ({ ...r, aliases: [...(r['aliases'] as string[])] }))).toEqual(
      truth.map((l) => ({
        location_id: l.id,
        authority: l.authority,
        name: l.name,
        aliases: l.aliases,
        license_category: l.licenseCategory,
        bearing: l.bearing,
        location_type: l.locationType,
        equipment_type: l.equipmentType,
        valid_from: l.validFrom,
        valid_until: l.validUntil ?? null,
        longitude: l.longitude,
        latitude: l.latitude,
        authority_id_raw: l.authorityId,
      })),
    );
  });
});
