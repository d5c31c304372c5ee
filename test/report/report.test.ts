import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  NO_CHROMIUM,
  figure,
  launch,
  openReport,
  paintedPixels,
} from '../helpers/browser.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { sharedDemo } from '../helpers/demo.js';
import { readManifest } from '../helpers/pipeline.js';
import { duck, outputHashes, testDir } from '../helpers/tmp.js';

if (!CHROMIUM) console.warn(`test/report/report.test.ts: ${NO_CHROMIUM}`);

let demo: string;
let browser: Browser | undefined;

beforeAll(async () => {
  const run = await sharedDemo();
  if (run.code !== 0) throw new Error(`the demo failed: ${run.stderr}`);
  // A copy: the tests write reports into it.
  demo = join(await mkdtemp(join(tmpdir(), 'road-etl-report-')), 'output');
  await cp(run.output, demo, { recursive: true, preserveTimestamps: true });
  if (CHROMIUM) browser = await launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await rm(join(demo, '..'), { recursive: true, force: true });
});

const parquet = (folder: string): string =>
  `read_parquet('${join(demo, folder).replaceAll("'", "''")}/**/*.parquet', hive_partitioning = true)`;

async function count(sql: string): Promise<number> {
  const [row] = await duck(`SELECT CAST((${sql}) AS BIGINT) AS n`);
  return Number(row!['n']);
}

/**
 * Cyclists over the period from the rows as received (measured_values_full):
 * per location and hour, the largest of the categories' sums. By location.
 */
async function cyclistsAsReceived(): Promise<Map<string, number>> {
  const rows = await duck(
    `SELECT location_id, measured_values_full AS v FROM ${parquet('bicycle/measurements')}`,
  );
  const byLocation = new Map<string, number>();
  for (const row of rows) {
    const categories = JSON.parse(String(row['v'])) as Record<
      string,
      Record<string, number | null>
    >;
    const sums = Object.values(categories).map((subcategories) =>
      Object.values(subcategories).reduce<number>((sum, value) => sum + (value ?? 0), 0),
    );
    const id = String(row['location_id']);
    byLocation.set(id, (byLocation.get(id) ?? 0) + Math.max(0, ...sums));
  }
  return byLocation;
}

/** Clicks a map's mark at a position (zoomed in on it), and resolves to the popup that opens. */
async function clickMark(
  page: Page,
  map: string,
  latitude: number,
  longitude: number,
): Promise<Locator> {
  await page.locator(`#${map}-map`).scrollIntoViewIfNeeded();
  const [x, y] = (await page.evaluate(`(() => {
    const map = window.roadEtlReport.maps[${JSON.stringify(map)}];
    map.setView([${latitude}, ${longitude}], 17, { animate: false });
    const point = map.latLngToContainerPoint([${latitude}, ${longitude}]);
    const box = map.getContainer().getBoundingClientRect();
    return [box.left + point.x, box.top + point.y];
  })()`)) as [number, number];
  await page.mouse.click(x, y);
  const popup = page.locator(`#${map}-map .leaflet-popup-content`);
  await popup.waitFor();
  return popup;
}

