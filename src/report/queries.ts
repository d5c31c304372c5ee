/**
 * The report's numbers: DuckDB queries over the output's datasets (each a view,
 * as `road-etl query` has them), aggregated so that what the page receives is
 * small whatever the scale: counts per category, per week, per day and
 * location, and at most `mapSigns` signs drawn (a repeatable random sample
 * beyond that, stated as such on the page).
 */
import { quotedIdentifier, type Database, type Row } from '../duckdb/database.js';
import { DERIVED_FOLDER, latestSnapshotView, type Dataset } from '../duckdb/datasets.js';
import type {
  BicycleSection,
  Count,
  QualitySection,
  ReportData,
  SignPoints,
  SignState,
  SignsSection,
} from './data.js';

export interface QueryOptions {
  /** Signs drawn on a map at most; beyond it a random sample. */
  mapSigns: number;
  /** Rows of a ranking (codes, towns, reasons) before the rest is summed. */
  top: number;
}

const num = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));
const text = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value as string | number | boolean);

/** The views the report can read, with their columns. */
export class Views {
  readonly #columns = new Map<string, Set<string>>();

  private constructor(readonly db: Database) {}

  static async of(db: Database): Promise<Views> {
    const views = new Views(db);
    const rows = await db.all(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'`,
    );
    for (const row of rows) {
      const name = String(row['table_name']);
      const columns = views.#columns.get(name) ?? new Set<string>();
      columns.add(String(row['column_name']));
      views.#columns.set(name, columns);
    }
    return views;
  }

  has(view: string, ...columns: string[]): boolean {
    const known = this.#columns.get(view);
    return known !== undefined && columns.every((c) => known.has(c));
  }

