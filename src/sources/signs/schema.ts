/**
 * The flat, typed schema of traffic-sign events (DESIGN: nested fields joined
 * with "_"), and the one lenient typing both the event feed and the current-state
 * download go through: numbers from strings (a decimal comma too), dates as
 * dd/MM/yyyy or ISO, "" as null, text_signs as a list. A value that cannot be
 * typed becomes NULL and is named in typing_issues; a record whose id, type or
 * publication_timestamp cannot be typed is quarantined with the reason. The
 * record as received is kept whole in raw_event, so no upstream field is lost.
 */
import { quotedIdentifier, quotedString } from '../../duckdb/database.js';
import { GEOMETRY_COLUMN, pointSql } from '../../duckdb/geometry.js';
import { misEncodedIssue } from '../../duckdb/text-checks.js';

type Kind = 'bigint' | 'double' | 'date' | 'timestamp' | 'text' | 'list';

/** Upstream path -> kind, in the column order of the dataset. */
const SIGN_FIELDS: readonly (readonly [string, Kind])[] = [
  ['id', 'bigint'],
  ['type', 'text'],
  ['schema_version', 'text'],
  ['publication_timestamp', 'timestamp'],
  ['validated', 'text'],
  ['validated_on', 'date'],
  ['user_id', 'bigint'],
  ['organisation_id', 'bigint'],
  ['rvv_code', 'text'],
  ['text_signs', 'list'],
  ['location.wgs84.latitude', 'double'],
  ['location.wgs84.longitude', 'double'],
  ['location.rd.x', 'double'],
  ['location.rd.y', 'double'],
  ['location.placement', 'text'],
  ['location.side', 'text'],
  ['location.road.name', 'text'],
  ['location.road.type', 'text'],
  ['location.road.number', 'bigint'],
  ['location.road.wvk_id', 'bigint'],
  ['location.county.name', 'text'],
  ['location.county.code', 'text'],
  ['location.county.townname', 'text'],
  ['details.image', 'text'],
  ['details.first_seen', 'date'],
  ['details.last_seen', 'date'],
  ['details.removed', 'date'],
];

const EVENT_TYPES = ['created', 'updated', 'deleted'] as const;

function columnName(path: string): string {
  return path.replaceAll('.', '_');
}

const SQL_TYPES: Record<Kind, string> = {
  bigint: 'BIGINT',
  double: 'DOUBLE',
  date: 'DATE',
  timestamp: 'TIMESTAMPTZ',
  text: 'VARCHAR',
  list: 'VARCHAR[]',
};

/** Columns of the typed dataset (without partition columns), with their DuckDB types. */
function typedColumns(extra: Record<string, string>): [string, string][] {
  return [
    ...SIGN_FIELDS.map(([path, kind]) => [columnName(path), SQL_TYPES[kind]] as [string, string]),
    ...Object.entries(extra),
    ['event_hash', 'VARCHAR'],
    ['typing_issues', 'VARCHAR[]'],
    ['raw_event', 'JSON'],
    [GEOMETRY_COLUMN, 'GEOMETRY'],
  ];
}

/** The geometry of a typed sign row: its WGS 84 position as a Point. */
export const SIGN_GEOMETRY = pointSql('location_wgs84_longitude', 'location_wgs84_latitude');

/** How a field's text is found in the source row: nested JSON paths, or flat "a.b.c" keys (CSV). */
export type Layout = 'nested' | 'flat';

function jsonPath(path: string, layout: Layout): string {
  return layout === 'nested' ? `$.${path}` : `$."${path}"`;
}

function typed(kind: Kind, text: string, json: string): string {
  const blank = `(${text} IS NULL OR trim(${text}) = '')`;
  switch (kind) {
    case 'text':
      return `CASE WHEN ${blank} THEN NULL ELSE ${text} END`;
    case 'bigint':
      return `TRY_CAST(trim(${text}) AS BIGINT)`;
    case 'double':
      return `TRY_CAST(replace(trim(${text}), ',', '.') AS DOUBLE)`;
    case 'date':
      // dd/MM/yyyy (strict: TRY_STRPTIME refuses anything else), else ISO
      return `CASE WHEN ${blank} THEN NULL
        WHEN contains(${text}, '/') THEN TRY_STRPTIME(trim(${text}), '%d/%m/%Y')::DATE
        ELSE TRY_CAST(left(trim(${text}), 10) AS DATE) END`;
    case 'timestamp':
      return `TRY_CAST(trim(${text}) AS TIMESTAMPTZ)`;
    case 'list':
      // null and "" -> NULL; a list -> its items as text; one other string -> [string]
      return `CASE json_type(${json})
        WHEN 'ARRAY' THEN json_extract_string(${json}, '$[*]')
        WHEN 'VARCHAR' THEN CASE WHEN trim(${json} ->> '$') = '' THEN NULL ELSE [${json} ->> '$'] END
        ELSE NULL END`;
  }
}

