/**
 * Today's traffic-sign API (v4, v5): the current state of every sign, typed.
 * A feature (GeoJSON, or a v4 CSV row made into one) becomes one row: the
 * sign's UUID, its position (WGS84, from the geometry), every property of
 * NDW's schemas in snake_case and typed (dates as DATE, numbers as numbers,
 * text signs, supplementary signs and conditions as nested values), and the
 * properties kept whole as JSON, so that a property the schemas do not know is
 * kept too. A feature without a UUID, a position or an RVV code cannot be a
 * row: it goes to the quarantine with the reason.
 */
import { readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { partitionFolder } from '../../duckdb/partitions.js';
import { quotedIdentifier, quotedString } from '../../duckdb/database.js';
import { GEOMETRY_COLUMN, pointSql } from '../../duckdb/geometry.js';
import { misEncodedIssue } from '../../duckdb/text-checks.js';

/** Every download of the current state: one snapshot partition per download. */
export const LIVE_DATASET = join('signs', 'live_snapshots');

/** A snapshot folder as earlier versions named it: snapshot=20261115T060000123Z. */
const OLD_SNAPSHOT = /^snapshot=(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/;

/**
 * Renames the snapshot folders of an earlier version to today's names (the
 * moment in ISO 8601, which readers parse, and which sorts with the new ones);
 * resolves to how many. Each rename is atomic; a run cut short leaves the rest
 * to the next.
 */
export async function renameOldSnapshots(output: string): Promise<number> {
  const folder = join(output, LIVE_DATASET);
  let renamed = 0;
  for (const name of await readdir(folder).catch(() => [])) {
    const m = OLD_SNAPSHOT.exec(name);
    if (!m) continue;
    const moment = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7]}Z`;
    await rename(join(folder, name), join(folder, partitionFolder('snapshot', moment)));
    renamed++;
  }
  return renamed;
}
export const LIVE_QUARANTINE_DATASET = join('signs', 'live_quarantine');

type Scalar = 'VARCHAR' | 'DATE' | 'INTEGER' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'VARCHAR[]';

/** Scalar properties: upstream name -> column type, in column order. */
const SCALARS: readonly (readonly [string, Scalar])[] = [
  ['rvvCode', 'VARCHAR'],
  ['countyCode', 'VARCHAR'],
  ['countyName', 'VARCHAR'],
  ['status', 'VARCHAR'],
  ['externalId', 'VARCHAR'],
  ['validated', 'VARCHAR'],
  ['validatedOn', 'DATE'],
  ['blackCode', 'VARCHAR'],
  ['zoneCode', 'VARCHAR'],
  ['placement', 'VARCHAR'],
  ['side', 'VARCHAR'],
  ['bearing', 'INTEGER'],
  ['nenTurningDirection', 'VARCHAR'],
  ['fraction', 'DOUBLE'],
  ['drivingDirection', 'VARCHAR'],
  ['roadName', 'VARCHAR'],
  ['roadType', 'VARCHAR'],
  ['roadNumber', 'VARCHAR'],
  ['roadSectionId', 'BIGINT'],
  ['nwbVersion', 'DATE'],
  ['townName', 'VARCHAR'],
  ['bgtCode', 'VARCHAR'],
  ['imageUrl', 'VARCHAR'],
  ['firstSeenOn', 'DATE'],
  ['lastSeenOn', 'DATE'],
  ['removedOn', 'DATE'],
  ['placedOn', 'DATE'],
  ['expectedPlacedOn', 'DATE'],
  ['expectedRemovedOn', 'DATE'],
  ['trafficOrderUrl', 'VARCHAR'],
  ['privateProperty', 'BOOLEAN'],
  ['missingRoadSection', 'BOOLEAN'],
  ['registeredOn', 'DATE'],
  ['lastModifiedOn', 'DATE'],
  ['trafficOrderId', 'VARCHAR'],
  ['ownerType', 'VARCHAR'],
  ['ownerCode', 'VARCHAR'],
];

const REFERENCE = `STRUCT("system" VARCHAR, id VARCHAR)`;
const CONDITION = `STRUCT(vehicle_type VARCHAR[], category VARCHAR[], time_validity VARCHAR, emission_class INTEGER, fuel_type VARCHAR, axle_weight DOUBLE, height DOUBLE, length DOUBLE, weight DOUBLE, width DOUBLE)`;

/** Nested properties: upstream name -> column type and how the JSON value `j` becomes it. */
const NESTED: readonly (readonly [string, string, (j: string) => string])[] = [
  [
    'textSigns',
    'STRUCT("type" VARCHAR, text VARCHAR, opening_hours VARCHAR)[]',
    (j) =>
      `list_transform(json_transform(${j}, '[{"type":"VARCHAR","text":"VARCHAR","openingHours":"VARCHAR"}]'),
        s -> {'type': s."type", 'text': s.text, 'opening_hours': s.openingHours})`,
  ],
  [
    'supplementarySigns',
    `STRUCT(sign_code VARCHAR, text VARCHAR, opening_hours VARCHAR, external_references ${REFERENCE}[], "index" INTEGER)[]`,
    (j) =>
      `list_transform(json_transform(${j}, '[{"signCode":"VARCHAR","text":"VARCHAR","openingHours":"VARCHAR","externalReferences":[{"system":"VARCHAR","id":"VARCHAR"}],"index":"INTEGER"}]'),
        s -> {'sign_code': s.signCode, 'text': s.text, 'opening_hours': s.openingHours, 'external_references': s.externalReferences, 'index': s."index"})`,
  ],
  [
    'externalReferences',
    `${REFERENCE}[]`,
    (j) => `json_transform(${j}, '[{"system":"VARCHAR","id":"VARCHAR"}]')`,
  ],
  [
    'conditions',
    `STRUCT(restrictions ${CONDITION}, exemptions ${CONDITION}[])`,
    (j) => {
      const shape = `{"vehicleType":["VARCHAR"],"category":["VARCHAR"],"timeValidity":"VARCHAR","emissionClass":"INTEGER","fuelType":"VARCHAR","axleWeight":"DOUBLE","height":"DOUBLE","length":"DOUBLE","weight":"DOUBLE","width":"DOUBLE"}`;
      const rename = (c: string): string =>
        `{'vehicle_type': ${c}.vehicleType, 'category': ${c}.category, 'time_validity': ${c}.timeValidity, 'emission_class': ${c}.emissionClass, 'fuel_type': ${c}.fuelType, 'axle_weight': ${c}.axleWeight, 'height': ${c}.height, 'length': ${c}.length, 'weight': ${c}.weight, 'width': ${c}.width}`;
      // A one-element list binds the transformed value to a name without a subquery
      // (a correlated subquery would make DuckDB join, and hold, the whole input).
      return `list_transform([json_transform(${j}, '{"restrictions":${shape},"exemptions":[${shape}]}')],
        c -> {'restrictions': CASE WHEN c.restrictions IS NOT NULL THEN ${rename('c.restrictions')} END, 'exemptions': list_transform(c.exemptions, e -> ${rename('e')})})[1]`;
    },
  ],
  ['comments', 'VARCHAR[]', (j) => `json_transform(${j}, '["VARCHAR"]')`],
];

/** camelCase -> snake_case. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Columns of a snapshot file (the partition column `snapshot` apart), with their types. */
export const LIVE_COLUMNS: readonly (readonly [string, string])[] = [
  ['sign_id', 'UUID'],
  ['longitude', 'DOUBLE'],
  ['latitude', 'DOUBLE'],
  ...SCALARS.map(([name, type]) => [snakeCase(name), type] as const),
  ...NESTED.map(([name, type]) => [snakeCase(name), type] as const),
  ['properties', 'JSON'],
  ['typing_issues', 'VARCHAR[]'],
  ['api', 'VARCHAR'],
  ['downloaded_at', 'TIMESTAMPTZ'],
  [GEOMETRY_COLUMN, 'GEOMETRY'],
];

/** The geometry of a typed live row: its position as a WGS 84 Point. */
export const LIVE_GEOMETRY = pointSql('longitude', 'latitude');

/** Upstream names of every property a column holds (for the schema test and the docs). */
export const LIVE_PROPERTIES: readonly string[] = [
  ...SCALARS.map(([name]) => name),
  ...NESTED.map(([name]) => name),
];

function typedScalar(type: Scalar, text: string): string {
  if (type === 'VARCHAR') return `nullif(${text}, '')`;
  if (type === 'VARCHAR[]') return `CAST(${text} AS VARCHAR[])`;
  return `TRY_CAST(nullif(trim(${text}), '') AS ${type})`;
}

/**
 * A SELECT over `features` (a subquery with a JSON column `f`, one feature
 * each) giving the typed columns and `_problem`: why the feature cannot be a
 * row, or NULL.
 */
export function liveTypingSelect(features: string, api: string, downloadedAt: string): string {
  const scalarPaths = SCALARS.map(([name]) => quotedString(`$.properties.${name}`));
  const nestedPaths = NESTED.map(([name]) => quotedString(`$.properties.${name}`));
  const scalars = SCALARS.map(([name, type], i) => {
    const text = `_s[${i + 1}]`;
    return `${typedScalar(type, text)} AS ${quotedIdentifier(snakeCase(name))}`;
  });
  const nested = NESTED.map(([name, , typed], i) => {
    const json = `_n[${i + 1}]`;
    return `CASE WHEN ${json} IS NULL OR json_type(${json}) = 'NULL' THEN NULL ELSE ${typed(json)} END AS ${quotedIdentifier(snakeCase(name))}`;
  });
  // A typed (not text) value that is NULL although text was there could not be typed.
  const issues = SCALARS.flatMap(([name, type], i) =>
    type === 'VARCHAR[]'
      ? []
      : type === 'VARCHAR'
        ? // The names (road, municipality, town) are where the diacritics are.
          name.endsWith('Name')
          ? [misEncodedIssue(snakeCase(name), `_s[${i + 1}]`)]
          : []
        : [
            `CASE WHEN ${quotedIdentifier(snakeCase(name))} IS NULL AND nullif(trim(_s[${i + 1}]), '') IS NOT NULL THEN ${quotedString(`${snakeCase(name)}: not typed`)} END`,
          ],
  );
  return `SELECT
    TRY_CAST(f ->> '$.id' AS UUID) AS sign_id,
    TRY_CAST(_g[1] AS DOUBLE) AS longitude,
    TRY_CAST(_g[2] AS DOUBLE) AS latitude,
    ${scalars.join(',\n    ')},
    ${nested.join(',\n    ')},
    coalesce(f -> '$.properties', '{}'::JSON) AS properties,
    list_filter([${issues.join(', ')}], x -> x IS NOT NULL) AS typing_issues,
    ${quotedString(api)} AS api,
    ${downloadedAt} AS downloaded_at,
    ${pointSql('TRY_CAST(_g[1] AS DOUBLE)', 'TRY_CAST(_g[2] AS DOUBLE)')} AS ${GEOMETRY_COLUMN},
    CASE
      WHEN TRY_CAST(f ->> '$.id' AS UUID) IS NULL THEN 'id is not a UUID: ' || coalesce(f ->> '$.id', 'missing')
      WHEN TRY_CAST(_g[1] AS DOUBLE) IS NULL OR TRY_CAST(_g[2] AS DOUBLE) IS NULL THEN 'geometry is not a point with two coordinates'
      WHEN nullif(_s[1], '') IS NULL THEN 'rvvCode is missing'
    END AS _problem,
    f::VARCHAR AS raw_feature
  FROM (
    SELECT f,
      json_extract_string(f, [${scalarPaths.join(', ')}]) AS _s,
      json_extract(f, [${nestedPaths.join(', ')}]) AS _n,
      json_extract_string(f, ['$.geometry.coordinates[0]', '$.geometry.coordinates[1]']) AS _g
    FROM ${features}
  )`;
}

/** The features of a file of GeoJSON features, one per line. */
export function featureLines(file: string): string {
  return `(SELECT json AS f FROM read_json_objects(${quotedString(file)}, format = 'newline_delimited'))`;
}

/**
 * The rows of a v4 CSV download as features: the id, a Point of longitude and
 * latitude, and the other columns as properties (text, as the CSV has them;
 * a column the schemas do not know is kept too); textSigns,
 * `TYPE(text)(openingHours)` joined by ";", as a list of objects. Row by row,
 * without joins, so that memory does not grow with the file.
 */
export function csvFeatures(file: string): string {
  const textSigns = `list_transform(
      list_transform(list_filter(string_split(coalesce(r."textSigns", ''), ';'), t -> t <> ''),
        t -> regexp_extract(t, '^([^(]*)\\((.*)\\)\\((.*)\\)$', ['t', 'x', 'h'])),
      m -> {'type': m.t, 'text': nullif(m.x, ''), 'openingHours': nullif(m.h, '')})`;
  return `(SELECT json_object('type', 'Feature', 'id', r.id,
      'geometry', json_object('type', 'Point', 'coordinates', json_array(TRY_CAST(r.longitude AS DOUBLE), TRY_CAST(r.latitude AS DOUBLE))),
      'properties', json_merge_patch(to_json(r), json_object('id', NULL, 'latitude', NULL, 'longitude', NULL, 'textSigns', to_json(${textSigns})))) AS f
    FROM read_csv(${quotedString(file)}, all_varchar = true, header = true, strict_mode = true) AS r)`;
}
