/** `road-etl query "SQL"`: DuckDB over the output datasets, each a view. */
import { StatementType, type DuckDBPreparedStatement, type DuckDBResult } from '@duckdb/node-api';
import { formatSize, isOutOfMemory } from '../duckdb/memory.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DISK } from '../duckdb/folder-files.js';
import { quotedString, type Database } from '../duckdb/database.js';
import type { Argv, CommandModule } from 'yargs';
import { openOutputFolder } from '../duckdb/folder.js';
import { InputError, RunError } from '../errors.js';
import { writeOut, type CliIo } from './io.js';
import { loggerFor, outputTarget, withCommonOptions, type CommonArgs } from './common.js';
import { withFolder } from '../pipeline/session.js';
import { DATASET_VIEWS } from '../sources/views.js';
import { viewsOf } from '../steps/export-file.js';
import { bringDatasets } from '../pipeline/fetch-reads.js';

type Format = 'table' | 'csv' | 'json' | 'jsonl';

interface QueryArgs extends CommonArgs {
  sql: string;
  format: Format;
  'max-rows': number;
  explain: boolean;
}

/** DuckDB's statement types, by name and by number (duckdb_statement_type). */
const STATEMENT_TYPES = StatementType as unknown as Record<string, number> & Record<number, string>;

function refuse(what: string): never {
  throw new InputError(
    `query: only reads (one SELECT): ${what}. ` +
      'To write a file, redirect --format csv or jsonl, or add an export step to a pipeline',
  );
}

/**
 * The statement `sql` as DuckDB's parser and binder judge it, prepared: one
 * statement that DuckDB prepares as a SELECT (a CTE, FROM-first, SUMMARIZE,
 * DESCRIBE and SHOW among them). What runs is that prepared statement itself,
 * never the text again, so no comment, string or line ending can make the
 * judged statement and the run one differ. Anything else (COPY, a second
 * statement, EXPLAIN, which DuckDB may make run what it explains, a write in
 * any disguise) is refused.
 */
async function preparedSelect(db: Database, sql: string): Promise<DuckDBPreparedStatement> {
  const statements = await db.connection.extractStatements(sql).catch(async (error: unknown) => {
    // Text that DuckDB's parser reads as no statement at all (comments only) fails to extract.
    const [row] = await db.all(`SELECT json_serialize_sql(${quotedString(sql)}) AS tree`);
    const tree = JSON.parse(String(row?.['tree'])) as { error: boolean; statements?: unknown[] };
    if (!tree.error && tree.statements?.length === 0)
      throw new InputError(
        'query: DuckDB reads no statement in this text (all of it is comments or empty); a query reads, with one SELECT',
      );
    throw error;
  });
  if (statements.count !== 1)
    throw new InputError(
      `query: give one statement (there are ${statements.count}); a query reads, with one SELECT`,
    );
  const prepared = await statements.prepare(0);
  const type = prepared.statementType as number;
  if (type === STATEMENT_TYPES['EXPLAIN'])
    refuse(
      'an EXPLAIN is asked for with --explain (road-etl query --explain "SELECT ..."), which shows the plan of the SELECT without running it',
    );
  if (type !== STATEMENT_TYPES['SELECT'])
    refuse(`this statement would change something (${STATEMENT_TYPES[type] ?? type})`);
  return prepared;
}

/**
 * The tables and views a SELECT names, as DuckDB's parser reads it (its parse
 * tree, json_serialize_sql): what a query reads, fetched before it runs. A
 * statement that is no SELECT names none (it is refused).
 */
async function tablesRead(db: Database, sql: string): Promise<Set<string>> {
  const [row] = await db.all(`SELECT json_serialize_sql(${quotedString(sql)}) AS tree`);
  const names = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const { type, table_name: table } = node as { type?: unknown; table_name?: unknown };
      if (type === 'BASE_TABLE' && typeof table === 'string') names.add(table);
      Object.values(node).forEach(walk);
    }
  };
  walk(JSON.parse(String(row?.['tree'])));
  return names;
}

/**
 * The plan of the SELECT `sql`: the statement DuckDB judged, written again by
 * DuckDB from its own parse tree (json_serialize_sql, json_deserialize_sql),
 * under a plain EXPLAIN, which shows a plan without running it.
 */
