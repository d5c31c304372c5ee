/**
 * Today's traffic-sign API (v4, v5): the current state of every sign, typed.
 * A feature (GeoJSON, or a v4 CSV row made into one) becomes one row
 * (sql/live_typing.sql): the
 * sign's UUID, its position (WGS84, from the geometry), every property of
 * NDW's schemas in snake_case and typed (dates as DATE, numbers as numbers,
 * text signs, supplementary signs and conditions as nested values), and the
 * properties as served, kept whole as JSON where the typed columns cannot hold
 * them all (live-members.ts). A feature without a UUID, a position or an RVV
 * code cannot be a row: it goes to the quarantine with the reason.
 */
import { join } from 'node:path';
import { partitionFolder } from '../../duckdb/partitions.js';
import { quotedIdentifier } from '../../duckdb/database.js';
import { GEOMETRY_COLUMN } from '../../duckdb/geometry.js';

/**
 * Every download of the current state: one file per download, in the partition
 * of its UTC date (`snapshot_date=YYYY-MM-DD`, which every reader types as a
 * date), its moment in the column `snapshot`.
 */
export const LIVE_DATASET = join('signs', 'live_snapshots');

/** The partition column of the snapshots. */
export const SNAPSHOT_DATE = 'snapshot_date';

/** A moment (ISO 8601 UTC) as it is written in a file name: 20261115T060000123Z. */
function compactMoment(moment: string): string {
  return moment.replace(/[-:.]/g, '');
}

/** Where the snapshot of `moment` (ISO 8601 UTC) landed by step `stepId` lies in the dataset. */
export function snapshotFile(stepId: string, moment: string): string {
  return join(
    partitionFolder(SNAPSHOT_DATE, moment.slice(0, 10)),
    `${stepId}-${compactMoment(moment)}.parquet`,
  );
}

export const LIVE_QUARANTINE_DATASET = join('signs', 'live_quarantine');

type Scalar = 'VARCHAR' | 'DATE' | 'INTEGER' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'VARCHAR[]';

/** Scalar properties: upstream name -> column type, in column order (sql/live_typing.sql types them). */
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

/** Nested properties: upstream name -> column type (sql/live_typing.sql makes them). */
const NESTED: readonly (readonly [string, string])[] = [
  ['textSigns', 'STRUCT("type" VARCHAR, text VARCHAR, opening_hours VARCHAR)[]'],
  [
    'supplementarySigns',
    `STRUCT(sign_code VARCHAR, text VARCHAR, opening_hours VARCHAR, external_references ${REFERENCE}[], "index" INTEGER)[]`,
  ],
  ['externalReferences', `${REFERENCE}[]`],
  ['conditions', `STRUCT(restrictions ${CONDITION}, exemptions ${CONDITION}[])`],
  ['comments', 'VARCHAR[]'],
];

/** camelCase -> snake_case. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Columns of a row of the current state, with their types (a snapshot file adds `snapshot`). */
export const LIVE_COLUMNS: readonly (readonly [string, string])[] = [
  ['sign_id', 'VARCHAR'],
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

/**
 * A snapshot's column beside the typed ones: each sign's fingerprint, a 64-bit
 * hash of its values (LIVE_FINGERPRINT), so that the signs that changed from
 * one snapshot to the next (sql/signs_live_changes.sql, signs_live_history)
 * are found without reading every value of both again.
 */
export const FINGERPRINT_COLUMN = 'fingerprint';

/** The columns a fingerprint hashes: every typed one but those of the download, the position's other form and the properties kept whole. */
const FINGERPRINTED = LIVE_COLUMNS.map(([name]) => name).filter(
  (name) => !['api', 'downloaded_at', GEOMETRY_COLUMN, 'properties'].includes(name),
);

/**
 * The fingerprint of a typed row (its columns as a snapshot has them): the
 * hash of FINGERPRINTED (its low 63 bits, a BIGINT, which every reader has,
 * Java's and Spark's too, where an unsigned one is not), with the length of each list and whether each struct
 * is NULL, which DuckDB's hash leaves out (it runs a list's items together and
 * takes a NULL struct for one of NULLs: without them, `[]` and NULL, or an item
 * moved from one list of a struct to the next, would not change it).
 */
export const LIVE_FINGERPRINT = `CAST(hash(${FINGERPRINTED.map((name) => quotedIdentifier(name)).join(', ')},
  len(text_signs), len(supplementary_signs), list_transform(supplementary_signs, s -> len(s.external_references)),
  len(external_references), len(comments), conditions IS NOT DISTINCT FROM NULL,
  conditions.restrictions IS NOT DISTINCT FROM NULL, len(conditions.restrictions.vehicle_type),
  len(conditions.restrictions.category), len(conditions.exemptions),
  list_transform(conditions.exemptions, e -> [len(e.vehicle_type), len(e.category)]))
  & 9223372036854775807 AS BIGINT)`;

/** Upstream names of the scalar properties, which are read as text and typed by sql/live_typing.sql. */
export const LIVE_SCALAR_NAMES: readonly string[] = SCALARS.map(([name]) => name);

/** Upstream names of every property a column holds (for the schema test and the docs). */
export const LIVE_PROPERTIES: readonly string[] = [
  ...LIVE_SCALAR_NAMES,
  ...NESTED.map(([name]) => name),
];