  names(): string[] {
    return [...this.#columns.keys()].sort();
  }

  all(sql: string): Promise<Row[]> {
    return this.db.all(sql);
  }
}

/** Rows as [label, count], most frequent first, the rest past `top` summed under `rest`. */
async function ranking(
  views: Views,
  from: string,
  label: string,
  top: number,
  rest: string,
): Promise<Count[]> {
  const rows = await views.all(
    `SELECT coalesce(CAST(${label} AS VARCHAR), '(none)') AS label, count(*) AS n FROM ${from} GROUP BY 1 ORDER BY n DESC, label`,
  );
  const counts: Count[] = rows.map((r) => [String(r['label']), num(r['n'])]);
  if (counts.length <= top + 1) return counts;
  const others = counts.slice(top).reduce((sum, [, n]) => sum + n, 0);
  return [...counts.slice(0, top), [`${rest} (${counts.length - top})`, others]];
}

interface SignColumns {
  id: string;
  longitude: string;
  latitude: string;
  rvvCode: string;
  road: string;
  town: string;
  text: string;
  image: string;
}

const CURRENT_STATE: SignColumns = {
  id: 'CAST(id AS VARCHAR)',
  longitude: 'location_wgs84_longitude',
  latitude: 'location_wgs84_latitude',
  rvvCode: 'rvv_code',
  road: 'location_road_name',
  town: 'location_county_townname',
  text: `array_to_string(text_signs, ' / ')`,
  image: 'details_image',
};

const LIVE: SignColumns = {
  id: 'CAST(sign_id AS VARCHAR)',
  longitude: 'longitude',
  latitude: 'latitude',
  rvvCode: 'rvv_code',
  road: 'road_name',
  // v5 names the municipality only (county_name); v4 also the town.
  town: 'coalesce(town_name, county_name)',
  text: `array_to_string(list_transform(text_signs, t -> t.text), ' / ')`,
  image: 'image_url',
};

/** The RVV category of a code: the letters it starts with (A, B, ..., OB). */
const RVV_CATEGORY_SQL = (code: string): string =>
  `coalesce(nullif(regexp_extract(upper(${code}), '^[A-Z]+'), ''), '(none)')`;

async function signPoints(
  views: Views,
  view: string,
  c: SignColumns,
  limit: number,
): Promise<SignPoints> {
  const where = `${c.longitude} IS NOT NULL AND ${c.latitude} IS NOT NULL`;
  const [count] = await views.all(`SELECT count(*) AS n FROM ${view} WHERE ${where}`);
  const total = num(count?.['n']);
  const sample = total > limit ? `USING SAMPLE reservoir(${limit} ROWS) REPEATABLE (1)` : '';
  const rows = await views.all(
    `SELECT * FROM (SELECT ${c.id} AS id, CAST(${c.longitude} AS DOUBLE) AS lon, CAST(${c.latitude} AS DOUBLE) AS lat,
       ${c.rvvCode} AS code, ${c.road} AS road, ${c.town} AS town, ${c.text} AS text, ${c.image} AS image
     FROM ${view} WHERE ${where} ${sample}) ORDER BY id`,
  );
  const points: SignPoints = {
    total,
    shown: rows.length,
    id: [],
    longitude: [],
    latitude: [],
    rvvCode: [],
    road: [],
    town: [],
    text: [],
    image: [],
  };
  for (const row of rows) {
    points.id.push(String(row['id']));
    points.longitude.push(Math.round(num(row['lon']) * 1e6) / 1e6);
    points.latitude.push(Math.round(num(row['lat']) * 1e6) / 1e6);
    points.rvvCode.push(text(row['code']));
    points.road.push(text(row['road']));
    points.town.push(text(row['town']));
    points.text.push(text(row['text']) || null);
    points.image.push(text(row['image']));
  }
  return points;
}

async function signState(
  views: Views,
  view: string,
  title: string,
  c: SignColumns,
  options: QueryOptions,
): Promise<SignState> {
  const [count] = await views.all(`SELECT count(*) AS n FROM ${view}`);
  return {
    view,
    title,
    signs: num(count?.['n']),
    byCategory: await ranking(views, view, RVV_CATEGORY_SQL(c.rvvCode), 30, 'other categories'),
    byCode: await ranking(views, view, c.rvvCode, options.top, 'other codes'),
    byTown: await ranking(views, view, c.town, options.top, 'other towns'),
    points: await signPoints(views, view, c, options.mapSigns),
  };
}

/** A snapshot partition's name (20261123T155259616Z) as an ISO moment (2026-11-23T15:52:59Z). */
export function snapshotMoment(snapshot: string | null): string | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})\d*Z$/.exec(snapshot ?? '');
  return m ? `${m[1]!}-${m[2]!}-${m[3]!}T${m[4]!}:${m[5]!}:${m[6]!}Z` : snapshot;
}