describe('the report of a run', () => {
  it('is written by the demo, named in its manifest and summary, and self-contained', async () => {
    const { run: manifest } = await readManifest(demo);
    expect(manifest.report).toBe('report/index.html');
    const html = await readFile(join(demo, 'report', 'index.html'), 'utf8');
    expect(html.length).toBeLessThan(5 * 2 ** 20);
    // Nothing is loaded from elsewhere: no src= or href= to another file or host.
    expect(html.match(/<script[^>]+src=/g)).toBeNull();
    expect(html.match(/<link[^>]+href=/g)).toBeNull();
    expect(html).toContain(`Content-Security-Policy`);

    const rerun = await runCli(['report', '--output', demo], { env: {} });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(rerun.stdout)).toMatchObject({ report: join(demo, 'report', 'index.html') });
  });

  it.skipIf(!CHROMIUM)(
    'renders in headless Chromium with no network: its numbers are DuckDB counts, its maps and charts are drawn',
    async () => {
      const { page, errors, refused } = await openReport(
        browser!,
        join(demo, 'report', 'index.html'),
      );

      const latestSnapshot = `(SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM ${parquet('signs/live_snapshots')}))`;
      expect(await figure(page, 'signs-signs_current_state')).toBe(
        await count(`SELECT count(*) FROM ${parquet('derived/signs_current_state')}`),
      );
      expect(await figure(page, 'signs-signs_live')).toBe(
        await count(
          `SELECT count(*) FROM ${parquet('signs/live_snapshots')} WHERE snapshot = ${latestSnapshot}`,
        ),
      );
      expect(await figure(page, 'signs-events')).toBe(
        await count(`SELECT count(*) FROM ${parquet('signs/events')}`),
      );
      expect(await figure(page, 'bicycle-locations')).toBe(
        await count(`SELECT count(*) FROM ${parquet('bicycle/locations')}`),
      );
      expect(await figure(page, 'bicycle-measured')).toBe(
        await count(`SELECT count(DISTINCT location_id) FROM ${parquet('bicycle/measurements')}`),
      );
      const byLocation = await cyclistsAsReceived();
      const cyclists = [...byLocation.values()].reduce((a, b) => a + b, 0);
      expect(cyclists).toBeGreaterThan(0);
      expect(await figure(page, 'bicycle-cyclists')).toBe(cyclists);
      // Counter health: the location-days of bicycle_quality by status, and its calendar
      // (every counter of the demo, every date judged) one cell per location-day.
      for (const status of ['ok', 'suspect', 'faulty'])
        expect(await figure(page, `health-${status}`), status).toBe(
          await count(
            `SELECT count(*) FROM ${parquet('derived/bicycle_quality')} WHERE status = '${status}'`,
          ),
        );
      for (const status of ['ok', 'suspect', 'faulty'])
        expect(await page.locator(`#health-calendar td.q-${status}`).count(), status).toBe(
          await count(
            `SELECT count(*) FROM ${parquet('derived/bicycle_quality')} WHERE status = '${status}'`,
          ),
        );
      const faultyDay = await page
        .locator('#health-calendar td.q-faulty')
        .first()
        .getAttribute('title');
      expect(faultyDay).toMatch(/^\d{4}-\d\d-\d\d: faulty \(.+\)$/);
      // October 2026: summer time ends on Sunday the 25th, a local day of 25 hours.
      expect(await page.locator('#irregular-days').textContent()).toContain('2026-10-25 (25 hours');
      // The demo's UTC month cuts two local days: 1 October begins at 02:00 local time, and
      // 1 November has its first hour only. They are drawn apart from the line, not as drops.
      const daily = (await page.evaluate(`(() => {
        const chart = window.roadEtlReport.charts()['chart-daily'];
        return { labels: chart.series.map((s) => s.label), data: chart.data.map((d) => Array.from(d)) };
      })()`)) as { labels: string[]; data: (number | null)[][] };
      const dates = (await page.evaluate(
        `JSON.parse(document.getElementById('report-data').textContent).bicycle.days.date`,
      )) as string[];
      expect(daily.labels.slice(1)).toEqual([
        'cyclists, all locations',
        'cyclists, all locations (partial)',
      ]);
      const [, line, dashed] = daily.data;
      expect(dates.filter((_, i) => line![i] === null)).toEqual(['2026-10-01', '2026-11-01']);
      for (const day of ['2026-10-01', '2026-11-01'])
        expect(dashed![dates.indexOf(day)], day).toBeGreaterThan(0);
      expect(dashed!.filter((v) => v !== null)).toHaveLength(2);
      // The landed period (UTC) holds 22 hours of 1 October (CEST) and 1 of 1 November (CET).
      expect(await page.locator('#partial-days').textContent()).toContain(
        '2026-10-01 (22 of 24 hours in the landed period), 2026-11-01 (1 of 24 hours in the landed period)',
      );

      // The maps and charts are drawn: canvases with paint on them.
      for (const drawn of [
        '#signs-map',
        '#bicycle-map',
        '#chart-events',
        '#chart-daily',
        '#chart-profile',
      ])
        expect(await paintedPixels(page, drawn), drawn).toBeGreaterThan(1000);
      // The README's picture: the bicycle section as drawn.
      const top = Number(
        await page.evaluate(
          `document.getElementById('bicycle').getBoundingClientRect().top + window.scrollY`,
        ),
      );
      await mkdir(join(ROOT, 'docs'), { recursive: true });
      await page.screenshot({
        path: join(ROOT, 'docs', 'report.png'),
        fullPage: true,
        clip: { x: 0, y: Math.max(0, top - 12), width: 1280, height: 1240 },
      });
      // One mark per sign: Leaflet's canvas layer holds them all.
      const live = parquet('signs/live_snapshots');
      const located = await count(
        `SELECT count(*) FROM ${live} WHERE longitude IS NOT NULL AND snapshot = (SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM ${live}))`,
      );
      expect(located).toBeGreaterThan(1000);
      expect(await page.locator('#sample-signs_live').textContent()).toContain(
        `All ${located.toLocaleString('en-US')} signs with a position are drawn`,
      );
      // Choosing the other current state shows its own tables.
      await page.locator('input[name="sign-state"][value="1"]').check();
      expect(await page.locator('#codes-signs_current_state').isVisible()).toBe(true);
      expect(await page.locator('#codes-signs_live').isVisible()).toBe(false);

      // A popup per mark, with its fields: a sign of the current state, with its image link...
      const [sign] = await duck(
        `SELECT CAST(id AS VARCHAR) AS id, rvv_code, details_image, location_wgs84_latitude AS lat, location_wgs84_longitude AS lon
         FROM ${parquet('derived/signs_current_state')} WHERE details_image IS NOT NULL ORDER BY id LIMIT 1`,
      );
      const signPopup = await clickMark(page, 'signs', Number(sign!['lat']), Number(sign!['lon']));
      expect(await signPopup.textContent()).toContain(`Sign${String(sign!['id'])}`);
      expect(await signPopup.textContent()).toContain(`RVV code${String(sign!['rvv_code'])}`);
      expect(await signPopup.locator('a').getAttribute('href')).toBe(sign!['details_image']);
      // ...and the busiest bicycle location, with the cyclists it counted.
      const [busiest, most] = [...byLocation].sort((a, b) => b[1] - a[1])[0]!;
      const [place] = await duck(
        `SELECT latitude, longitude FROM ${parquet('bicycle/locations')} WHERE location_id = '${busiest}'`,
      );
      const locationPopup = await clickMark(
        page,
        'bicycle',
        Number(place!['latitude']),
        Number(place!['longitude']),
      );
      expect(await locationPopup.textContent()).toContain(`Location${busiest}`);
      expect(await locationPopup.textContent()).toContain(
        `Cyclists${most.toLocaleString('en-US')}`,
      );

      expect(errors).toEqual([]);
      expect(refused).toEqual([]);
    },
  );
});