/**
 * A SELECT over `source` (which has a JSON column `raw` and may have `feed_index`
 * and `event_hash`) that yields the typed columns plus `_problem`: why the record
 * cannot be typed, or NULL.
 */
export function typingSelect(
  source: string,
  layout: Layout,
  passThrough: readonly string[],
): string {
  // One parse per record: every field's text comes out of a single multi-path extraction.
  const paths = SIGN_FIELDS.map(([path]) => quotedString(jsonPath(path, layout)));
  const texts: string[] = [];
  const values: string[] = [];
  const issues: string[] = [];
  SIGN_FIELDS.forEach(([path, kind], i) => {
    const name = columnName(path);
    const text = `_t_${name}`;
    texts.push(`_v[${i + 1}] AS ${text}`);
    const json =
      layout === 'flat'
        ? `TRY_CAST(${text} AS JSON)`
        : `(raw -> ${quotedString(jsonPath(path, layout))})`;
    const value = typed(kind, text, json);
    values.push(`${value} AS ${quotedIdentifier(name)}`);
    // Text is kept as received; a name (road, municipality, town: where the feed's
    // diacritics are) that reads as UTF-8 decoded as Latin-1 is flagged.
    if (kind === 'text' && name.includes('name')) issues.push(misEncodedIssue(name, text));
    if (kind !== 'text') {
      issues.push(
        // the typed value first: for most rows it is there, and the rest is not evaluated
        `CASE WHEN ${quotedIdentifier(name)} IS NULL AND ${text} IS NOT NULL AND trim(${text}) <> '' THEN ${quotedString(`${name}: ${kind === 'list' ? 'not a list' : `not a ${kind}`}`)} || ' (' || ${text} || ')' END`,
      );
    }
  });
  const problem = `CASE
    WHEN TRY_CAST(trim(_t_id) AS BIGINT) IS NULL THEN 'id is not an integer: ' || coalesce(_t_id, 'missing')
    WHEN (${typed('timestamp', '_t_publication_timestamp', '')}) IS NULL THEN 'publication_timestamp is not a timestamp: ' || coalesce(_t_publication_timestamp, 'missing')
    WHEN _t_type IS NULL OR _t_type NOT IN (${EVENT_TYPES.map(quotedString).join(', ')}) THEN 'type is not created, updated or deleted: ' || coalesce(_t_type, 'missing')
  END`;
  const keep = passThrough.map(quotedIdentifier);
  const columns = SIGN_FIELDS.map(([path]) => quotedIdentifier(columnName(path)));
  return `SELECT ${[...columns, ...keep].join(', ')},
  list_filter([${issues.join(', ')}], x -> x IS NOT NULL) AS typing_issues,
  raw AS raw_event,
  ${SIGN_GEOMETRY} AS ${GEOMETRY_COLUMN},
  ${problem} AS _problem
FROM (
  SELECT *, ${values.join(',\n  ')}
  FROM (SELECT *, ${texts.join(', ')} FROM (SELECT *, json_extract_string(raw, [${paths.join(', ')}]) AS _v FROM ${source}))
)`;
}

/** Columns of the signs_events view (partition column included). */
export const EVENTS_VIEW_COLUMNS: readonly (readonly [string, string])[] = [
  ...typedColumns({}).slice(0, SIGN_FIELDS.length),
  ['feed_index', 'INTEGER'],
  ...typedColumns({}).slice(SIGN_FIELDS.length),
  ['publication_date', 'DATE'],
];

/** Columns of the signs_snapshot view. */
export const SNAPSHOT_VIEW_COLUMNS: readonly (readonly [string, string])[] = [
  ...typedColumns({}),
  ['snapshot_moment', 'TIMESTAMPTZ'],
];