async function signsSection(views: Views, options: QueryOptions): Promise<SignsSection | null> {
  const section: SignsSection = { states: [] };
  if (views.has('signs_live', 'sign_id', 'longitude', 'latitude', 'rvv_code'))
    section.states.push(
      await signState(views, 'signs_live', "Today's API (signs.live)", LIVE, options),
    );
  if (views.has('signs_current_state', 'id', 'location_wgs84_longitude', 'rvv_code'))
    section.states.push(
      await signState(
        views,
        'signs_current_state',
        'Current state from the event feed (signs_current_state)',
        CURRENT_STATE,
        options,
      ),
    );

  if (views.has('signs_events', 'id', 'type', 'publication_timestamp')) {
    const [totals] = await views.all(
      `SELECT count(*) AS events, count(DISTINCT id) AS signs,
              strftime(min(publication_timestamp), '%Y-%m-%dT%H:%M:%SZ') AS first,
              strftime(max(publication_timestamp), '%Y-%m-%dT%H:%M:%SZ') AS last
       FROM signs_events`,
    );
    const rows = await views.all(
      `WITH per_week AS (
         SELECT CAST(date_trunc('week', publication_timestamp) AS DATE) AS week,
                count(*) FILTER (WHERE type = 'created') AS created,
                count(*) FILTER (WHERE type = 'updated') AS updated,
                count(*) FILTER (WHERE type = 'deleted') AS deleted
         FROM signs_events GROUP BY 1
       ),
       weeks AS (
         SELECT CAST(range AS DATE) AS week
         FROM range((SELECT min(week) FROM per_week), (SELECT max(week) FROM per_week) + INTERVAL 7 DAY, INTERVAL 7 DAY)
       )
       SELECT strftime(w.week, '%Y-%m-%d') AS week, coalesce(created, 0) AS created,
              coalesce(updated, 0) AS updated, coalesce(deleted, 0) AS deleted,
              -- the feed read so far begins or ends inside the week
              b.first > w.week OR b.last < w.week + INTERVAL 7 DAY AS partial
       FROM weeks w LEFT JOIN per_week USING (week)
       CROSS JOIN (SELECT min(publication_timestamp) AS first, max(publication_timestamp) AS last FROM signs_events) b
       ORDER BY w.week`,
    );
    section.events = {
      events: num(totals?.['events']),
      signs: num(totals?.['signs']),
      first: text(totals?.['first']),
      last: text(totals?.['last']),
      weeks: {
        week: rows.map((r) => String(r['week'])),
        created: rows.map((r) => num(r['created'])),
        updated: rows.map((r) => num(r['updated'])),
        deleted: rows.map((r) => num(r['deleted'])),
        partial: rows.map((r) => r['partial'] === true),
      },
    };
  }

  if (views.has('signs_reconcile', 'id', 'difference', 'differing_fields')) {
    const [count] = await views.all(`SELECT count(*) AS n FROM signs_reconcile`);
    const examples = await views.all(
      `SELECT CAST(id AS VARCHAR) AS id, difference, array_to_string(differing_fields, ', ') AS fields
       FROM signs_reconcile ORDER BY difference, id LIMIT 20`,
    );
    section.reconcile = {
      differences: num(count?.['n']),
      byDifference: await ranking(views, 'signs_reconcile', 'difference', options.top, 'other'),
      byField: await ranking(
        views,
        '(SELECT unnest(differing_fields) AS field FROM signs_reconcile)',
        'field',
        options.top,
        'other fields',
      ),
      examples: examples.map((r) => ({
        id: String(r['id']),
        difference: String(r['difference']),
        fields: text(r['fields']) ?? '',
      })),
    };
  }

  if (views.has('signs_live_snapshots', 'snapshot')) {
    const [snapshots] = await views.all(
      `SELECT count(*) AS n, CAST(min(snapshot) AS VARCHAR) AS first, CAST(max(snapshot) AS VARCHAR) AS latest
       FROM (SELECT DISTINCT snapshot FROM signs_live_snapshots)`,
    );
    const live: NonNullable<SignsSection['live']> = {
      snapshots: num(snapshots?.['n']),
      first: snapshotMoment(text(snapshots?.['first'])),
      latest: snapshotMoment(text(snapshots?.['latest'])),
      changes: { moment: [], added: [], removed: [], changed: [] },
      byField: [],
    };
    if (views.has('signs_live_changes', 'to_moment', 'change', 'changed_fields')) {
      const rows = await views.all(
        `SELECT strftime(to_moment, '%Y-%m-%dT%H:%M:%SZ') AS moment,
                count(*) FILTER (WHERE change = 'added') AS added,
                count(*) FILTER (WHERE change = 'removed') AS removed,
                count(*) FILTER (WHERE change = 'changed') AS changed
         FROM signs_live_changes GROUP BY to_moment ORDER BY to_moment`,
      );
      live.changes = {
        moment: rows.map((r) => String(r['moment'])),
        added: rows.map((r) => num(r['added'])),
        removed: rows.map((r) => num(r['removed'])),
        changed: rows.map((r) => num(r['changed'])),
      };
      live.byField = await ranking(
        views,
        '(SELECT unnest(changed_fields) AS field FROM signs_live_changes)',
        'field',
        options.top,
        'other fields',
      );
    }
    section.live = live;
  }

  const empty = section.states.length === 0 && !section.events && !section.reconcile;
  return empty && !section.live ? null : section;
}

