import { committed } from './committed.js';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { duck } from './tmp.js';

export function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

/** Ground truth: content hashes of the simulator's distinct events, in feed order. */
export function truthEventHashes(simulator: Simulator, townCode?: string): string[] {
  return [...simulator.world.distinctEvents(townCode)].map((e) => md5(JSON.stringify(e)));
}

/** Ground truth: content hashes of the current state (as of `at`, default the simulator's now). */
export function truthStateHashes(simulator: Simulator, at?: number): string[] {
  return [...simulator.world.currentState(at)].map((e) => md5(JSON.stringify(e))).sort();
}

const glob = (output: string, dataset: string) =>
  `'${join(output, dataset).replaceAll("'", "''")}/**/*.parquet'`;

/** Hashes of everything landed (events and quarantine), in feed order. */
export async function landedEventHashes(output: string): Promise<string[]> {
  const events = await duck(
    `SELECT event_hash FROM read_parquet(${glob(output, 'signs/events')}, hive_partitioning = true) ORDER BY publication_timestamp, feed_index`,
  );
  return events.map((r) => String(r['event_hash']));
}

export async function quarantinedHashes(output: string): Promise<string[]> {
  const rows = await duck(
    `SELECT event_hash FROM read_parquet(${glob(output, 'signs/quarantine')}) ORDER BY event_hash`,
  ).catch(() => []);
  return rows.map((r) => String(r['event_hash']));
}

export async function tableHashes(output: string, table: string): Promise<string[]> {
  const rows = await duck(
    `SELECT event_hash FROM read_parquet('${committed(output, `derived/${table}/data.parquet`)}') ORDER BY event_hash`,
  );
  return rows.map((r) => String(r['event_hash']));
}

/** A step (YAML) that builds signs_current_state from the events, for signsPipeline's extra steps. */
export const CURRENT_STATE_STEP = `  - id: signs_current_state
    kind: sql
    needs: [signs_events]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
`;

export function signsPipeline(options: Record<string, unknown> = {}, extraSteps = ''): string {
  return `name: signs_test
source:
  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }
steps:
  - id: signs_events
    kind: signs.events
    options: ${JSON.stringify({ backoff_ms: 1, ...options })}
${extraSteps}`;
}

/**
 * The feed, the current state built from its events, and `columns` of that
 * state exported to exports/state.csv (YAML); `more` steps may follow.
 */
export function stateExportPipeline(
  options: Record<string, unknown>,
  columns: string,
  more = '',
): string {
  return signsPipeline(
    options,
    `${CURRENT_STATE_STEP}  - id: export_csv
    kind: export
    needs: [signs_current_state]
    options: { query: "SELECT ${columns} FROM signs_current_state ORDER BY id", path: exports/state.csv }
${more}`,
  );
}

/**
 * An output of stateExportPipeline against the simulator's ground truth: every
 * event landed once, the current state, and one CSV row per sign.
 */
export async function expectStateGroundTruth(simulator: Simulator, output: string): Promise<void> {
  expect(await landedEventHashes(output)).toEqual(truthEventHashes(simulator));
  expect(await tableStateKeys(output, 'signs_current_state')).toEqual(truthStateKeys(simulator));
  const csv = await readFile(join(output, 'exports/state.csv'), 'utf8');
  expect(csv.trim().split('\r\n')).toHaveLength(truthStateKeys(simulator).length + 1);
}

/** What identifies a sign's state, comparable between the simulator's payloads and the typed table. */
export function stateKey(payload: Record<string, unknown>): string {
  const location = payload['location'] as {
    wgs84: { latitude: unknown };
    road: { wvk_id: unknown };
  };
  return [
    payload['id'],
    payload['publication_timestamp'],
    payload['type'],
    payload['rvv_code'],
    Number(location.wgs84.latitude),
    Number(location.road.wvk_id),
  ].join('|');
}

export function truthStateKeys(simulator: Simulator, at?: number): string[] {
  return [...simulator.world.currentState(at)].map(stateKey).sort();
}

