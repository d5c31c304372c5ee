/** `road-etl query "SQL"`: DuckDB over the output datasets, each a view. */
import { StatementType, type DuckDBResult } from '@duckdb/node-api';
import { quotedString, type Database } from '../duckdb/database.js';
import type { Argv, CommandModule } from 'yargs';
import { openOutputFolder } from '../duckdb/folder.js';
import { InputError, RunError } from '../errors.js';
import { writeOut, type CliIo } from './io.js';
import { loggerFor, withCommonOptions, type CommonArgs } from './common.js';
import { withOutputFolder } from './stored.js';
import { DATASET_VIEWS } from '../sources/views.js';
import { datasetsRead } from '../steps/export-file.js';
import { bringDatasets } from '../pipeline/fetch-reads.js';

type Format = 'table' | 'csv' | 'json' | 'jsonl';

interface QueryArgs extends CommonArgs {
  sql: string;
  format: Format;
  'max-rows': number;
}

/** DuckDB's statement types, by name and by number (duckdb_statement_type). */
const STATEMENT_TYPES = StatementType as unknown as Record<string, number> & Record<number, string>;

/** Whitespace and comments at the start of SQL text. */
const SPACE = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/** Whether DuckDB's own parser reads `sql` as exactly one SELECT (json_serialize_sql takes SELECTs alone). */
async function isOneSelect(db: Database, sql: string): Promise<boolean> {
  const [row] = await db.all(`SELECT json_serialize_sql(${quotedString(sql)}) AS tree`);
  const tree = JSON.parse(String(row?.['tree'])) as { error: boolean; statements?: unknown[] };
  return !tree.error && tree.statements?.length === 1;
}

/**
 * What `sql` reads, when it only reads: the statement itself when DuckDB's
 * parser takes it as one SELECT (a CTE, FROM-first, SUMMARIZE, DESCRIBE and
 * SHOW among them), or the SELECT an EXPLAIN (without ANALYZE, which runs
 * it) shows. Anything else (COPY, a second statement, EXPLAIN ANALYZE, a
 * write in any disguise) is refused.
 */
async function readingStatement(db: Database, sql: string): Promise<string> {
  const statements = await db.connection.extractStatements(sql);
  if (statements.count !== 1)
    throw new InputError(
      `query: give one statement (there are ${statements.count}); a query reads, with one SELECT`,
    );
  if (await isOneSelect(db, sql)) return sql;
  const type = (await statements.prepare(0)).statementType as number;
  const refuse = (what: string): never => {
    throw new InputError(
      `query: only reads (SELECT, or EXPLAIN of one): ${what}. ` +
        'To write a file, redirect --format csv or jsonl, or add an export step to a pipeline',
    );
  };
  if (type !== STATEMENT_TYPES['EXPLAIN'])
    refuse(`this statement would change something (${STATEMENT_TYPES[type] ?? type})`);
  const explained = sql.replace(SPACE, '');
  const rest = explained.replace(/^EXPLAIN\b/i, '').replace(SPACE, '');
  if (rest === explained || /^(ANALY[SZ]E\b|\()/i.test(rest))
    refuse(
      'EXPLAIN ANALYZE runs the statement it explains; EXPLAIN shows a plan without running it',
    );
  if (!(await isOneSelect(db, rest))) refuse('EXPLAIN shows the plan of a SELECT only');
  return sql;
}

/**
 * The query as one statement that only reads, its result streamed. What it
 * is, DuckDB's own parser says (readingStatement); DuckDB is told first that
 * it may open no file outside the output folder and change no setting. A
 * COPY over a landed file, an ATTACH, an INSTALL or a read of /etc/passwd is
 * refused (exit 2), and the folder is left as it was.
 */
async function readOnly(db: Database, output: string, sql: string): Promise<DuckDBResult> {
  const folder = output.endsWith('/') ? output : `${output}/`;
  await db.run(`SET allowed_directories = [${quotedString(folder)}]`);
  await db.run(`SET enable_external_access = false`);
  await db.run(`SET lock_configuration = true`);
  try {
    const statements = await db.connection.extractStatements(await readingStatement(db, sql));
    return await (await statements.prepare(0)).stream();
  } catch (error) {
    if (error instanceof InputError) throw error;
    const message = (error as Error).message;
    // DuckDB's own faults on a read: said as such, not as a fault of the query or the data.
    if (/^INTERNAL Error/i.test(message))
      throw new RunError(
        `query: DuckDB failed inside itself on this query (${message.split('\n')[0]!}); the folder is unchanged. Try the query in another form, or report it with the query`,
        { cause: error },
      );
    throw new InputError(`query: ${message}`, { cause: error });
  }
}

/** A timestamp as DuckDB's JSON gives it: `2026-11-26 13:33:26.75+00` (UTC), or without the zone. */
const DUCKDB_TIMESTAMP = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(\+00)?$/;

/**
 * A timestamp in ISO 8601 as the extracts write it (`2026-11-26T13:33:26.750Z`):
 * milliseconds always, microseconds (or nanoseconds) where the value has
 * them; `Z` for an instant (the session is in UTC), no zone for a wall-clock
 * time. Anything else (infinity, a year before 1) as DuckDB gives it.
 */
function isoTimestampText<T>(value: T | string): T | string {
  if (typeof value !== 'string') return value;
  const m = DUCKDB_TIMESTAMP.exec(value);
  if (!m) return value;
  const fraction = m[3] ?? '';
  const digits = fraction.length <= 3 ? 3 : fraction.length <= 6 ? 6 : 9;
  return `${m[1]!}T${m[2]!}.${fraction.padEnd(digits, '0')}${m[4] ? 'Z' : ''}`;
}

/** Whether a column of this DuckDB type holds timestamps (instants or wall-clock times). */
function isTimestampType(type: string): boolean {
  return (
    type === 'TIMESTAMP' || type.startsWith('TIMESTAMP_') || type === 'TIMESTAMP WITH TIME ZONE'
  );
}

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function displayCell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const NUMERIC = /^(BIGINT|HUGEINT|UBIGINT|UHUGEINT|DECIMAL)/;

/** JSON output: 64-bit integers and decimals as numbers where that loses nothing. */
function jsonRow(names: string[], types: string[], row: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  names.forEach((name, i) => {
    const value = row[i];
    out[name] =
      typeof value === 'string' &&
      NUMERIC.test(types[i]!) &&
      Number.isSafeInteger(Math.trunc(Number(value)))
        ? Number(value)
        : value;
  });
  return out;
}

function renderTable(names: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(displayCell));
  const widths = names.map((name, i) =>
    Math.min(60, Math.max(name.length, ...cells.map((r) => r[i]!.length))),
  );
  const fit = (text: string, width: number): string =>
    text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
  const line = (values: string[]): string =>
    `│ ${values.map((v, i) => fit(v, widths[i]!)).join(' │ ')} │`;
  const rule = (l: string, m: string, r: string): string =>
    `${l}${widths.map((w) => '─'.repeat(w + 2)).join(m)}${r}`;
  return [
    rule('┌', '┬', '┐'),
    line(names),
    rule('├', '┼', '┤'),
    ...cells.map(line),
    rule('└', '┴', '┘'),
  ].join('\n');
}