/**
 * Cyclists per location and hour: the largest of its categories' sums. Every
 * category divides the same passages (by direction, vehicle, speed, length),
 * and a category the equipment does not measure has no values, so the largest
 * sum is the count of cyclists.
 */
const LOCATION_HOURS_SQL = `CREATE OR REPLACE TEMP TABLE report_location_hours AS
SELECT location_id, measurement_hour, local_date, local_hour_of_day, max(category_sum) AS cyclists
FROM (
  SELECT location_id, measurement_hour, local_date, local_hour_of_day, category, sum(value) AS category_sum
  FROM bicycle_hourly GROUP BY ALL
)
GROUP BY ALL`;

async function bicycleSection(views: Views): Promise<BicycleSection | null> {
  const catalog = views.has('bicycle_locations', 'location_id', 'longitude', 'latitude');
  const hourly = views.has(
    'bicycle_hourly',
    'location_id',
    'measurement_hour',
    'local_date',
    'local_hour_of_day',
    'category',
    'value',
  );
  if (!catalog && !hourly && !views.has('bicycle_measurements')) return null;
  const section: BicycleSection = {
    locations: 0,
    measuredLocations: 0,
    firstHour: null,
    lastHour: null,
    cyclists: 0,
    locationHours: 0,
    points: [],
    days: { date: [], hours: [], measuredHours: [], total: [], partial: [] },
    perLocation: [],
    profile: { weekday: [], weekend: [] },
    completeness: [],
    leastComplete: [],
  };
  if (catalog) {
    const [count] = await views.all(`SELECT count(*) AS n FROM bicycle_locations`);
    section.locations = num(count?.['n']);
  }
  if (!hourly) {
    section.missing =
      'No hourly bicycle counts (the dataset bicycle_hourly): run the SQL step of sql/bicycle_hourly.sql after bicycle.measurements.';
    if (catalog) section.points = points(await locations(views, catalog, undefined));
    return section;
  }
  await views.db.run(LOCATION_HOURS_SQL);
  try {
    const [totals] = await views.all(
      `SELECT count(DISTINCT location_id) AS locations, count(*) AS hours, sum(cyclists) AS cyclists,
              strftime(min(measurement_hour), '%Y-%m-%dT%H:%M:%SZ') AS first,
              strftime(max(measurement_hour), '%Y-%m-%dT%H:%M:%SZ') AS last
       FROM report_location_hours`,
    );
    section.measuredLocations = num(totals?.['locations']);
    section.locationHours = num(totals?.['hours']);
    section.cyclists = num(totals?.['cyclists']);
    section.firstHour = text(totals?.['first']);
    section.lastHour = text(totals?.['last']);

    const days = await views.all(
      `WITH span AS (SELECT min(local_date) AS first, max(local_date) AS last FROM report_location_hours),
       dates AS (SELECT CAST(range AS DATE) AS local_date FROM range((SELECT first FROM span), (SELECT last FROM span) + INTERVAL 1 DAY, INTERVAL 1 DAY)),
       totals AS (SELECT local_date, sum(cyclists) AS total, count(DISTINCT measurement_hour) AS measured FROM report_location_hours GROUP BY 1)
       SELECT strftime(local_date, '%Y-%m-%d') AS date, coalesce(measured, 0) AS measured,
              CAST((epoch(timezone('Europe/Amsterdam', CAST(local_date + 1 AS TIMESTAMP)))
                  - epoch(timezone('Europe/Amsterdam', CAST(local_date AS TIMESTAMP)))) / 3600 AS INTEGER) AS hours,
              coalesce(total, 0) AS total
       FROM dates LEFT JOIN totals USING (local_date) ORDER BY local_date`,
    );
    section.days = {
      date: days.map((r) => String(r['date'])),
      hours: days.map((r) => num(r['hours'])),
      measuredHours: days.map((r) => num(r['measured'])),
      total: days.map((r) => num(r['total'])),
      partial: days.map((r) => num(r['measured']) < num(r['hours'])),
    };
    const index = new Map(section.days.date.map((d, i) => [d, i]));
    const names = catalog
      ? new Map(
          (await views.all(`SELECT location_id, name FROM bicycle_locations`)).map((r) => [
            String(r['location_id']),
            text(r['name']),
          ]),
        )
      : new Map<string, string | null>();
    const perDay = await views.all(
      `SELECT location_id, strftime(local_date, '%Y-%m-%d') AS date, sum(cyclists) AS total
       FROM report_location_hours GROUP BY ALL ORDER BY location_id, date`,
    );
    const byLocation = new Map<string, (number | null)[]>();
    for (const row of perDay) {
      const id = String(row['location_id']);
      let series = byLocation.get(id);
      if (!series) {
        series = section.days.date.map(() => null);
        byLocation.set(id, series);
      }
      const at = index.get(String(row['date']));
      if (at !== undefined) series[at] = row['total'] === null ? null : num(row['total']);
    }
    section.perLocation = [...byLocation].map(([id, total]) => ({
      id,
      name: names.get(id) ?? null,
      total,
    }));

    const profile = await views.all(
      `SELECT CASE WHEN isodow(local_date) >= 6 THEN 'weekend' ELSE 'weekday' END AS day_type,
              local_hour_of_day AS hour, round(avg(cyclists), 2) AS mean
       FROM report_location_hours GROUP BY ALL`,
    );
    const hours = (dayType: string): (number | null)[] =>
      Array.from({ length: 24 }, (_, hour) => {
        const row = profile.find((r) => r['day_type'] === dayType && num(r['hour']) === hour);
        return row && row['mean'] !== null ? num(row['mean']) : null;
      });
    section.profile = { weekday: hours('weekday'), weekend: hours('weekend') };

    // Completeness of each location over the span measured: hours present / hours in it.
    const [span] = await views.all(
      `SELECT CAST(epoch(max(measurement_hour) - min(measurement_hour)) / 3600 + 1 AS INTEGER) AS hours FROM report_location_hours`,
    );
    const spanHours = Math.max(1, num(span?.['hours']));
    const located = await locations(views, catalog, spanHours);
    section.points = points(located);
    const buckets: [string, (c: number | null) => boolean][] = [
      ['100%', (c) => c !== null && c >= 1],
      ['99% to 100%', (c) => c !== null && c >= 0.99 && c < 1],
      ['90% to 99%', (c) => c !== null && c >= 0.9 && c < 0.99],
      ['50% to 90%', (c) => c !== null && c >= 0.5 && c < 0.9],
      ['under 50%', (c) => c !== null && c < 0.5],
      ['no measurement', (c) => c === null],
    ];
    section.completeness = buckets.map(([label, test]) => [
      label,
      located.filter((l) => test(l.completeness)).length,
    ]);
    section.leastComplete = located
      .filter(
        (l): l is Located & { completeness: number } =>
          l.completeness !== null && l.completeness < 1,
      )
      .map(({ id, name, completeness }) => ({ id, name, completeness }))
      .sort((a, b) => a.completeness - b.completeness || a.id.localeCompare(b.id))
      .slice(0, 10);
  } finally {
    await views.db.run(`DROP TABLE IF EXISTS report_location_hours`);
  }
  return section;
}

