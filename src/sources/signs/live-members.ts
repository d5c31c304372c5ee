/**
 * The features of a download as sql/live_typing.sql reads them: the view
 * `live_members`, one row per feature with its id as text, `raw` (the feature
 * as received, where it is at hand), `properties` (the properties as served,
 * as JSON, where they are kept), `p` (every property of NDW's schemas, as
 * served: scalars as text, nested values typed as NDW's OpenAPI file gives
 * them, in its camelCase names) and the position.
 *
 * Two ways to the same `p`:
 * - **strict** (strictMembers): DuckDB's JSON reader types each line straight
 *   into `p` in one parse, as DuckDB alone would read the file. It fails on a
 *   nested value of another shape than the schema's (a text where a list is
 *   due, a word where a number is), and it leaves out a property the schemas
 *   do not know; `properties` is NULL.
 * - **lenient** (lenientMembers, memberParts): the properties are read as JSON,
 *   kept whole in `properties`, and typed into `p` by `json_transform`, which
 *   gives NULL for what does not fit. A second parse of every feature: about
 *   1.7 times the strict way's time.
 *
 * Where both read a file, their `p` and position are equal (a test compares
 * them on the simulator's messy features).
 */
import { quotedString } from '../../duckdb/database.js';
import { LIVE_SCALAR_NAMES } from './live.js';

/** A member's type as NDW's OpenAPI file gives it: a DuckDB scalar, a list of one, or an object. */
type Shape = string | readonly [Shape] | { readonly [name: string]: Shape };

const REFERENCE = [{ system: 'VARCHAR', id: 'VARCHAR' }] as const;
const CONDITION = {
  vehicleType: ['VARCHAR'],
  category: ['VARCHAR'],
  timeValidity: 'VARCHAR',
  emissionClass: 'INTEGER',
  fuelType: 'VARCHAR',
  axleWeight: 'DOUBLE',
  height: 'DOUBLE',
  length: 'DOUBLE',
  weight: 'DOUBLE',
  width: 'DOUBLE',
} as const;

/** The nested properties as served (ConditionPropertiesDtoV5 and the others of NDW's OpenAPI file). */
const NESTED_SHAPES: { readonly [name: string]: Shape } = {
  textSigns: [{ type: 'VARCHAR', text: 'VARCHAR', openingHours: 'VARCHAR' }],
  supplementarySigns: [
    {
      signCode: 'VARCHAR',
      text: 'VARCHAR',
      openingHours: 'VARCHAR',
      externalReferences: REFERENCE,
      index: 'INTEGER',
    },
  ],
  externalReferences: REFERENCE,
  conditions: { restrictions: CONDITION, exemptions: [CONDITION] },
  comments: ['VARCHAR'],
};

/** Every property: the scalars as text (live_typing.sql types them), the nested values typed. */
export const PROPERTY_SHAPES: { readonly [name: string]: Shape } = {
  ...Object.fromEntries(LIVE_SCALAR_NAMES.map((name) => [name, 'VARCHAR'])),
  ...NESTED_SHAPES,
};

/** A shape as `json_transform` takes it. */
function structure(shape: Shape): unknown {
  if (typeof shape === 'string') return shape;
  if (Array.isArray(shape)) return [structure(shape[0] as Shape)];
  return Object.fromEntries(
    Object.entries(shape as Record<string, Shape>).map(([k, v]) => [k, structure(v)]),
  );
}

/** A shape as a DuckDB type. */
function duckType(shape: Shape): string {
  if (typeof shape === 'string') return shape;
  if (Array.isArray(shape)) return `${duckType(shape[0] as Shape)}[]`;
  const fields = Object.entries(shape as Record<string, Shape>).map(
    ([k, v]) => `"${k}" ${duckType(v)}`,
  );
  return `STRUCT(${fields.join(', ')})`;
}

const PROPERTIES_STRUCTURE = quotedString(JSON.stringify(structure(PROPERTY_SHAPES)));
const PROPERTIES_TYPE = duckType(PROPERTY_SHAPES);

/**
 * The members of the features in a file of GeoJSON features, one per line,
 * typed by DuckDB's JSON reader as it reads each line (see above): fails on a
 * value of another shape than the schema's.
 */
export function strictMembers(file: string): string {
  const columns = `{id: 'VARCHAR', geometry: 'STRUCT("type" VARCHAR, coordinates DOUBLE[])', properties: ${quotedString(PROPERTIES_TYPE)}}`;
  return `(SELECT id, NULL::VARCHAR AS raw, NULL::JSON AS properties, properties AS p,
      geometry.coordinates[1] AS longitude, geometry.coordinates[2] AS latitude
    FROM read_json(${quotedString(file)}, format = 'newline_delimited', columns = ${columns}))`;
}

/** The typed members of features whose id, geometry and properties are JSON values. */
function typedParts(from: string, raw: string): string {
  return `(SELECT id ->> '$' AS id, ${raw} AS raw, coalesce(properties, '{}'::JSON) AS properties,
      json_transform(properties, ${PROPERTIES_STRUCTURE}) AS p,
      TRY_CAST(geometry ->> '$.coordinates[0]' AS DOUBLE) AS longitude,
      TRY_CAST(geometry ->> '$.coordinates[1]' AS DOUBLE) AS latitude
    FROM ${from})`;
}

/**
 * The members of the features in a file of GeoJSON features, one per line,
 * the properties kept whole (see above). A line that is not an object fails
 * the read.
 */
export function lenientMembers(file: string): string {
  return typedParts(
    `read_json(${quotedString(file)}, format = 'newline_delimited',
      columns = {id: 'JSON', geometry: 'JSON', properties: 'JSON'})`,
    'NULL::VARCHAR',
  );
}

/** The lines of a file of JSON values, one per line, as a relation of one JSON column `f`. */
export function featureLines(file: string): string {
  return `(SELECT json AS f FROM read_json_objects(${quotedString(file)}, format = 'newline_delimited'))`;
}

/** The members of features in one JSON column `f` (any JSON value), with each feature as received. */
export function memberParts(features: string): string {
  return typedParts(
    `(SELECT f -> '$.id' AS id, f -> '$.geometry' AS geometry, f -> '$.properties' AS properties, f FROM ${features})`,
    'f::VARCHAR',
  );
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

/**
 * The members of `value` (a feature's properties, or a value within them) that
 * `shape` does not name, as dotted paths from `path`. Values of another shape
 * are the strict reader's to refuse, not named here.
 */
export function unknownMembers(
  value: unknown,
  shape: Shape,
  path: string,
  into: Set<string>,
): void {
  if (value === null || typeof value !== 'object' || typeof shape === 'string') return;
  if (Array.isArray(shape)) {
    if (Array.isArray(value))
      for (const item of value) unknownMembers(item, shape[0] as Shape, path, into);
    return;
  }
  if (Array.isArray(value)) return;
  const fields = shape as Record<string, Shape>;
  for (const [name, member] of Object.entries(value as Record<string, unknown>)) {
    const inner = Object.hasOwn(fields, name) ? fields[name] : undefined;
    const at = path === '' ? name : `${path}.${name}`;
    if (inner === undefined) into.add(at);
    else unknownMembers(member, inner, at, into);
  }
}
