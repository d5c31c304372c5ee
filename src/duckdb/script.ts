/**
 * Runs a .sql file statement by statement. Named parameters ($name) are bound
 * from the step's params, never pasted into the text; a statement that names a
 * parameter the step does not give is refused before anything runs.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import type { Database } from './database.js';

export type SqlParams = Record<string, string | number | boolean | null>;

export class SqlScriptError extends Error {
  override name = 'SqlScriptError';
  readonly statement: number;
  constructor(message: string, statement: number, options?: ErrorOptions) {
    super(message, options);
    this.statement = statement;
  }
}

export interface ScriptStatement {
  index: number;
  parameters: string[];
}

/**
 * Runs the statements in order, each prepared and bound on its own (a later
 * statement may read what an earlier one created). Everything happens inside
 * DuckDB: files are written only after the script has finished.
 */
export async function runSqlScript(
  db: Database,
  sql: string,
  params: SqlParams,
): Promise<ScriptStatement[]> {
  let extracted;
  try {
    extracted = await db.connection.extractStatements(sql);
  } catch (error) {
    throw new SqlScriptError((error as Error).message, 1, { cause: error });
  }
  const done: ScriptStatement[] = [];
  for (let index = 0; index < extracted.count; index++) {
    let prepared;
    try {
      prepared = await extracted.prepare(index);
    } catch (error) {
      throw new SqlScriptError((error as Error).message, index + 1, { cause: error });
    }
    const names = Array.from({ length: prepared.parameterCount }, (_, k) =>
      prepared.parameterName(k + 1),
    );
    const missing = names.filter((name) => !(name in params));
    if (missing.length > 0) {
      throw new SqlScriptError(
        `uses ${missing.map((m) => `$${m}`).join(', ')}, which the step's params do not give`,
        index + 1,
      );
    }
    const values: Record<string, DuckDBValue> = {};
    for (const name of names) values[name] = params[name] as DuckDBValue;
    if (names.length > 0) prepared.bind(values);
    try {
      await prepared.run();
    } catch (error) {
      throw new SqlScriptError((error as Error).message, index + 1, { cause: error });
    }
    done.push({ index: index + 1, parameters: names });
  }
  return done;
}