describe('the report of part of an output', () => {
  /** An output folder with some of the demo's datasets (and other files), and its report. */
  async function partial(folders: string[], files: Record<string, string> = {}): Promise<string> {
    const output = join(await testDir(), 'output');
    for (const folder of folders)
      await cp(join(demo, folder), join(output, folder), { recursive: true });
    for (const [name, text] of Object.entries(files)) await writeFile(join(output, name), text);
    const result = await runCli(['report', '--output', output], { env: {} });
    expect(result.code, result.stderr).toBe(0);
    return output;
  }

  it('of the bicycle datasets alone shows them and says the signs are absent', async () => {
    const output = await partial([
      'bicycle',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
      'derived/bicycle_location_summary',
    ]);
    const html = await readFile(join(output, 'report', 'index.html'), 'utf8');
    expect(html).toContain('No traffic-sign datasets in this output');
    expect(html).toContain('No manifest.json in this folder');
    expect(html).not.toContain('id="signs-map"');
    expect(html).toContain('id="bicycle-map"');
    if (!browser) return;
    const { page, errors, refused } = await openReport(
      browser,
      join(output, 'report', 'index.html'),
    );
    expect(await figure(page, 'bicycle-locations')).toBe(
      await count(`SELECT count(*) FROM ${parquet('bicycle/locations')}`),
    );
    expect(await paintedPixels(page, '#bicycle-map')).toBeGreaterThan(1000);
    expect(await paintedPixels(page, '#chart-daily')).toBeGreaterThan(1000);
    expect(errors).toEqual([]);
    expect(refused).toEqual([]);
  });

  it('of the signs alone shows them and says the bicycle counts are absent', async () => {
    const output = await partial(
      ['signs', 'derived/signs_current_state', 'derived/signs_reconcile'],
      {
        'manifest.json': '{ not json',
      },
    );
    const html = await readFile(join(output, 'report', 'index.html'), 'utf8');
    expect(html).toContain('No bicycle datasets in this output');
    expect(html).toContain('manifest.json is not JSON');
    expect(html).toContain('id="signs-map"');
    // Data quality names what is wrong with a field, mis-encoded text among it.
    expect(html).toContain('location_road_name: mis-encoded UTF-8');
    if (!browser) return;
    const { page, errors, refused } = await openReport(
      browser,
      join(output, 'report', 'index.html'),
    );
    expect(await page.locator('#run .absent').textContent()).toContain('manifest.json is not JSON');
    expect(await figure(page, 'signs-signs_current_state')).toBe(
      await count(`SELECT count(*) FROM ${parquet('derived/signs_current_state')}`),
    );
    expect(await paintedPixels(page, '#signs-map')).toBeGreaterThan(1000);
    expect(await page.locator('#bicycle-map').count()).toBe(0);
    expect(errors).toEqual([]);
    expect(refused).toEqual([]);
  });
});