/** A location with its position (where the catalog has it) and its numbers over the period. */
type Located = Omit<BicycleSection['points'][number], 'longitude' | 'latitude'> & {
  longitude: number | null;
  latitude: number | null;
};

/**
 * Every location, the catalog's (else the measured ones), with the cyclists
 * it counted and its completeness over the `spanHours` measured; both null
 * where it has no count, or where there are no hourly counts (no span).
 */
async function locations(
  views: Views,
  catalog: boolean,
  spanHours: number | undefined,
): Promise<Located[]> {
  const totals =
    spanHours === undefined
      ? `(SELECT NULL::VARCHAR AS location_id, NULL::HUGEINT AS cyclists, NULL::BIGINT AS present WHERE false)`
      : `(SELECT location_id, sum(cyclists) AS cyclists, count(DISTINCT measurement_hour) AS present
          FROM report_location_hours GROUP BY 1)`;
  const rows = await views.all(
    `SELECT location_id, ${catalog ? 'l.name, l.authority, l.longitude, l.latitude' : 'NULL AS name, NULL AS authority, NULL AS longitude, NULL AS latitude'},
            t.cyclists, round(t.present / ${spanHours ?? 1}, 4) AS completeness
     FROM ${catalog ? `bicycle_locations l LEFT JOIN ${totals} t USING (location_id)` : `${totals} t`}
     ORDER BY location_id`,
  );
  const orNull = (value: unknown): number | null => (value === null ? null : num(value));
  return rows.map((r) => ({
    id: String(r['location_id']),
    name: text(r['name']),
    authority: text(r['authority']),
    longitude: orNull(r['longitude']),
    latitude: orNull(r['latitude']),
    cyclists: orNull(r['cyclists']),
    completeness: orNull(r['completeness']),
  }));
}

