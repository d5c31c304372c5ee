/**
 * Engine SQL kept as files beside the code that runs it (src/<folder>/sql/*.sql):
 * readable and runnable on their own (`duckdb` with the output's views), with
 * values bound as $name, never pasted. Read from the source tree whether the
 * code runs from src/, dist/ or the bundle, once per process.
 */
import { readFile } from 'node:fs/promises';
import { installed } from '../util/root.js';

const read = new Map<string, Promise<string>>();

/** The text of src/<folder>/sql/<name>.sql. */
export function engineSql(folder: string, name: string): Promise<string> {
  const path = installed(`src/${folder}/sql/${name}.sql`);
  let text = read.get(path);
  if (!text) {
    text = readFile(path, 'utf8');
    read.set(path, text);
  }
  return text;
}