describe('the days of the bicycle counts', () => {
  it('take their hours from bicycle_daily, and a day without any count is partial, not a drop', async () => {
    const output = join(await testDir(), 'output');
    for (const folder of ['bicycle', 'derived/bicycle_hourly', 'derived/bicycle_daily'])
      await cp(join(demo, folder), join(output, folder), { recursive: true });
    // No count at all on 2026-10-10: neither its hourly nor its daily rows.
    for (const dataset of ['bicycle_hourly', 'bicycle_daily'])
      await rm(join(output, 'derived', dataset, 'local_date=2026-10-10'), { recursive: true });
    const result = await runCli(['report', '--output', output], { env: {} });
    expect(result.code, result.stderr).toBe(0);
    const html = await readFile(join(output, 'report', 'index.html'), 'utf8');
    const json = /<script[^>]*id="report-data"[^>]*>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const days = (
      JSON.parse(json) as {
        bicycle: {
          days: {
            date: string[];
            hours: (number | null)[];
            measuredHours: number[];
            partial: boolean[];
          };
        };
      }
    ).bicycle.days;
    const truth = new Map(
      (
        await duck(
          `SELECT strftime(local_date, '%Y-%m-%d') AS d, max(hours_in_day) AS h
           FROM read_parquet('${join(output, 'derived/bicycle_daily')}/**/*.parquet', hive_partitioning = true)
           GROUP BY 1`,
        )
      ).map((r) => [String(r['d']), Number(r['h'])]),
    );
    const at = days.date.indexOf('2026-10-10');
    expect(at).toBeGreaterThan(0);
    expect([days.hours[at], days.measuredHours[at], days.partial[at]]).toEqual([null, 0, true]);
    expect(days.hours.filter((_, i) => i !== at)).toEqual(
      days.date.filter((_, i) => i !== at).map((d) => truth.get(d)),
    );
    expect(days.hours[days.date.indexOf('2026-10-25')]).toBe(25);
    expect(html).not.toContain('(null hours');
  });
});

describe('the signs drawn on a map', () => {
  /** The data the page embeds, of the report written with --map-signs `limit`. */
  async function drawn(output: string, limit: number): Promise<{ total: number; ids: string[] }> {
    const result = await runCli(['report', '--output', output, '--map-signs', String(limit)], {
      env: {},
    });
    expect(result.code, result.stderr).toBe(0);
    const html = await readFile(join(output, 'report', 'index.html'), 'utf8');
    const json = /<script[^>]*id="report-data"[^>]*>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const state = (
      JSON.parse(json) as {
        signs: { states: { view: string; points: { total: number; id: string[] } }[] };
      }
    ).signs.states.find((s) => s.view === 'signs_current_state')!;
    return { total: state.points.total, ids: state.points.id };
  }

  it('are a repeatable sample of --map-signs beyond it, and the count of all of them', async () => {
    const output = join(await testDir(), 'output');
    for (const folder of ['signs', 'derived/signs_current_state'])
      await cp(join(demo, folder), join(output, folder), { recursive: true });
    const located = (
      await duck(
        `SELECT CAST(id AS VARCHAR) AS id FROM ${parquet('derived/signs_current_state')}
         WHERE location_wgs84_longitude IS NOT NULL AND location_wgs84_latitude IS NOT NULL`,
      )
    ).map((r) => String(r['id']));
    expect(located.length).toBeGreaterThan(100);
    const sample = await drawn(output, 100);
    expect(sample.total).toBe(located.length);
    expect(sample.ids).toHaveLength(100);
    expect(new Set(sample.ids).size).toBe(100);
    expect(located).toEqual(expect.arrayContaining(sample.ids));
    expect((await drawn(output, 100)).ids).toEqual(sample.ids);
    // None drawn: the count is still of them all.
    expect(await drawn(output, 0)).toEqual({ total: located.length, ids: [] });
  });
});