/** The locations that have a position, to draw. */
function points(located: readonly Located[]): BicycleSection['points'] {
  return located.filter(
    (l): l is Located & { longitude: number; latitude: number } =>
      l.longitude !== null && l.latitude !== null,
  );
}

async function qualitySection(
  views: Views,
  datasets: readonly Dataset[],
  options: QueryOptions,
): Promise<QualitySection> {
  const quality: QualitySection = { quarantine: [], typing: [] };
  for (const dataset of datasets) {
    const view = quotedIdentifier(dataset.name);
    if (dataset.name.endsWith('quarantine') && views.has(dataset.name, 'reason')) {
      const [count] = await views.all(
        `SELECT count(*) AS n, any_value(reason) AS example FROM ${view}`,
      );
      quality.quarantine.push({
        dataset: dataset.name,
        rows: num(count?.['n']),
        // The reason without the value it quotes: "id is not an integer: x7" -> "id is not an integer"
        byReason: await ranking(
          views,
          view,
          `trim(regexp_replace(reason, '[:(].*$', '', 's'))`,
          options.top,
          'other reasons',
        ),
        example: text(count?.['example']),
      });
      continue;
    }
    if (dataset.relative.startsWith(`${DERIVED_FOLDER}/`)) continue;
    // A dataset of snapshots is judged by its latest snapshot, as its users read it.
    const name = latestSnapshotView(dataset) ?? dataset.name;
    if (!views.has(name, 'typing_issues')) continue;
    const from = quotedIdentifier(name);
    const [count] = await views.all(
      `SELECT count(*) AS n, count(*) FILTER (WHERE len(typing_issues) > 0) AS with_issues FROM ${from}`,
    );
    quality.typing.push({
      dataset: name,
      rows: num(count?.['n']),
      rowsWithIssues: num(count?.['with_issues']),
      byField: await ranking(
        views,
        // The field and what is wrong with it ("road_name: mis-encoded UTF-8"), the value apart.
        `(SELECT regexp_replace(unnest(typing_issues), ' \\(.*$', '', 's') AS field FROM ${from} WHERE len(typing_issues) > 0)`,
        'field',
        options.top,
        'other fields',
      ),
    });
  }
  return quality;
}

export async function queryReport(
  db: Database,
  datasets: readonly Dataset[],
  options: QueryOptions,
): Promise<Pick<ReportData, 'datasets' | 'signs' | 'bicycle' | 'quality'>> {
  const views = await Views.of(db);
  const counted: ReportData['datasets'] = [];
  for (const dataset of datasets) {
    const [row] = await views.all(`SELECT count(*) AS n FROM ${quotedIdentifier(dataset.name)}`);
    counted.push({ name: dataset.name, path: dataset.relative, rows: num(row?.['n']) });
  }
  return {
    datasets: counted,
    signs: await signsSection(views, options),
    bicycle: await bicycleSection(views),
    quality: await qualitySection(views, datasets, options),
  };
}
