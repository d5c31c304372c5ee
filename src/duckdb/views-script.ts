/**
 * `views.sql` at the root of an output folder: the views `road-etl query` has,
 * as SQL that plain DuckDB (CLI, Python, Node, any client) runs from the
 * folder, so that a folder copied or published elsewhere opens without
 * road-etl. Paths are relative to the folder (DuckDB resolves them against
 * its working directory). Written by every run, from the folder as it is then.
 */
import { sep } from 'node:path';
import { scratchFolder } from '../layout.js';
import { writeFileAtomic } from '../util/fs.js';
import { quotedIdentifier, quotedString, type Database } from './database.js';

export const VIEWS_FILE = 'views.sql';

/** The variable views.sql keeps the commit's data files in, and the commit it reads them from. */
const FILES_VARIABLE = 'road_etl_files';
const COMMIT_PATH = '.state/commit.json';

const HEADER = `-- The views of this folder's datasets, as \`road-etl query\` has them, for
-- plain DuckDB (1.5 or later). Run it from this folder, whose paths it names
-- relative to it:
--   duckdb -c ".read views.sql" -c "SELECT count(*) FROM signs_live"
--   python: os.chdir(folder); con = duckdb.connect(); con.execute(open("views.sql").read())
-- Written by every road-etl run; edits are lost at the next run.
-- The SQL of the views reads instants in UTC, as road-etl does.
SET TimeZone = 'UTC';
-- The data files of the folder's commit (.state/commit.json names the object
-- of each), by dataset folder: the views read the commit the folder holds now,
-- the one \`road-etl query\` reads, whenever this file was written.
SET VARIABLE ${FILES_VARIABLE} = (
  SELECT map_from_entries(list((folder, objects)))
  FROM (
    SELECT regexp_extract(f.key, '^(.*?)(/[^/]*=[^/]*)?/[^/]*$', 1) AS folder,
      list(f.value->>'key' ORDER BY f.key) AS objects
    FROM read_json('${COMMIT_PATH}', columns = {files: 'JSON'}, maximum_object_size = 1073741824) AS c,
      json_each(c.files) AS f
    WHERE f.key LIKE '%.parquet' AND NOT starts_with(f.key, 'exports/')
    GROUP BY folder
  )
);
`;

/** The SQL of the files of a dataset (its folder, relative to the output folder's) its commit names. */
export function committedFiles(relative: string): string {
  return `getvariable('${FILES_VARIABLE}')[${quotedString(relative)}]`;
}

/**
 * The views of the folder, as a script with paths relative to it: those of
 * `db`, a DuckDB over the folder that has made them as `road-etl query` does
 * (openOutputFolder with the derived views, no empty views).
 */
export async function viewsScript(
  db: Database,
  output: string,
  /** Views whose query is this rather than the one made in `db`, by name. */
  named: ReadonlyMap<string, string> = new Map(),
): Promise<string> {
  // In the order they were made: a view comes after those it reads.
  const views = await db.all(
    `SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY view_oid`,
  );
  // The folder's absolute path as the SQL quotes it, up to its separator, becomes nothing.
  const absolute = quotedString(output.endsWith(sep) ? output : `${output}${sep}`).slice(0, -1);
  const statements = views.map((view) => {
    const query = named.get(String(view['view_name']));
    const sql =
      query === undefined
        ? String(view['sql'])
        : `CREATE VIEW ${quotedIdentifier(String(view['view_name']))} AS ${query};`;
    return sql
      .split(absolute)
      .join("'")
      .replace(/^CREATE VIEW /, 'CREATE OR REPLACE VIEW ');
  });
  return `${HEADER}\n${statements.join('\n\n')}\n`;
}

/** Writes `views.sql` at the folder's root (atomically), from `db` as viewsScript has it. */
export async function writeViewsScript(
  db: Database,
  output: string,
  named?: ReadonlyMap<string, string>,
): Promise<void> {
  const script = await viewsScript(db, output, named);
  await writeFileAtomic(`${output}${sep}${VIEWS_FILE}`, script, scratchFolder(output));
}
