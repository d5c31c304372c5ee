/**
 * Which way a download's features are typed (typedLines; live-members.ts):
 * the strict way, unless a sample of the features holds members NDW's
 * schemas do not name, which the strict way leaves out, or a feature does not
 * fit the schemas' shapes; then the lenient way, the properties kept whole.
 *
 * The sample is windows spread evenly over the file of features, one per
 * line (a national file: 256 windows of 64 kB, about 23,000 of its 3M
 * features, parsed in about 0.1 s), so that a member NDW adds to many signs is
 * found on the first night it is served; one that only a few signs in a
 * million carry can be missed.
 */
import { open } from 'node:fs/promises';
import type { Database } from '../../duckdb/database.js';
import { firstLineOf } from '../../errors.js';
import type { Judged } from './live-judge.js';
import { PROPERTY_SHAPES, lenientMembers, strictMembers, unknownMembers } from './live-members.js';

export interface LiveDownload {
  /** The downloaded file, in `staging`: read only (a local bulk file is linked there, not copied). */
  file: string;
  format: 'geojson' | 'csv';
  api: 'v4' | 'v5';
  /** When it was downloaded: the snapshot's moment. */
  downloadedAt: number;
  staging: string;
  output: string;
  scratch: string;
  stepId: string;
  /** Told why the quick way was not taken (the file cut a second time, or the lines read whole). */
  note?: (message: string) => void;
  /** Told why the properties are kept whole (members the schemas do not name, values of another shape). */
  warn?: (message: string) => void;
  /**
   * Whether the typed snapshot (`file`, of `rows` signs out of `features`) can
   * be the day's truth (live-judge.ts): why not, and the signs it holds twice
   * with the same content, which are kept once. Asked before anything is put
   * in place.
   */
  judge?: (file: string, rows: number, features: number) => Promise<Judged>;
}

/** Runs a COPY (with its values) and resolves to the rows it wrote. */
export type Copier = (sql: string, values?: Record<string, string>) => Promise<number>;

/** The typed features that can be rows, written to a file. */
export type Keep = (copy: Copier, features: string) => Promise<number>;

export interface Sampled {
  /** Features parsed. */
  features: number;
  /** Each member the schemas do not name (a dotted path within the properties), with the features that have it. */
  unnamed: Map<string, number>;
}

/** The complete lines of `bytes` (a window at `position` of a file of `size` bytes). */
function wholeLines(bytes: Buffer, position: number, size: number): string[] {
  const lines = bytes.toString('utf8').split('\n');
  if (position > 0) lines.shift();
  if (position + bytes.length < size) lines.pop();
  return lines.filter((line) => line.trim() !== '');
}

/** Samples the features of `file` (GeoJSON features, one per line); a line that is not JSON is the reader's to refuse. */
export async function sampleFeatures(
  file: string,
  windows = 256,
  width = 64 << 10,
): Promise<Sampled> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const whole = size <= windows * width;
    const count = whole ? 1 : windows;
    const length = whole ? size : width;
    const buffer = Buffer.alloc(length);
    const sampled: Sampled = { features: 0, unnamed: new Map() };
    for (let i = 0; i < count; i++) {
      const position = count === 1 ? 0 : Math.floor((i * (size - length)) / (count - 1));
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      for (const line of wholeLines(buffer.subarray(0, bytesRead), position, size)) {
        let feature: unknown;
        try {
          feature = JSON.parse(line);
        } catch {
          continue;
        }
        sampled.features++;
        const found = new Set<string>();
        const properties = (feature as { properties?: unknown } | null)?.properties;
        unknownMembers(properties, PROPERTY_SHAPES, '', found);
        for (const path of found) sampled.unnamed.set(path, (sampled.unnamed.get(path) ?? 0) + 1);
      }
    }
    return sampled;
  } finally {
    await handle.close();
  }
}

/**
 * The features of a file of lines typed (`keep`): the strict way, unless a
 * sample of them holds members the schemas do not name or a feature does not
 * fit the schemas' shapes; then the lenient way, the properties kept whole
 * (live-members.ts). Errors of the lenient read are the caller's to explain.
 */
export async function typedLines(
  db: Database,
  download: LiveDownload,
  lines: string,
  keep: Keep,
): Promise<{ rows: number; propertiesKept: boolean }> {
  const copy = db.copy.bind(db);
  const lenient = async () => ({
    rows: await keep(copy, lenientMembers(lines)),
    propertiesKept: true,
  });
  const sample = await sampleFeatures(lines);
  if (sample.unnamed.size > 0) {
    const named = [...sample.unnamed]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([path, n]) => `${path} (${n.toLocaleString('en')})`);
    download.warn?.(
      `the ${download.api} answer has properties road-etl does not type: ${named.join(', ')} ` +
        `of ${sample.features.toLocaleString('en')} features sampled; each feature's properties are kept whole in \`properties\``,
    );
    return lenient();
  }
  let misfit: unknown;
  try {
    return { rows: await keep(copy, strictMembers(lines)), propertiesKept: false };
  } catch (error) {
    misfit = error;
  }
  // Said once the lenient read holds: where it fails too, the lines are not what they seem.
  const typed = await lenient();
  download.warn?.(
    `a feature of the ${download.api} answer does not fit NDW's schema (${firstLineOf(misfit)}): ` +
      `what does not fit is NULL, and each feature's properties are kept whole in \`properties\``,
  );
  return typed;
}
