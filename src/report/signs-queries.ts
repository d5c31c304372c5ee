/**
 * The report's traffic-sign numbers: each current state (today's API, the
 * state built from the feed) counted and drawn, the feed per week, the
 * reconciliation, the live snapshots' changes. The SQL is in sql/.
 */
import type { SignPoints, SignState, SignsSection } from './data.js';
import { num, rankings, text, topOf, type Views } from './views.js';

export interface SignQueryOptions {
  /** Signs drawn on a map at most; beyond it a repeatable sample. */
  mapSigns: number;
  /** Rows of a ranking (codes, towns, reasons) before the rest is summed. */
  top: number;
}

async function signPoints(views: Views, limit: number): Promise<SignPoints> {
  const [count] = await views.query('sign_mark_count');
  const rows = await views.query('sign_marks', { limit });
  const points: SignPoints = {
    total: num(count?.['n']),
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

/** A current state: `marks` makes report_signs of its view. */
async function signState(
  views: Views,
  state: { view: string; title: string; marks: string },
  options: SignQueryOptions,
): Promise<SignState> {
  await views.run(state.marks);
  const ranked = rankings(await views.query('sign_rankings'));
  const byCategory = ranked.get('category') ?? [];
  return {
    view: state.view,
    title: state.title,
    signs: byCategory.reduce((sum, [, n]) => sum + n, 0),
    byCategory: topOf(byCategory, 30, 'other categories'),
    byCode: topOf(ranked.get('code'), options.top, 'other codes'),
    byTown: topOf(ranked.get('town'), options.top, 'other towns'),
    points: await signPoints(views, options.mapSigns),
  };
}

/** A snapshot partition's name (20261123T155259616Z) as an ISO moment (2026-11-23T15:52:59Z). */
export function snapshotMoment(snapshot: string | null): string | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})\d*Z$/.exec(snapshot ?? '');
  return m ? `${m[1]!}-${m[2]!}-${m[3]!}T${m[4]!}:${m[5]!}:${m[6]!}Z` : snapshot;
}

async function eventsPart(views: Views): Promise<NonNullable<SignsSection['events']>> {
  const [totals] = await views.query('signs_events_totals');
  const rows = await views.query('signs_events_weeks');
  return {
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

async function reconcilePart(
  views: Views,
  top: number,
): Promise<NonNullable<SignsSection['reconcile']>> {
  const ranked = rankings(await views.query('reconcile_rankings'));
  const byDifference = ranked.get('difference') ?? [];
  const examples = await views.query('reconcile_examples');
  return {
    differences: byDifference.reduce((sum, [, n]) => sum + n, 0),
    byDifference: topOf(byDifference, top, 'other'),
    byField: topOf(ranked.get('field'), top, 'other fields'),
    examples: examples.map((r) => ({
      id: String(r['id']),
      difference: String(r['difference']),
      fields: text(r['fields']) ?? '',
    })),
  };
}

async function livePart(views: Views, top: number): Promise<NonNullable<SignsSection['live']>> {
  const [snapshots] = await views.query('live_snapshots');
  const live: NonNullable<SignsSection['live']> = {
    snapshots: num(snapshots?.['n']),
    first: snapshotMoment(text(snapshots?.['first'])),
    latest: snapshotMoment(text(snapshots?.['latest'])),
    changes: { moment: [], added: [], removed: [], changed: [] },
    byField: [],
  };
  if (views.has('signs_live_changes', 'to_moment', 'change', 'changed_fields')) {
    const rows = await views.query('live_changes');
    live.changes = {
      moment: rows.map((r) => String(r['moment'])),
      added: rows.map((r) => num(r['added'])),
      removed: rows.map((r) => num(r['removed'])),
      changed: rows.map((r) => num(r['changed'])),
    };
    live.byField = topOf(
      rankings(await views.query('live_changed_fields')).get('field'),
      top,
      'other fields',
    );
  }
  return live;
}

export async function signsSection(
  views: Views,
  options: SignQueryOptions,
): Promise<SignsSection | null> {
  const section: SignsSection = { states: [] };
  if (views.has('signs_live', 'sign_id', 'longitude', 'latitude', 'rvv_code'))
    section.states.push(
      await signState(
        views,
        { view: 'signs_live', title: "Today's API (signs.live)", marks: 'signs_live_marks' },
        options,
      ),
    );
  if (views.has('signs_current_state', 'id', 'location_wgs84_longitude', 'rvv_code'))
    section.states.push(
      await signState(
        views,
        {
          view: 'signs_current_state',
          title: 'Current state from the event feed (signs_current_state)',
          marks: 'signs_current_state_marks',
        },
        options,
      ),
    );
  if (views.has('signs_events', 'id', 'type', 'publication_timestamp'))
    section.events = await eventsPart(views);
  if (views.has('signs_reconcile', 'id', 'difference', 'differing_fields'))
    section.reconcile = await reconcilePart(views, options.top);
  if (views.has('signs_live_snapshots', 'snapshot'))
    section.live = await livePart(views, options.top);
  const empty = section.states.length === 0 && !section.events && !section.reconcile;
  return empty && !section.live ? null : section;
}
