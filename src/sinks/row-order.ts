/**
 * An extract's rows in a total order with a fingerprint each: what lets a
 * nightly extract copy the records of the rows that did not change from the
 * last night's file (record-reuse.ts) instead of writing them all again.
 *
 * The source's own ORDER BY (plain column names) is taken out of its SQL by
 * DuckDB's parser (`json_serialize_sql`) and put back with the fingerprint as
 * the last key, so that rows equal in their keys come in one order, night
 * after night; the fingerprints in that order are then read on narrow rows
 * (the keys and one number), without the sort of the wide rows.
 */
import { createHash } from 'node:crypto';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { VERSION } from '../version.js';
import type { Column, ExportSource } from './columns.js';
import { shapeOf } from './row-shape.js';

/** The fingerprint column the keyed source adds (a name no source of an extract has). */
export const ROW_HASH = '_road_etl_row_hash';

/** The name the keyed rows go by, so that an order names their columns, not a projection's. */
export const ORDERED_ROWS = 'road_etl_rows';
const ROWS = ORDERED_ROWS;

export interface RowOrder {
  /** The rows of the source with ROW_HASH beside them, unordered (a FROM item: a SELECT named ROWS). */
  keyed: string;
  /** The same rows unnamed (a parenthesised SELECT). */
  rows: string;
  /** The ORDER BY that gives the source's order, ties broken by ROW_HASH, in the keyed rows' own columns. */
  orderBy: string;
  /** The columns of the order (quoted), which ROWS names too. */
  keys: string[];
  /**
   * The rows as `rows` has them, of those whose one key is among the values
   * `keys` (a parenthesised query of one column) or NULL: read from the
   * source with a filter its scan applies before any fingerprint is made.
   * Undefined for an order of several columns.
   */
  narrowed?: (keys: string) => string;
}

/**
 * The row's fingerprint: DuckDB's 64-bit hash of its values, with the shape
 * of each list and struct (row-shape.ts: DuckDB's hash runs the items of
 * lists together and takes a NULL struct for one of NULLs) and the sign of
 * each float (`-0.0` hashes as `0.0` and is written otherwise).
 */
export function rowHash(columns: readonly Column[]): string {
  const shapes = columns.flatMap(({ name, type }) => {
    const ref = quotedIdentifier(name);
    return type === 'DOUBLE' || type === 'FLOAT' ? [`signbit(${ref})`] : shapeOf(ref, type);
  });
  return `hash(${[...shapes, ...columns.map(({ name }) => quotedIdentifier(name))].join(', ')})`;
}

interface OrderTerm {
  type: string;
  null_order: string;
  expression: { class: string; column_names?: string[] };
}

interface QueryNode {
  type: string;
  modifiers: { type: string; orders?: OrderTerm[] }[];
  select_list?: { class: string; replace_list?: unknown[]; expr?: unknown; columns?: boolean }[];
  from_table?: { type: string; subquery?: { node: QueryNode } };
  where_clause?: unknown;
  group_expressions?: unknown[];
  having?: unknown;
  qualify?: unknown;
  sample?: unknown;
}

interface Serialized {
  error: boolean;
  statements: { node: QueryNode }[];
}

/**
 * The node that orders the rows: the query's own, or, where the query only
 * leaves columns out of a subquery (`SELECT * EXCLUDE (...) FROM (...)`,
 * as an extract leaves out the covering box), the subquery's.
 */
function orderingNode(node: QueryNode): QueryNode {
  for (;;) {
    const star = node.select_list?.length === 1 ? node.select_list[0]! : undefined;
    const inner = node.from_table?.type === 'SUBQUERY' ? node.from_table.subquery?.node : undefined;
    const plain =
      node.type === 'SELECT_NODE' &&
      node.modifiers.length === 0 &&
      star?.class === 'STAR' &&
      !star.expr &&
      !star.columns &&
      (star.replace_list ?? []).length === 0 &&
      !node.where_clause &&
      (node.group_expressions ?? []).length === 0 &&
      !node.having &&
      !node.qualify &&
      !node.sample;
    if (!plain || !inner) return node;
    node = inner;
  }
}

// As json_serialize_sql writes them (DuckDB 1.5), with the names of older releases.
const DIRECTIONS: Record<string, string> = {
  ORDER_DEFAULT: '',
  ASCENDING: ' ASC',
  DESCENDING: ' DESC',
  ORDER_ASCENDING: ' ASC',
  ORDER_DESCENDING: ' DESC',
};
const NULLS: Record<string, string> = {
  ORDER_DEFAULT: '',
  'NULLS FIRST': ' NULLS FIRST',
  'NULLS LAST': ' NULLS LAST',
  NULLS_FIRST: ' NULLS FIRST',
  NULLS_LAST: ' NULLS LAST',
};

/** The condition that picks the rows whose fingerprints (ROW_HASH) are `fingerprints` (numbers as text). */
export function withFingerprints(fingerprints: readonly string[]): string {
  return `${ROW_HASH} IN (SELECT unnest([${fingerprints.join(', ')}]::UBIGINT[]))`;
}