export async function tableStateKeys(output: string, table: string): Promise<string[]> {
  const rows = await duck(
    `SELECT id, strftime(publication_timestamp, '%Y-%m-%dT%H:%M:%S.%gZ') AS ts, type, rvv_code, location_wgs84_latitude AS lat, location_road_wvk_id AS wvk
     FROM read_parquet('${committed(output, `derived/${table}/data.parquet`)}')`,
  );
  return rows
    .map((r) =>
      [r['id'], r['ts'], r['type'], r['rvv_code'], Number(r['lat']), Number(r['wvk'])].join('|'),
    )
    .sort();
}

/**
 * The changes between consecutive current states of today's API (the
 * simulator's ground truth), as signs_live_changes states them:
 * "pair sign-id added|removed|changed fields" (pair 1: the first to the second).
 */
export function truthLiveChanges(
  states: readonly { id: string; geometry: unknown; properties: Record<string, unknown> }[][],
): string[] {
  const want: string[] = [];
  for (let i = 1; i < states.length; i++) {
    const before = new Map(states[i - 1]!.map((f) => [f.id, f]));
    const after = new Map(states[i]!.map((f) => [f.id, f]));
    for (const [id, f] of after) {
      const b = before.get(id);
      if (!b) want.push(`${i} ${id} added`);
      else {
        const keys = [...new Set([...Object.keys(f.properties), ...Object.keys(b.properties)])];
        // Named as signs_live's columns are: NDW's camelCase in snake_case.
        const changed = keys
          .filter((k) => JSON.stringify(f.properties[k]) !== JSON.stringify(b.properties[k]))
          .map((k) => k.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase());
        if (JSON.stringify(f.geometry) !== JSON.stringify(b.geometry)) changed.push('geometry');
        if (changed.length > 0) want.push(`${i} ${id} changed ${changed.sort().join(',')}`);
      }
    }
    for (const id of before.keys()) if (!after.has(id)) want.push(`${i} ${id} removed`);
  }
  return want.sort();
}

/** Rows of signs_live_changes as truthLiveChanges writes them: `pair sign change [fields]`, sorted. */
export function changeLines(rows: readonly Record<string, unknown>[]): string[] {
  return rows
    .map(
      (r) =>
        `${String(r['pair'])} ${String(r['sign_id'])} ${String(r['change'])}` +
        (r['change'] === 'changed' ? ` ${(r['changed_fields'] as string[]).join(',')}` : ''),
    )
    .sort();
}

/** `value` as JSON with the members of every object in the order of their names. */
export function canonicalJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, sorted(x)]),
          )
        : v;
  return JSON.stringify(sorted(value));
}

/**
 * A landed row's typed properties (DuckDB's JSON of them) back in NDW's
 * names (snake_case to camelCase, nested ones too), the NULLs left out as
 * NDW leaves them out: what the service served, when the typed columns hold
 * it all.
 */
export function asServed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asServed);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), asServed(v)]),
  );
}

/**
 * The latest snapshot of signs_live in `output`: `<sign id> <its properties as
 * served>` (asServed, canonicalJson), sorted; as truthLive writes the served ones.
 */
export async function landedLive(output: string): Promise<string[]> {
  const files = `read_parquet('${output}/signs/live_snapshots/*/*.parquet', hive_partitioning = true)`;
  const rows = await duck(
    `SELECT sign_id::VARCHAR AS id,
       to_json(t)::VARCHAR AS p
     FROM (
       SELECT * EXCLUDE (longitude, latitude, properties, typing_issues, api, downloaded_at, geometry, bbox, snapshot, snapshot_date, fingerprint)
       FROM ${files}
       WHERE snapshot = (SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM ${files}))
     ) AS t`,
  );
  return rows
    .map((r) => {
      const served = asServed(JSON.parse(String(r['p']))) as Record<string, unknown>;
      delete served['signId'];
      return `${String(r['id'])} ${canonicalJson(served)}`;
    })
    .sort();
}

/** The features served, as landedLive writes the landed ones. */
export const truthLive = (features: readonly { id: string; properties: unknown }[]): string[] =>
  features.map((f) => `${f.id} ${canonicalJson(f.properties)}`).sort();
