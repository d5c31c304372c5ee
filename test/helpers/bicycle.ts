import type { Simulator } from '../../src/simulator/index.js';
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { join } from 'node:path';
import { ROOT } from './cli.js';
import { duck } from './tmp.js';

export const BICYCLE_SOURCE = `source:
  bicycle:
    url: \${env.ROAD_ETL_BICYCLE_URL}
    auth_url: \${env.ROAD_ETL_AUTH_URL}
    username: \${env.ROAD_ETL_USERNAME}
    password: \${env.ROAD_ETL_PASSWORD}
    client_id: \${env.ROAD_ETL_CLIENT_ID}
`;

/** Dutch local date and hour of a UTC instant, by the platform's time-zone data (not DuckDB's). */
const local = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Amsterdam',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  hourCycle: 'h23',
  weekday: 'short',
});
export function localParts(iso: string): { date: string; hour: number; weekend: boolean } {
  const parts = Object.fromEntries(
    local.formatToParts(new Date(iso)).map((p) => [p.type, p.value]),
  );
  return {
    date: `${parts['year']}-${parts['month']}-${parts['day']}`,
    hour: Number(parts['hour']),
    weekend: parts['weekday'] === 'Sat' || parts['weekday'] === 'Sun',
  };
}

/** The SQL files of pipelines/bicycle.yaml, in the order its steps run them. */
export const BICYCLE_SQL = [
  'bicycle_hourly.sql',
  'bicycle_counter_days.sql',
  'bicycle_quality.sql',
  'bicycle_daily.sql',
  'bicycle_monthly.sql',
  'bicycle_summary.sql',
];

/** pipelines/bicycle.yaml and its SQL files, as shipped. */
export async function shippedBicycle(): Promise<{ yaml: string; sql: Record<string, string> }> {
  const yaml = await readFile(join(ROOT, 'pipelines', 'bicycle.yaml'), 'utf8');
  const sql = Object.fromEntries(
    await Promise.all(
      BICYCLE_SQL.map(async (f) => [f, await readFile(join(ROOT, 'sql', f), 'utf8')] as const),
    ),
  );
  return { yaml, sql };
}

/**
 * A pipeline definition without its export steps: for tests of the datasets
 * alone, which the extracts (a month of hourly counts as CSV, written again
 * each night) would only make slower.
 */
export function withoutExports(definition: string): string {
  const document = parseDocument(definition);
  const steps = document.toJS() as { steps: { kind: string }[] };
  const kept = steps.steps.filter((step) => step.kind !== 'export');
  document.set('steps', document.createNode(kept));
  return document.toString();
}

/** Both upstreams: the traffic-sign API beside the bicycle API. */
export const SIGNS_AND_BICYCLE_SOURCE = BICYCLE_SOURCE.replace(
  'source:\n',
  `source:\n  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }\n`,
);

/** A pipeline of the catalog and one measurements step with these options. */
export function measurementsPipeline(options: Record<string, unknown>, extra = ''): string {
  return `name: bicycle
${BICYCLE_SOURCE}steps:
  - { id: locations, kind: bicycle.locations, options: { backoff_ms: 1 } }
  - id: measurements
    kind: bicycle.measurements
    needs: [locations]
    options: ${JSON.stringify({ backoff_ms: 1, ...options })}
${extra}`;
}

/** One text per row: location, hour, and the values sorted by category and subcategory. */
function fingerprint(location: string, hour: string, values: [string, string, unknown][]): string {
  const sorted = values
    .map(([c, s, v]) => `${c}/${s}=${v === null ? 'null' : JSON.stringify(v)}`)
    .sort()
    .join(';');
  return `${location} ${hour} ${sorted}`;
}

/**
 * The dataset's rows as fingerprints, sorted: made by DuckDB, as `fingerprint`
 * makes them of the simulator's rows (a value is a BIGINT, written as JSON writes it).
 */
