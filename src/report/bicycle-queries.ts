/**
 * The report's bicycle numbers: the cyclists per location and hour (sql/
 * location_hours.sql) summed per day, per location and per hour of the day,
 * and each location's completeness over the span measured. The SQL is in sql/.
 */
import type { BicycleHealth, BicycleSection } from './data.js';
import { num, text, type Views } from './views.js';

/** A location with its position (where the catalog has it) and its numbers over the period. */
type Located = Omit<BicycleSection['points'][number], 'longitude' | 'latitude'> & {
  longitude: number | null;
  latitude: number | null;
};

function emptySection(): BicycleSection {
  return {
    locations: 0,
    measuredLocations: 0,
    firstHour: null,
    lastHour: null,
    cyclists: 0,
    locationHours: 0,
    points: [],
    days: { date: [], hours: [], periodHours: [], measuredHours: [], total: [], partial: [] },
    perLocation: [],
    profile: { weekday: [], weekend: [] },
    completeness: [],
    leastComplete: [],
  };
}

/**
 * Every location, the catalog's (else the measured ones), with the cyclists
 * it counted and its completeness over the `spanHours` measured; both null
 * where it has no count.
 */
async function locations(views: Views, catalog: boolean, spanHours: number): Promise<Located[]> {
  const rows = await views.query(
    catalog ? 'bicycle_catalog_locations' : 'bicycle_measured_locations',
    { span_hours: spanHours },
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

async function days(views: Views): Promise<BicycleSection['days']> {
  const rows = await views.query('bicycle_days');
  return {
    date: rows.map((r) => String(r['date'])),
    hours: rows.map((r) => (r['hours'] === null ? null : num(r['hours']))),
    periodHours: rows.map((r) => (r['in_period'] === null ? null : num(r['in_period']))),
    measuredHours: rows.map((r) => num(r['measured'])),
    total: rows.map((r) => num(r['total'])),
    // A day without any count has no hours in bicycle_daily: it is partial too.
    partial: rows.map((r) => r['hours'] === null || num(r['measured']) < num(r['hours'])),
  };
}

/** The catalog's name of each location (none without a catalog). */
async function locationNames(views: Views, catalog: boolean): Promise<Map<string, string | null>> {
  if (!catalog) return new Map();
  return new Map(
    (await views.query('location_names')).map((r) => [String(r['location_id']), text(r['name'])]),
  );
}

/** Each location's cyclists per day of `dates` (null where it has none). */
async function perLocation(
  views: Views,
  catalog: boolean,
  dates: readonly string[],
): Promise<BicycleSection['perLocation']> {
  const index = new Map(dates.map((d, i) => [d, i]));
  const names = await locationNames(views, catalog);
  const byLocation = new Map<string, (number | null)[]>();
  for (const row of await views.query('bicycle_location_days')) {
    const id = String(row['location_id']);
    let series = byLocation.get(id);
    if (!series) {
      series = dates.map(() => null);
      byLocation.set(id, series);
    }
    const at = index.get(String(row['date']));
    if (at !== undefined) series[at] = row['total'] === null ? null : num(row['total']);
  }
  return [...byLocation].map(([id, total]) => ({ id, name: names.get(id) ?? null, total }));
}

async function profile(views: Views): Promise<BicycleSection['profile']> {
  const rows = await views.query('bicycle_profile');
  const hours = (dayType: string): (number | null)[] =>
    Array.from({ length: 24 }, (_, hour) => {
      const row = rows.find((r) => r['day_type'] === dayType && num(r['hour']) === hour);
      return row && row['mean'] !== null ? num(row['mean']) : null;
    });
  return { weekday: hours('weekday'), weekend: hours('weekend') };
}

const COMPLETENESS_BUCKETS: [string, (c: number | null) => boolean][] = [
  ['100%', (c) => c !== null && c >= 1],
  ['99% to 100%', (c) => c !== null && c >= 0.99 && c < 1],
  ['90% to 99%', (c) => c !== null && c >= 0.9 && c < 0.99],
  ['50% to 90%', (c) => c !== null && c >= 0.5 && c < 0.9],
  ['under 50%', (c) => c !== null && c < 0.5],
  ['no measurement', (c) => c === null],
];

/** The locations drawn, how complete they are, and the ten least complete. */
function completeness(
  located: readonly Located[],
): Pick<BicycleSection, 'points' | 'completeness' | 'leastComplete'> {
  return {
    points: points(located),
    completeness: COMPLETENESS_BUCKETS.map(([label, test]) => [
      label,
      located.filter((l) => test(l.completeness)).length,
    ]),
    leastComplete: located
      .filter(
        (l): l is Located & { completeness: number } =>
          l.completeness !== null && l.completeness < 1,
      )
      .map(({ id, name, completeness }) => ({ id, name, completeness }))
      .sort((a, b) => a.completeness - b.completeness || a.id.localeCompare(b.id))
      .slice(0, 10),
  };
}

/** The numbers of the hourly counts, from report_location_hours. */
async function measured(views: Views, section: BicycleSection, catalog: boolean): Promise<void> {
  const [totals] = await views.query('bicycle_totals');
  section.measuredLocations = num(totals?.['locations']);
  section.locationHours = num(totals?.['hours']);
  section.cyclists = num(totals?.['cyclists']);
  section.firstHour = text(totals?.['first']);
  section.lastHour = text(totals?.['last']);
  section.days = await days(views);
  section.perLocation = await perLocation(views, catalog, section.days.date);
  section.profile = await profile(views);
  // Completeness of each location over the span measured: hours present / hours in it.
  const [span] = await views.query('bicycle_span');
  const spanHours = Math.max(1, num(span?.['hours']));
  Object.assign(section, completeness(await locations(views, catalog, spanHours)));
}

/** How many counters the report lists as the worst, and the calendar's size. */
const WORST = 15;
const CALENDAR_DAYS = 62;
const CALENDAR_ROWS = 40;

/** The counters' health from bicycle_quality. */
async function health(views: Views, catalog: boolean): Promise<BicycleHealth> {
  const names = await locationNames(views, catalog);
  const [totals] = await views.query('bicycle_health_totals');
  const cells = await views.query('bicycle_health_calendar', {
    days: CALENDAR_DAYS,
    rows: CALENDAR_ROWS,
  });
  const dates = [...new Set(cells.map((c) => String(c['date'])))].sort();
  const at = new Map(dates.map((d, i) => [d, i]));
  const rows = new Map<string, ([string, string] | null)[]>();
  for (const cell of cells) {
    const id = String(cell['location_id']);
    const row = rows.get(id) ?? dates.map(() => null);
    row[at.get(String(cell['date']))!] = [String(cell['status']), text(cell['flags']) ?? ''];
    rows.set(id, row);
  }
  return {
    judged: num(totals?.['judged']),
    ok: num(totals?.['ok']),
    suspect: num(totals?.['suspect']),
    faulty: num(totals?.['faulty']),
    locations: num(totals?.['locations']),
    first: text(totals?.['first']),
    last: text(totals?.['last']),
    flags: (await views.query('bicycle_health_flags')).map((r) => ({
      flag: String(r['flag']),
      days: num(r['n']),
      faulty: num(r['faulty']),
    })),
    worst: (await views.query('bicycle_health_worst', { top: WORST })).map((r) => ({
      id: String(r['location_id']),
      name: names.get(String(r['location_id'])) ?? null,
      judged: num(r['judged']),
      faulty: num(r['faulty']),
      suspect: num(r['suspect']),
      flags: text(r['flags']) ?? '',
    })),
    calendar: {
      dates,
      // In the query's order: the worst counter first.
      rows: [...rows].map(([id, row]) => ({ id, name: names.get(id) ?? null, cells: row })),
    },
  };
}

export async function bicycleSection(views: Views): Promise<BicycleSection | null> {
  const catalog = views.has('bicycle_locations', 'location_id', 'longitude', 'latitude');
  // The counts per hour and the hours of each local day, as sql/ builds them.
  const hourly =
    views.has(
      'bicycle_hourly',
      'location_id',
      'measurement_hour',
      'local_date',
      'local_hour_of_day',
      'category',
      'value',
    ) && views.has('bicycle_daily', 'local_date', 'hours_in_day');
  if (!catalog && !hourly && !views.has('bicycle_measurements')) return null;
  const section = emptySection();
  if (catalog) {
    const [count] = await views.query('dataset_rows', { dataset: 'bicycle_locations' });
    section.locations = num(count?.['n']);
  }
  await views.run(hourly ? 'location_hours' : 'no_location_hours');
  try {
    if (hourly) {
      await measured(views, section, catalog);
      if (views.has('bicycle_quality', 'location_id', 'local_date', 'status', 'flags'))
        section.health = await health(views, catalog);
      return section;
    }
    section.missing =
      'No hourly and daily bicycle counts (the datasets bicycle_hourly and bicycle_daily): run the SQL steps of sql/bicycle_hourly.sql and sql/bicycle_daily.sql after bicycle.measurements.';
    if (catalog) section.points = points(await locations(views, catalog, 1));
    return section;
  } finally {
    await views.db.run(`DROP TABLE IF EXISTS report_location_hours`);
  }
}
