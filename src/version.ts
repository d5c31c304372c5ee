import { readFileSync } from 'node:fs';
import { installed } from './util/root.js';

/** road-etl's version, from its package.json. */
export const VERSION: string = (
  JSON.parse(readFileSync(installed('package.json'), 'utf8')) as {
    version: string;
  }
).version;