async function preparedExplain(db: Database, sql: string): Promise<DuckDBPreparedStatement> {
  await preparedSelect(db, sql);
  const [row] = await db.all(
    `SELECT json_deserialize_sql(json_serialize_sql(${quotedString(sql)})) AS rebuilt`,
  );
  const rebuilt = row?.['rebuilt'];
  if (typeof rebuilt !== 'string')
    refuse('--explain shows the plan of a SELECT only, and DuckDB did not write this one again');
  const prepared = await db.connection.prepare(`EXPLAIN ${rebuilt}`);
  if ((prepared.statementType as number) !== STATEMENT_TYPES['EXPLAIN'])
    refuse('--explain shows the plan of a SELECT only');
  return prepared;
}

/**
 * The query's result streamed: one statement that only reads, judged by
 * DuckDB (preparedSelect). DuckDB is told first that it may open no file
 * outside the output folder (and its own spill folder, `temp`, inside the
 * folder's copy) and change no setting. A COPY over a landed file, an ATTACH,
 * an INSTALL or a read of /etc/passwd is refused (exit 2), and the folder is
 * left as it was.
 */
async function readOnly(
  db: Database,
  output: string,
  sql: string,
  explain: boolean,
): Promise<DuckDBResult> {
  const folder = output.endsWith('/') ? output : `${output}/`;
  await db.run(`SET allowed_directories = [${quotedString(folder)}]`);
  await db.run(`SET enable_external_access = false`);
  await db.run(`SET lock_configuration = true`);
  try {
    const prepared = explain ? await preparedExplain(db, sql) : await preparedSelect(db, sql);
    return await prepared.stream();
  } catch (error) {
    throw queryError(error, db);
  }
}

/** An error of DuckDB's on a query, in words that fit `query` (what to change, the exit code). */
function queryError(error: unknown, db: Database): Error {
  if (error instanceof InputError) return error;
  const message = (error as Error).message;
  const first = message.split('\n')[0]!.trim();
  if (isOutOfMemory(error))
    return new RunError(
      `query: DuckDB ran out of memory within the ${formatSize(db.memory.memoryLimit)} it was given (${first}); the folder is unchanged. Ask for less at once (fewer columns, a filter on a partition column, an aggregate), or run it where more memory is free`,
      { cause: error },
    );
  // DuckDB's own faults on a read: said as such, not as a fault of the query or the data.
  if (/^INTERNAL Error/i.test(message))
    return new RunError(
      `query: DuckDB failed inside itself on this query (${first}); the folder is unchanged. Try the query in another form, or report it with the query`,
      { cause: error },
    );
  return new InputError(`query: ${message}`, { cause: error });
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
  args: Pick<QueryArgs, 'format' | 'max-rows' | 'explain'>,
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
  if (args.format === 'table' && args.explain) {
    // The plan as DuckDB draws it (explain_value), not cut into a table's cell.
    for await (const chunk of rowsOf()) for (const row of chunk) await write(`${String(row[1])}\n`);
    return;
  }
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
      .option('explain', {
        type: 'boolean',
        default: false,
        describe: 'Show the plan DuckDB makes for the SELECT, without running it',
      })
      .example('$0 query "SHOW TABLES"', 'list the datasets')
      .example(
        '$0 query "SELECT rvv_code, count(*) FROM signs_current_state GROUP BY ALL ORDER BY 2 DESC" --format csv',
        'signs per code',
      ) as unknown as Argv<QueryArgs>,
  handler: (args) =>
    withFolder(outputTarget(args), io.env, async ({ folder: output, files }) => {
      const logger = loggerFor(args, io);
      const write = (text: string): Promise<void> => writeOut(io.stdout, text);
      // DuckDB's spill folder, which it may read and write: its own, inside the folder's copy
      // (or made for this query beside a folder read as it lies), never the working directory's .tmp.
      const spill =
        files === DISK
          ? await mkdtemp(join(tmpdir(), 'road-etl-query-'))
          : join(output, '.state', 'duckdb-tmp');
      const folder = await openOutputFolder(output, {
        derived: DATASET_VIEWS,
        views: false,
        files,
        database: { tempDirectory: spill },
      });
      try {
        const datasets = await folder.refresh();
        if (datasets.length === 0)
          logger.log('warn', 'query.empty', `No datasets in ${output} yet`, { output });
        // A folder in a store: the datasets the query names, fetched before it runs.
        const read = await tablesRead(folder.db, args.sql);
        const names = datasets
          .filter((d) => viewsOf(d).some((view) => read.has(view)))
          .map((d) => d.name);
        await bringDatasets(output, files, { reader: 'the query', logger, names });
        const result = await readOnly(folder.db, output, args.sql, args.explain);
        await printResult(result, args, write).catch((error: unknown) => {
          throw queryError(error, folder.db);
        });
      } finally {
        folder.close();
        if (files === DISK) await rm(spill, { recursive: true, force: true });
      }
    }),
});
