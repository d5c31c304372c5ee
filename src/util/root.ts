/**
 * Where road-etl is installed: the folder of its package.json, src/ (the engine
 * SQL) and dist/ (the report page's scripts). Two levels above this module,
 * whether it runs as src/util/root.ts, dist/util/root.js or inside the bundle
 * dist/bundle/main.js (rolldown.config.js), so the bundle stays at that depth.
 */
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../../', import.meta.url);

/** The absolute path of `path` (relative to the install folder). */
export function installed(path: string): string {
  return fileURLToPath(new URL(path, ROOT));
}
