/**
 * The flat, typed schema of traffic-sign events (DESIGN: nested fields joined
 * with "_"), and the one lenient typing both the event feed and the current-state
 * download go through: numbers from strings (a decimal comma too), dates as
 * dd/MM/yyyy or ISO, "" as null, text_signs as a list. A value that cannot be
 * typed becomes NULL and is named in typing_issues; a record whose id, type or
 * publication_timestamp cannot be typed is quarantined with the reason. The
 * record as received is kept whole in raw_event, so no upstream field is lost.
 */
import type { Database } from '../../duckdb/database.js';
import { engineSql } from '../../duckdb/sql-files.js';
import { GEOMETRY_COLUMN } from '../../duckdb/geometry.js';

type Kind = 'bigint' | 'double' | 'date' | 'timestamp' | 'text' | 'list';

/** Upstream path -> kind, in the column order of the dataset (sql/sign_typing.sql types them). */
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

/** How a field's text is found in the source row: nested JSON paths, or flat "a.b.c" keys (CSV). */
export type Layout = 'nested' | 'flat';

/**
 * Makes the views sign_records (over `records`: a JSON column `raw`, and may
 * have `feed_index` and `event_hash`) and sign_texts (its fields' texts, by
 * layout) on this connection; resolves to the typing SELECT over them
 * (sql/sign_typing.sql): the typed columns, what is passed through, and
 * `_problem`: why the record cannot be typed, or NULL.
 */
export async function signTyping(db: Database, records: string, layout: Layout): Promise<string> {
  await db.run(`CREATE OR REPLACE TEMP VIEW sign_records AS SELECT * FROM ${records}`);
  const texts = await engineSql('sources/signs', `sign_texts_${layout}`);
  await db.run(`CREATE OR REPLACE TEMP VIEW sign_texts AS ${texts}`);
  return `(${await engineSql('sources/signs', 'sign_typing')})`;
}

/** Columns of the signs_events view (partition column included). */
export const EVENTS_VIEW_COLUMNS: readonly (readonly [string, string])[] = [
  ...typedColumns({}).slice(0, SIGN_FIELDS.length),
  ['feed_index', 'INTEGER'],
  ...typedColumns({}).slice(SIGN_FIELDS.length),
  ['publication_date', 'DATE'],
  ['publication_month', 'DATE'],
];

/** Columns of the signs_snapshot view. */
export const SNAPSHOT_VIEW_COLUMNS: readonly (readonly [string, string])[] = [
  ...typedColumns({}),
  ['snapshot_moment', 'TIMESTAMPTZ'],
];
