/** The report's sections on the data: traffic signs, bicycle counts, data quality, datasets. */
import type { BicycleHealth, ReportData, SignState } from './data.js';
import { absent, countTable, escapeHtml, figure, fmt, percent } from './html-format.js';

function legend(colors: Record<string, string>, state: SignState): string {
  return state.byCategory
    .map(
      ([category, n]) =>
        `<span class="key"><i style="background:${escapeHtml(colors[category] ?? colors['other'] ?? '#333')}"></i>${escapeHtml(category)} <span class="muted">${fmt(n)}</span></span>`,
    )
    .join('');
}

export function signsSection(data: ReportData, colors: Record<string, string>): string {
  const signs = data.signs;
  if (!signs)
    return `<section id="signs"><h2>Traffic signs</h2>${absent('No traffic-sign datasets in this output', '(signs/events, signs/snapshot, signs/live_snapshots, or the current state derived from them): run a traffic-signs pipeline to see them here.')}</section>`;
  const figures = [
    ...signs.states.map((s) => figure(`signs-${s.view}`, s.signs, `signs in ${s.view}`)),
    ...(signs.events
      ? [figure('signs-events', signs.events.events, 'events in signs_events')]
      : []),
    ...(signs.live
      ? [figure('signs-snapshots', signs.live.snapshots, "snapshots of today's API")]
      : []),
  ].join('');
  const states = signs.states
    .map((state, i) => {
      const sample =
        state.points.shown < state.points.total
          ? `A random sample of ${fmt(state.points.shown)} of the ${fmt(state.points.total)} signs with a position is drawn (report.map_signs sets how many).`
          : `All ${fmt(state.points.total)} signs with a position are drawn.`;
      return `<div class="state" data-state="${i}"${i === 0 ? '' : ' hidden'}>
<p class="muted sample" id="sample-${escapeHtml(state.view)}">${escapeHtml(state.title)}: ${escapeHtml(sample)} Colour by RVV category; click a sign for its fields.</p>
<div class="legend">${legend(colors, state)}</div>
<div class="columns">${countTable(`Signs by RVV code (${state.view})`, 'RVV code', state.byCode, `codes-${state.view}`)}${countTable(`Signs by town (${state.view})`, 'Town', state.byTown, `towns-${state.view}`)}</div>
</div>`;
    })
    .join('');
  const chooser =
    signs.states.length > 1
      ? `<div class="chooser" role="radiogroup">${signs.states
          .map(
            (s, i) =>
              `<label><input type="radio" name="sign-state" value="${i}"${i === 0 ? ' checked' : ''}> ${escapeHtml(s.title)}</label>`,
          )
          .join('')}</div>`
      : '';
  const map =
    signs.states.length > 0
      ? `${chooser}<div class="map" id="signs-map"></div>${states}`
      : absent(
          'No current state of the signs:',
          'run the signs_current_state SQL step or signs.live.',
        );
  const events = signs.events
    ? `<h3>Events per week</h3><p class="muted">${fmt(signs.events.events)} events of ${fmt(signs.events.signs)} signs, published from ${escapeHtml(signs.events.first)} to ${escapeHtml(signs.events.last)} (weeks from Monday, UTC; the first and last week, which the events read so far cover in part, are hollow points on a grey band).</p><div class="chart" id="chart-events"></div>`
    : absent('No event feed (signs_events):', 'the signs.events step has not run here.');
  const reconcile = signs.reconcile
    ? `<h3>Reconciliation of events and snapshot</h3>${
        signs.reconcile.differences === 0
          ? `<p id="reconcile-none">The current state from the events and the snapshot agree on every sign.</p>`
          : `<p>${figure('signs-reconcile', signs.reconcile.differences, 'signs differ between the current state from the events and the snapshot')}</p><div class="columns">${countTable('Differences by kind', 'Difference', signs.reconcile.byDifference, 'reconcile-kinds')}${countTable('Differing fields', 'Field', signs.reconcile.byField, 'reconcile-fields')}</div><table><caption>First differences</caption><thead><tr><th>Sign</th><th>Difference</th><th>Fields</th></tr></thead><tbody>${signs.reconcile.examples.map((e) => `<tr><td>${escapeHtml(e.id)}</td><td>${escapeHtml(e.difference)}</td><td>${escapeHtml(e.fields)}</td></tr>`).join('')}</tbody></table>`
      }`
    : '';
  let live = '';
  if (signs.live) {
    const changes = signs.live.changes;
    const total = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    live = `<h3>Today's API, day to day</h3><p class="muted">${fmt(signs.live.snapshots)} snapshot${signs.live.snapshots === 1 ? '' : 's'}${signs.live.first ? `, from ${escapeHtml(signs.live.first)} to ${escapeHtml(signs.live.latest)}` : ''}.</p>${
      changes.moment.length === 0
        ? `<p id="live-changes-none">No changes yet: they appear once a second day's snapshot has been downloaded${signs.live.snapshots > 1 ? ' (and the signs_live_changes step has run)' : ''}.</p>`
        : `<div class="figures">${figure('live-added', total(changes.added), 'signs added')}${figure('live-removed', total(changes.removed), 'removed')}${figure('live-changed', total(changes.changed), 'changed')}</div><div class="chart" id="chart-live"></div>${countTable('Changed fields', 'Field', signs.live.byField, 'live-fields')}`
    }`;
  }
  return `<section id="signs"><h2>Traffic signs</h2><div class="figures">${figures}</div>${map}${events}${reconcile}${live}</section>`;
}

/** What each flag of bicycle_quality means (docs/quality.md gives the rules and their sources). */
const FLAG_MEANING: Record<string, string> = {
  dead: 'every hour delivered is zero',
  zero_run: '7 or more consecutive daytime hours of zero',
  stuck: 'the same record sent hour after hour',
  direction_missing: 'one direction counts nothing',
  direction_imbalance: 'the split between the directions far from its usual',
  spike: 'an hour far above the usual peak hour',
  night_activity: 'night hours at daytime level',
  level_shift: 'days well below or above the usual level, lasting',
  incomplete: 'hours not delivered',
};

function healthPart(h: BicycleHealth): string {
  const figures = `<div class="figures">${figure('health-judged', h.judged, 'location-days judged')}${figure('health-ok', h.ok, 'ok')}${figure('health-suspect', h.suspect, 'suspect')}${figure('health-faulty', h.faulty, 'faulty')}</div>`;
  const flags = h.flags.length
    ? `<table id="health-flags"><caption>What was flagged</caption><thead><tr><th>Flag</th><th>Meaning</th><th class="num">Location-days</th><th class="num">of them faulty</th></tr></thead><tbody>${h.flags
        .map(
          (f) =>
            `<tr><td><code>${escapeHtml(f.flag)}</code></td><td>${escapeHtml(FLAG_MEANING[f.flag] ?? '')}</td><td class="num">${fmt(f.days)}</td><td class="num">${fmt(f.faulty)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<p id="health-flags-none">No location-day was flagged.</p>';
  const worst = h.worst.length
    ? `<table id="health-worst"><caption>The worst counters</caption><thead><tr><th>Location</th><th>Name</th><th class="num">Days judged</th><th class="num">Faulty</th><th class="num">Suspect</th><th>Flags (days)</th></tr></thead><tbody>${h.worst
        .map(
          (w) =>
            `<tr><td>${escapeHtml(w.id)}</td><td>${escapeHtml(w.name ?? '')}</td><td class="num">${fmt(w.judged)}</td><td class="num">${fmt(w.faulty)}</td><td class="num">${fmt(w.suspect)}</td><td>${escapeHtml(w.flags)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  const { dates, rows } = h.calendar;
  const head = dates
    .map((d) => `<th title="${escapeHtml(d)}">${escapeHtml(d.slice(8, 10))}</th>`)
    .join('');
  const body = rows
    .map(
      (r) =>
        `<tr><th class="who" title="${escapeHtml(r.name ?? '')}">${escapeHtml(r.id)}</th>${r.cells
          .map((c, i) =>
            c
              ? `<td class="q-${escapeHtml(c[0])}" title="${escapeHtml(`${dates[i]!}: ${c[0]}${c[1] ? ` (${c[1]})` : ''}`)}"></td>`
              : `<td class="q-none" title="${escapeHtml(`${dates[i]!}: not judged`)}"></td>`,
          )
          .join('')}</tr>`,
    )
    .join('');
  const shown =
    rows.length < h.locations
      ? `the ${fmt(rows.length)} of ${fmt(h.locations)} counters with the most faulty, then suspect, days in them`
      : `every counter`;
  const calendar = `<p class="muted">The last ${fmt(dates.length)} local dates judged (${escapeHtml(dates[0] ?? '')} to ${escapeHtml(dates[dates.length - 1] ?? '')}), ${shown}: <span class="key q-ok"></span> ok <span class="key q-suspect"></span> suspect <span class="key q-faulty"></span> faulty <span class="key q-none"></span> not judged. Point at a day for its flags.</p><table class="calendar" id="health-calendar"><thead><tr><th></th>${head}</tr></thead><tbody>${body}</tbody></table>`;
  return `<h3 id="health">Counter health</h3><p class="muted">Each counter's local day from ${escapeHtml(h.first ?? '')} to ${escapeHtml(h.last ?? '')} judged against its own history (<code>bicycle_quality</code>): <b>faulty</b> days (dead, a run of zeros, stuck, a direction missing, or most hours not delivered) do not count the traffic that passed; <b>suspect</b> days may not. <code>bicycle_daily</code> carries each day's status; leave out faulty days before summing.</p>${figures}${calendar}<div class="columns">${flags}${worst}</div>`;
}

export function bicycleSection(data: ReportData): string {
  const b = data.bicycle;
  if (!b)
    return `<section id="bicycle"><h2>Bicycle counts</h2>${absent('No bicycle datasets in this output', '(bicycle/locations, bicycle/measurements, or the hourly counts derived from them): run a bicycle pipeline to see them here.')}</section>`;
  const figures = `<div class="figures">${figure('bicycle-locations', b.locations, 'locations in the catalog')}${figure('bicycle-measured', b.measuredLocations, 'locations with counts')}${figure('bicycle-cyclists', b.cyclists, 'cyclists counted')}${figure('bicycle-hours', b.locationHours, 'location-hours measured')}</div>`;
  const period = b.firstHour
    ? `<p class="muted">Hours from ${escapeHtml(b.firstHour)} to ${escapeHtml(b.lastHour)} (UTC). A location's count of an hour is the median of its categories' sums: every category of passages divides the same cyclists (by direction, vehicle, speed or length), one its equipment does not measure is empty, and one that counts no passages (an indicator, an average) is outvoted.</p>`
    : '';
  if (b.missing)
    return `<section id="bicycle"><h2>Bicycle counts</h2>${figures}${b.points.length ? '<div class="map" id="bicycle-map"></div>' : ''}${absent('', b.missing)}</section>`;
  const irregular = b.days.date
    .map((date, i) => [date, b.days.hours[i]] as const)
    .filter(([, hours]) => hours !== 24 && hours !== null && hours !== undefined);
  const dst = irregular.length
    ? `<p id="irregular-days">Local days of other than 24 hours: ${irregular.map(([d, h]) => `<b>${escapeHtml(d)}</b> (${h} hours${h === 23 ? ', summer time starts' : ', summer time ends'})`).join(', ')}. They are shaded in the chart; a 25-hour day counts an hour more.</p>`
    : '<p class="muted">Every local day of the period has 24 hours.</p>';
  const partial = b.days.date.flatMap((date, i) => {
    if (!b.days.partial[i]) return [];
    const [hours, inPeriod] = [b.days.hours[i], b.days.periodHours[i]];
    const why =
      hours === null || hours === undefined
        ? 'no count'
        : inPeriod !== null && inPeriod !== undefined && inPeriod < hours
          ? `${inPeriod} of ${hours} hours in the landed period`
          : `a count in ${b.days.measuredHours[i] ?? 0} of ${hours} hours`;
    return [`${escapeHtml(date)} (${why})`];
  });
  const cut = partial.length
    ? `<p class="muted" id="partial-days">Partial days, drawn as hollow points on a grey band apart from the line (the counts landed so far cover only part of them: a period given in UTC cuts its first and last local day, made whole when the neighbouring period lands): ${partial.join(', ')}.</p>`
    : '';
  const options = b.perLocation
    .map(
      (l) =>
        `<option value="${escapeHtml(l.id)}">${escapeHtml(l.id)}${l.name ? ` ${escapeHtml(l.name)}` : ''}</option>`,
    )
    .join('');
  const least = b.leastComplete.length
    ? `<table id="least-complete"><caption>Least complete locations</caption><thead><tr><th>Location</th><th>Name</th><th class="num">Completeness</th></tr></thead><tbody>${b.leastComplete.map((l) => `<tr><td>${escapeHtml(l.id)}</td><td>${escapeHtml(l.name)}</td><td class="num">${percent(l.completeness)}</td></tr>`).join('')}</tbody></table>`
    : '';
  return `<section id="bicycle"><h2>Bicycle counts</h2>${figures}${period}
<p class="muted">Locations sized by the cyclists counted over the period; grey: no counts in it. Click one for its numbers.</p>
<div class="map" id="bicycle-map"></div>
<h3>Cyclists per local day</h3>
<p class="muted">Dates in Dutch local time (Europe/Amsterdam). <label>Location: <select id="daily-location"><option value="">all locations</option>${options}</select></label></p>
${dst}${cut}
<div class="chart" id="chart-daily"></div>
<h3>Hour of the day</h3>
<p class="muted">Mean cyclists per location and hour, by local hour, on weekdays and at weekends.</p>
<div class="chart" id="chart-profile"></div>
<h3>Completeness</h3>
<p class="muted">Hours with a count out of the hours from the first to the last hour measured.</p>
<div class="columns">${countTable('Locations by completeness', 'Completeness', b.completeness, 'completeness')}${least}</div>
${b.health ? healthPart(b.health) : absent('No counter health (bicycle_quality):', 'run the SQL step of sql/bicycle_quality.sql after bicycle_hourly.')}
</section>`;
}

export function qualitySection(data: ReportData): string {
  const q = data.quality;
  const quarantine = q.quarantine.length
    ? q.quarantine
        .map(
          (d) =>
            `<div class="quality">${figure(`quarantine-${d.dataset}`, d.rows, `rows in ${d.dataset}`)}${countTable(`${d.dataset} by reason`, 'Reason', d.byReason, `reasons-${d.dataset}`)}${d.example ? `<p class="muted">For example: <code>${escapeHtml(d.example)}</code></p>` : ''}</div>`,
        )
        .join('')
    : `<p id="quarantine-none">Nothing quarantined: every record received could be kept.</p>`;
  const typing = q.typing.length
    ? `<table id="typing"><thead><tr><th>Dataset</th><th class="num">Rows</th><th class="num">Rows with an issue</th><th>Fields (issues)</th></tr></thead><tbody>${q.typing
        .map(
          (d) =>
            `<tr><td><code>${escapeHtml(d.dataset)}</code></td><td class="num">${fmt(d.rows)}</td><td class="num" id="typing-${escapeHtml(d.dataset)}" data-value="${d.rowsWithIssues}">${fmt(d.rowsWithIssues)}</td><td>${d.byField.map(([field, n]) => `${escapeHtml(field)} (${fmt(n)})`).join(', ')}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<p class="muted">No dataset records typing issues.</p>';
  return `<section id="quality"><h2>Data quality</h2><h3>Quarantine</h3><p class="muted">Records that could not be kept at all (an id that is no number, an hour with minutes, a feature without a point), with the reason.</p>${quarantine}<h3>Typing issues</h3><p class="muted">Values kept as NULL because they could not be typed; the record is kept whole beside them.</p>${typing}</section>`;
}

export function datasetsSection(data: ReportData): string {
  const rows = data.datasets
    .map(
      (d) =>
        `<tr><td><code>${escapeHtml(d.name)}</code></td><td>${escapeHtml(d.path)}</td><td class="num">${fmt(d.rows)}</td></tr>`,
    )
    .join('');
  return `<section id="datasets"><h2>Datasets</h2><p class="muted">Each is a view in <code>road-etl query</code> (and read_parquet over its folder in DuckDB).</p>${rows ? `<table id="datasets-table"><thead><tr><th>View</th><th>Folder</th><th class="num">Rows</th></tr></thead><tbody>${rows}</tbody></table>` : absent('No datasets', 'in this folder yet.')}</section>`;
}