export async function landedMeasurements(output: string): Promise<string[]> {
  const rows = await duck(
    `SELECT location_id || ' ' || strftime(measurement_hour, '%Y-%m-%dT%H:%M:%SZ') || ' ' ||
              array_to_string(list_sort(list_transform(measured_values, v ->
                v.category || '/' || v.subcategory || '=' || coalesce(CAST(v.value AS VARCHAR), 'null')
              )), ';') AS text,
            date = CAST(measurement_hour AS DATE) AS in_its_partition
     FROM read_parquet('${output}/bicycle/measurements/**/*.parquet', hive_partitioning = true)`,
  ).catch((error: unknown) => {
    if (/No files found/.test((error as Error).message)) return [];
    throw error;
  });
  return rows
    .map((r) => {
      if (r['in_its_partition'] !== true)
        throw new Error(`row in the wrong partition: ${JSON.stringify(r)}`);
      return r['text'] as string;
    })
    .sort();
}

/** The simulator's rows for the ids over [from, to) as fingerprints: whole hours kept, the others apart. */
export function truthMeasurements(
  simulator: Simulator,
  ids: readonly string[],
  from: string,
  to: string,
): { kept: string[]; offHour: string[] } {
  const kept: string[] = [];
  const offHour: string[] = [];
  for (const row of simulator.world.measurements(ids, Date.parse(from), Date.parse(to))) {
    const values = Object.entries(row.measuredValuesFull).flatMap(([category, subs]) =>
      Object.entries(subs).map(([sub, value]): [string, string, unknown] => [category, sub, value]),
    );
    const text = fingerprint(row.locationId, row.measurementHour, values);
    if (row.measurementHour.endsWith(':00:00Z')) kept.push(text);
    else offHour.push(`${row.locationId} ${row.measurementHour}`);
  }
  return { kept: kept.sort(), offHour: offHour.sort() };
}

/** Ids of the simulator's catalog that start with one of the prefixes. */
export function idsWithPrefix(simulator: Simulator, ...prefixes: string[]): string[] {
  return simulator.world.bicycle.locations
    .filter((l) => prefixes.some((p) => l.id.startsWith(p)))
    .map((l) => l.id)
    .sort();
}

/**
 * The location-hours of `ids` in the `days` before `start` (from `since` on)
 * that a location could count (its validity) but the simulator does not serve:
 * what the lookback of a night from `start` asks for again.
 */
export function lookbackGaps(
  simulator: Simulator,
  ids: readonly string[],
  start: number,
  { days = 7, since = 0 }: { days?: number; since?: number } = {},
): { locations: string[]; hours: number } {
  const bicycle = simulator.world.bicycle;
  const locations = new Set<string>();
  let hours = 0;
  for (const id of ids) {
    const l = bicycle.byId(id)!;
    for (let h = Math.max(start - days * 86_400_000, since); h < start; h += 3_600_000) {
      if (h < l.validFrom || (l.validUntil !== undefined && h >= l.validUntil)) continue;
      if (bicycle.hasMeasurement(l, h, simulator.world.now)) continue;
      locations.add(id);
      hours++;
    }
  }
  return { locations: [...locations].sort(), hours };
}

/**
 * The UTC dates (YYYY-MM-DD) a night over [start, start + 1 day) rewrites: its
 * own, and those from the first hour in the `days` before it that a location
 * of `ids` could count but the simulator does not serve (from `since`, the
 * folder's first hour, on), which the lookback asks for again.
 */
export function nightDates(
  simulator: Simulator,
  ids: readonly string[],
  start: number,
  { days = 7, since = 0 }: { days?: number; since?: number } = {},
): string[] {
  const bicycle = simulator.world.bicycle;
  const HOUR = 3_600_000;
  let first = start;
  for (const id of ids) {
    const l = bicycle.byId(id)!;
    for (let h = Math.max(start - days * 86_400_000, since); h < first; h += HOUR) {
      if (h < l.validFrom || (l.validUntil !== undefined && h >= l.validUntil)) continue;
      if (!bicycle.hasMeasurement(l, h, simulator.world.now)) first = h;
    }
  }
  const dates: string[] = [];
  for (let d = Math.floor(first / 86_400_000) * 86_400_000; d <= start; d += 86_400_000)
    dates.push(new Date(d).toISOString().slice(0, 10));
  return dates;
}