describe("the report of today's API over several days", () => {
  it.skipIf(!CHROMIUM)(
    'states the changes between snapshots that DuckDB counts, and charts them',
    async () => {
      const project = await testDir();
      const output = join(project, 'output');
      const definition = (now: string): string => `name: live_days
source:
  simulator: { seed: 3, scale: small, now: '${now}' }
sql_dir: ${JSON.stringify(join(ROOT, 'sql'))}
report: true
steps:
  - { id: signs_live, kind: signs.live }
  - id: signs_live_changes
    kind: sql
    needs: [signs_live]
    options: { file: signs_live_changes.sql, outputs: [signs_live_changes] }
`;
      // Three days of the simulator's world, one download each.
      for (const now of ['2026-11-01T12:00:00Z', '2026-11-08T12:00:00Z', '2026-11-14T12:00:00Z']) {
        await writeFile(join(project, 'p.yaml'), definition(now));
        const run = await runCli(['run', join(project, 'p.yaml'), '--output', output], { env: {} });
        expect(run.code, run.stderr).toBe(0);
      }
      const changes = (change: string): Promise<number> =>
        count(
          `SELECT count(*) FROM read_parquet('${output}/derived/signs_live_changes/**/*.parquet') WHERE change = '${change}'`,
        );
      const changed = await changes('changed');
      expect(changed).toBeGreaterThan(0);

      const { page, errors, refused } = await openReport(
        browser!,
        join(output, 'report', 'index.html'),
      );
      expect(await figure(page, 'signs-snapshots')).toBe(3);
      expect(await figure(page, 'live-added')).toBe(await changes('added'));
      expect(await figure(page, 'live-removed')).toBe(await changes('removed'));
      expect(await figure(page, 'live-changed')).toBe(changed);
      expect(await paintedPixels(page, '#chart-live')).toBeGreaterThan(1000);
      expect(await page.locator('#bicycle .absent').textContent()).toContain('No bicycle datasets');
      expect(errors).toEqual([]);
      expect(refused).toEqual([]);
    },
  );
});

describe('a report whose place is taken', () => {
  it('stops the run at once with exit 1, naming it, and leaves what landed as it was', async () => {
    const project = await testDir();
    const output = join(project, 'output');
    await writeFile(
      join(project, 'p.yaml'),
      `name: live
source:
  simulator: { seed: 3, scale: small, now: '2026-11-14T12:00:00Z' }
report: true
steps:
  - { id: signs_live, kind: signs.live }
`,
    );
    const args = ['run', join(project, 'p.yaml'), '--output', output];
    const first = await runCli(args, { env: {} });
    expect(first.code, first.stderr).toBe(0);
    const landed = await outputHashes(output, ['manifest.json', 'index.html']);
    expect([...landed.keys()].some((path) => path.startsWith('signs/live_snapshots/'))).toBe(true);

    // A folder where the commit's page was: the page cannot be put in its place.
    const manifestBefore = await readFile(join(output, 'manifest.json'));
    await rm(join(output, 'report', 'index.html'));
    await mkdir(join(output, 'report', 'index.html', 'in-the-way'), { recursive: true });
    const second = await runCli(args, { env: {} });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `${join(output, 'report', 'index.html')}: the folder's last commit names this object, and the store holds another one`,
    );
    expect(second.stderr).not.toMatch(/a bug/);
    // Stopped before anything ran: the manifest, the data and what is in the way as they were.
    expect(await readFile(join(output, 'manifest.json'))).toEqual(manifestBefore);
    expect(await outputHashes(output, ['manifest.json', 'index.html'])).toEqual(landed);
    expect(await readdir(join(output, 'report', 'index.html'))).toEqual(['in-the-way']);
  });
});

describe('road-etl report refuses bad input', () => {
  it('a folder that does not exist: exit 2, nothing written', async () => {
    const missing = join(await testDir(), 'nothing-here');
    const result = await runCli(['report', '--output', missing], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no such folder');
    await expect(readFile(join(missing, 'report', 'index.html'))).rejects.toThrow();
  });

  it('a tile URL that is no template: exit 2, the report there unchanged', async () => {
    const before = await readFile(join(demo, 'report', 'index.html'));
    const result = await runCli(
      ['report', '--output', demo, '--tiles', 'ftp://tiles.example/x.png'],
      {
        env: {},
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--tiles');
    expect(await readFile(join(demo, 'report', 'index.html'))).toEqual(before);
  });
});