/** The rows of `from` with their fingerprint (ROW_HASH) beside them. */
export function keyedRows(from: string, columns: readonly Column[]): string {
  return `(SELECT *, ${rowHash(columns)} AS ${ROW_HASH} FROM ${from})`;
}

/** The statement tree of `sql` (a parenthesised query), as DuckDB's parser gives it; undefined when it cannot. */
async function parse(db: Database, sql: string): Promise<Serialized | undefined> {
  const query = /^\((.*)\)$/s.exec(sql)?.[1];
  if (query === undefined) return undefined;
  let parsed: Serialized;
  try {
    const [row] = await db.all(`SELECT json_serialize_sql(${quotedString(query)}) AS tree`);
    // A location DuckDB gives as 2^64 - 1 (none) does not survive a JavaScript number.
    const tree = String(row?.['tree']).replace(
      /"query_location":\s*\d{16,}/g,
      '"query_location":0',
    );
    // Nor does a larger integer (a HUGEINT's halves, a UBIGINT): such a query is written as it is.
    if (/\d{16,}/.test(tree)) return undefined;
    parsed = JSON.parse(tree) as Serialized;
  } catch {
    return undefined;
  }
  return parsed.error || parsed.statements.length !== 1 ? undefined : parsed;
}

/** The SQL of a statement tree, as DuckDB writes it; undefined when it cannot. */
async function deparse(db: Database, tree: Serialized): Promise<string | undefined> {
  try {
    const [row] = await db.all(
      `SELECT json_deserialize_sql(${quotedString(JSON.stringify(tree))}) AS sql`,
    );
    return String(row?.['sql']);
  } catch {
    return undefined;
  }
}

/**
 * `sql` (a parenthesised query, or a table) as DuckDB writes it again, which rowOrder's
 * keyed rows are made of: two queries that differ only in their ORDER BY
 * read their rows in the same words. Undefined when DuckDB cannot.
 */
export async function plainSql(db: Database, sql: string): Promise<string | undefined> {
  // A table (its quoted name) is read as a query of all its rows is.
  const parsed = await parse(db, sql.startsWith('(') ? sql : `(SELECT * FROM ${sql})`);
  const written = parsed && (await deparse(db, parsed));
  return written === undefined ? undefined : `(${written})`;
}

/**
 * The source taken apart into its rows and its order; undefined when it has
 * no order (the order of its rows is then DuckDB's, which a file copied
 * from the last night's could not be sure to keep), when its order is not
 * plain columns of its own (an expression, a LIMIT), when
 * DuckDB cannot take it apart, or when its columns do not all have a
 * fingerprint. `sql` is a table name (quoted) or a parenthesised query.
 */
export async function rowOrder(
  db: Database,
  source: ExportSource,
  columns: readonly Column[],
): Promise<RowOrder | undefined> {
  if (columns.some((c) => c.name === ROW_HASH)) return undefined;
  const parsed = await parse(db, source.sql);
  if (parsed === undefined) return undefined;
  const node = orderingNode(parsed.statements[0]!.node);
  if (node.modifiers.some((m) => m.type !== 'ORDER_MODIFIER')) return undefined;
  const terms = node.modifiers.flatMap((m) => m.orders ?? []);
  const keys: string[] = [];
  const names: string[] = [];
  for (const term of terms) {
    const named = term.expression.column_names;
    const direction = DIRECTIONS[term.type];
    const nulls = NULLS[term.null_order];
    if (term.expression.class !== 'COLUMN_REF' || named?.length !== 1) return undefined;
    if (direction === undefined || nulls === undefined) return undefined;
    if (!columns.some((c) => c.name === named[0])) return undefined;
    keys.push(`${ROWS}.${quotedIdentifier(named[0]!)}${direction}${nulls}`);
    names.push(quotedIdentifier(named[0]!));
  }
  if (keys.length === 0) return undefined;
  node.modifiers = [];
  const unordered = await deparse(db, parsed);
  if (unordered === undefined) return undefined;
  const rows = keyedRows(`(${unordered})`, columns);
  const [key] = names;
  return {
    keyed: `${rows} AS ${ROWS}`,
    rows,
    orderBy: `ORDER BY ${[...keys, `${ROWS}.${ROW_HASH}`].join(', ')}`,
    keys: names,
    ...(names.length === 1 && {
      narrowed: (values: string) =>
        keyedRows(
          `(SELECT * FROM (${unordered}) WHERE ${key} IN ${values} OR ${key} IS NULL)`,
          columns,
        ),
    }),
  };
}

/**
 * What makes an extract's records what they are: `how` (the format, the
 * statement that writes them, the columns) with road-etl's and DuckDB's
 * versions, as a digest. A record kept from a file made otherwise is never
 * taken for one made now.
 */
export async function makingOf(db: Database, how: unknown): Promise<string> {
  const [row] = await db.all('SELECT version() AS duckdb');
  const made = JSON.stringify({ how, road_etl: VERSION, duckdb: row?.['duckdb'] });
  return createHash('sha256').update(made).digest('hex');
}