/** The result streamed to stdout in the format asked for. */
async function printResult(
  result: DuckDBResult,
  args: Pick<QueryArgs, 'format' | 'max-rows'>,
  write: (text: string) => Promise<void>,
): Promise<void> {
  const names = result.columnNames();
  const types = result.columnTypes().map((t) => t.toString());
  // Timestamps (top-level columns) in ISO 8601, as the extracts have them.
  const timestamps = types.flatMap((t, i) => (isTimestampType(t) ? [i] : []));
  const rowsOf = async function* (): AsyncGenerator<unknown[][]> {
    for await (const chunk of result.yieldRowsJson()) {
      if (timestamps.length > 0)
        for (const row of chunk)
          for (const i of timestamps) row[i] = isoTimestampText(row[i] ?? null);
      yield chunk;
    }
  };
  if (args.format === 'table') {
    const rows: unknown[][] = [];
    let more = 0;
    for await (const chunk of rowsOf()) {
      for (const row of chunk) {
        if (rows.length < args['max-rows']) rows.push(row);
        else more++;
      }
    }
    await write(renderTable(names, rows) + '\n');
    await write(
      `${rows.length + more} row${rows.length + more === 1 ? '' : 's'}${more ? ` (${more} not shown: use --max-rows or --format csv)` : ''}\n`,
    );
    return;
  }
  if (args.format === 'csv') await write(names.map(csvCell).join(',') + '\r\n');
  if (args.format === 'json') await write('[');
  let first = true;
  for await (const chunk of rowsOf()) {
    let text = '';
    for (const row of chunk) {
      if (args.format === 'csv') text += row.map(csvCell).join(',') + '\r\n';
      else {
        const json = JSON.stringify(jsonRow(names, types, row));
        text += args.format === 'jsonl' ? json + '\n' : (first ? '\n' : ',\n') + json;
      }
      first = false;
    }
    await write(text);
  }
  if (args.format === 'json') await write(first ? ']\n' : '\n]\n');
}

export const queryCommand = (io: CliIo): CommandModule<object, QueryArgs> => ({
  command: 'query <sql>',
  describe: 'Run SQL over the output datasets (each dataset is a view)',
  builder: (yargs: Argv) =>
    withCommonOptions(yargs)
      .positional('sql', { type: 'string', demandOption: true, describe: 'The SQL to run' })
      .option('format', {
        choices: ['table', 'csv', 'json', 'jsonl'] as const,
        default: 'table' as Format,
        describe: 'How to print the result',
      })
      .option('max-rows', {
        type: 'number',
        default: 1000,
        describe: 'Rows shown by --format table',
      })
      .example('$0 query "SHOW TABLES"', 'list the datasets')
      .example(
        '$0 query "SELECT rvv_code, count(*) FROM signs_current_state GROUP BY ALL ORDER BY 2 DESC" --format csv',
        'signs per code',
      ) as unknown as Argv<QueryArgs>,
  handler: (args) =>
    withOutputFolder(args, io, async ({ folder: output, files }) => {
      const logger = loggerFor(args, io);
      const write = (text: string): Promise<void> => writeOut(io.stdout, text);
      const folder = await openOutputFolder(output, {
        derived: DATASET_VIEWS,
        views: false,
        files,
      });
      try {
        const datasets = await folder.refresh();
        if (datasets.length === 0)
          logger.log('warn', 'query.empty', `No datasets in ${output} yet`, { output });
        // A folder in a store: the datasets the query names, fetched before it runs.
        const names = datasetsRead(args.sql, datasets).map((d) => d.name);
        await bringDatasets(output, files, { reader: 'the query', logger, names });
        const result = await readOnly(folder.db, output, args.sql);
        await printResult(result, args, write);
      } finally {
        folder.close();
      }
    }),
});
