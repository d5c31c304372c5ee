/*
 * The report page's script: draws the maps (Leaflet) and charts (uPlot) from
 * the data the page embeds (#report-data). The figures and tables are already
 * in the HTML; this only draws. Runs in the browser, as a classic script after
 * Leaflet's and uPlot's, and fetches nothing.
 */
declare const L: typeof import('leaflet');
declare const uPlot: typeof import('uplot');

type PageData = import('../data.js').ReportData & { colors: Record<string, string> };
type SignState = import('../data.js').SignState;
type Chart = import('uplot');
type ChartOptions = import('uplot').Options;
type ChartData = import('uplot').AlignedData;

const dataElement = document.getElementById('report-data');
const data = JSON.parse(dataElement?.textContent ?? 'null') as PageData;
const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

const PALETTE = ['#1f6feb', '#cf222e', '#1a7f37', '#9a6700', '#8250df', '#0a7b83'];

function esc(value: string | number | null | undefined): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

function popupTable(rows: [string, string | number | null | undefined][]): string {
  return `<table>${rows
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`)
    .join('')}</table>`;
}

function newMap(element: HTMLElement): L.Map {
  const map = L.map(element, {
    preferCanvas: true,
    attributionControl: data.tiles !== null,
    zoomSnap: 0.25,
  });
  if (data.tiles)
    L.tileLayer(data.tiles.url, { attribution: esc(data.tiles.attribution), maxZoom: 19 }).addTo(
      map,
    );
  if (data.outline) {
    // Beneath the marks, and drawn apart from their canvas (SVG).
    const pane = map.createPane('outline');
    pane.style.zIndex = '250';
    const options: L.GeoJSONOptions & L.PathOptions = {
      pane: 'outline',
      renderer: L.svg({ pane: 'outline' }),
      interactive: false,
      style: () => ({ color: '#9aa4b1', weight: 1, fillColor: '#ffffff', fillOpacity: 1 }),
    };
    L.geoJSON(data.outline, options).addTo(map);
  }
  L.control.scale({ imperial: false }).addTo(map);
  return map;
}

function fit(map: L.Map, points: [number, number][]): void {
  if (points.length === 0) map.setView([52.2, 5.3], 7);
  else map.fitBounds(L.latLngBounds(points), { padding: [20, 20], maxZoom: 15 });
}

function categoryOf(code: string | null): string {
  const match = /^[A-Z]+/.exec((code ?? '').toUpperCase());
  return match ? match[0] : '(none)';
}

function signLayer(state: SignState): { layer: L.LayerGroup; points: [number, number][] } {
  const p = state.points;
  const layer = L.layerGroup();
  const points: [number, number][] = [];
  for (let i = 0; i < p.id.length; i++) {
    const at: [number, number] = [p.latitude[i]!, p.longitude[i]!];
    points.push(at);
    const colour = data.colors[categoryOf(p.rvvCode[i] ?? null)] ?? data.colors['other'] ?? '#333';
    L.circleMarker(at, {
      radius: 4,
      color: '#fff',
      weight: 0.5,
      fillColor: colour,
      fillOpacity: 0.85,
    })
      .bindPopup(() => {
        const image = p.image[i];
        return (
          popupTable([
            ['Sign', p.id[i]],
            ['RVV code', p.rvvCode[i]],
            ['Text', p.text[i]],
            ['Road', p.road[i]],
            ['Town', p.town[i]],
            ['Position', `${at[0]}, ${at[1]}`],
          ]) +
          (image && /^https?:\/\//.test(image)
            ? `<a href="${esc(image)}" target="_blank" rel="noopener noreferrer">Image of the sign</a>`
            : '')
        );
      })
      .addTo(layer);
  }
  return { layer, points };
}

/** The maps, for a reader's console (and the report's tests): window.roadEtlReport.maps. */
const maps: Record<string, L.Map> = {};
(window as unknown as { roadEtlReport: unknown }).roadEtlReport = {
  maps,
  /** The charts by their element's id, once drawn. */
  charts: () =>
    Object.fromEntries(charts.map(({ chart, element }) => [element.id, chart] as const)),
};

function drawSignsMap(): boolean {
  const element = document.getElementById('signs-map');
  const states = data.signs?.states ?? [];
  if (!element || states.length === 0) return false;
  const map = newMap(element);
  maps['signs'] = map;
  const layers = states.map(signLayer);
  let shown = 0;
  layers[0]!.layer.addTo(map);
  fit(map, layers[0]!.points);
  for (const input of document.querySelectorAll<HTMLInputElement>('input[name="sign-state"]')) {
    input.addEventListener('change', () => {
      const next = Number(input.value);
      if (next === shown || !layers[next]) return;
      map.removeLayer(layers[shown]!.layer);
      layers[next].layer.addTo(map);
      fit(map, layers[next].points);
      for (const block of document.querySelectorAll<HTMLElement>('#signs .state'))
        block.hidden = block.dataset['state'] !== String(next);
      shown = next;
    });
  }
  return true;
}

function drawBicycleMap(): boolean {
  const element = document.getElementById('bicycle-map');
  const locations = data.bicycle?.points ?? [];
  if (!element || locations.length === 0) return false;
  const map = newMap(element);
  maps['bicycle'] = map;
  const largest = Math.max(1, ...locations.map((l) => l.cyclists ?? 0));
  // Largest first, so that small circles stay clickable on top of large ones.
  const ordered = [...locations].sort((a, b) => (b.cyclists ?? -1) - (a.cyclists ?? -1));
  for (const l of ordered) {
    const measured = l.cyclists !== null;
    L.circleMarker([l.latitude, l.longitude], {
      radius: measured ? 4 + 18 * Math.sqrt((l.cyclists ?? 0) / largest) : 3,
      color: measured ? '#0b4f9c' : '#8a929c',
      weight: 1,
      fillColor: measured ? '#1f6feb' : '#c4cad1',
      fillOpacity: measured ? 0.45 : 0.8,
    })
      .bindPopup(() =>
        popupTable([
          ['Location', l.id],
          ['Name', l.name],
          ['Authority', l.authority],
          [
            'Cyclists',
            l.cyclists === null ? 'no counts in the period' : integer.format(l.cyclists),
          ],
          [
            'Completeness',
            l.completeness === null ? null : `${decimal.format(l.completeness * 100)}%`,
          ],
        ]),
      )
      .addTo(map);
  }
  fit(
    map,
    locations.map((l) => [l.latitude, l.longitude]),
  );
  return true;
}

const charts: { chart: Chart; element: HTMLElement }[] = [];

function widthOf(element: HTMLElement): number {
  return Math.max(320, element.clientWidth || 800);
}

/** A line chart over categories (weeks, days, hours) given by their labels. */
function lineChart(
  element: HTMLElement,
  labels: string[],
  series: { label: string; values: (number | null)[] }[],
  options: {
    incrs: number[];
    shade?: (i: number) => string | undefined;
    /** Shorter labels for the axis (default: the labels). */
    ticks?: string[];
    /**
     * Points the data covers only in part (a day or week the counts landed cut):
     * drawn apart, dashed, so that they do not read as drops.
     */
    partial?: boolean[];
  } = { incrs: [1] },
): Chart {
  const ticks = options.ticks ?? labels;
  const x = labels.map((_, i) => i);
  const partial = options.partial;
  const isPartial = (i: number): boolean => partial?.[i] === true;
  // The whole points make the line; the partial ones are hollow points apart,
  // on a grey band, not joined to it.
  const whole = series.map((s) => ({
    ...s,
    values: s.values.map((v, i) => (isPartial(i) ? null : v)),
  }));
  const cut = partial?.some(Boolean)
    ? series.map((s) => ({
        label: `${s.label} (partial)`,
        values: s.values.map((v, i) => (isPartial(i) ? v : null)),
      }))
    : [];
  const shade = (i: number): string | undefined =>
    isPartial(i) ? 'rgba(110, 119, 129, 0.14)' : options.shade?.(i);
  const chartOptions: ChartOptions = {
    width: widthOf(element),
    height: 260,
    scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] } },
    axes: [
      {
        incrs: options.incrs,
        values: (_u, splits) => splits.map((i) => ticks[i] ?? ''),
        space: 70,
      },
      { values: (_u, splits) => splits.map((v) => integer.format(v)), size: 70 },
    ],
    series: [
      { label: 'At', value: (_u, i) => labels[i] ?? '' },
      ...whole.map((s, k) => ({
        label: s.label,
        stroke: PALETTE[k % PALETTE.length]!,
        width: 2,
        value: (_u: Chart, v: number | null) => (v === null ? '' : decimal.format(v)),
      })),
      ...cut.map((s, k) => ({
        label: s.label,
        stroke: PALETTE[k % PALETTE.length]!,
        width: 1,
        paths: () => null,
        points: { show: true, size: 7, fill: '#ffffff' },
        value: (_u: Chart, v: number | null) => (v === null ? '' : decimal.format(v)),
      })),
    ],
    ...(options.shade || cut.length > 0
      ? {
          hooks: {
            drawClear: [
              (u: Chart) => {
                const ctx = u.ctx;
                labels.forEach((_, i) => {
                  const colour = shade(i);
                  if (!colour) return;
                  const left = u.valToPos(i - 0.5, 'x', true);
                  const right = u.valToPos(i + 0.5, 'x', true);
                  ctx.fillStyle = colour;
                  ctx.fillRect(left, u.bbox.top, right - left, u.bbox.height);
                });
              },
            ],
          },
        }
      : {}),
  };
  const chart = new uPlot(
    chartOptions,
    [x, ...whole.map((s) => s.values), ...cut.map((s) => s.values)] as ChartData,
    element,
  );
  charts.push({ chart, element });
  return chart;
}

function drawEvents(): boolean {
  const element = document.getElementById('chart-events');
  const weeks = data.signs?.events?.weeks;
  if (!element || !weeks || weeks.week.length === 0) return false;
  lineChart(
    element,
    weeks.week,
    [
      { label: 'created', values: weeks.created },
      { label: 'updated', values: weeks.updated },
      { label: 'deleted', values: weeks.deleted },
    ],
    { incrs: [1, 2, 4, 13, 26, 52, 104], partial: weeks.partial },
  );
  return true;
}

function drawLiveChanges(): boolean {
  const element = document.getElementById('chart-live');
  const changes = data.signs?.live?.changes;
  if (!element || !changes || changes.moment.length === 0) return false;
  lineChart(
    element,
    changes.moment.map((m) => m.slice(0, 19).replace('T', ' ')),
    [
      { label: 'added', values: changes.added },
      { label: 'removed', values: changes.removed },
      { label: 'changed', values: changes.changed },
    ],
    { incrs: [1, 2, 7, 14, 28] },
  );
  return true;
}

function drawDaily(): boolean {
  const element = document.getElementById('chart-daily');
  const bicycle = data.bicycle;
  if (!element || !bicycle || bicycle.days.date.length === 0) return false;
  const days = bicycle.days;
  const shade = (i: number): string | undefined =>
    days.hours[i] === 25
      ? 'rgba(154, 103, 0, 0.16)'
      : days.hours[i] === 23
        ? 'rgba(130, 80, 223, 0.16)'
        : undefined;
  const labels = days.date.map((d, i) => {
    const hours = days.hours[i]!;
    const measured = days.measuredHours[i]!;
    if (measured < hours) return `${d} (${measured} of ${hours} h measured)`;
    return hours === 24 ? d : `${d} (${hours} h)`;
  });
  const draw = (id: string): void => {
    const location = bicycle.perLocation.find((l) => l.id === id);
    const existing = charts.findIndex((c) => c.element === element);
    if (existing >= 0) {
      charts[existing]!.chart.destroy();
      charts.splice(existing, 1);
    }
    lineChart(
      element,
      labels,
      [
        location
          ? { label: `${location.id} cyclists`, values: location.total }
          : { label: 'cyclists, all locations', values: days.total },
      ],
      { incrs: [1, 2, 7, 14, 28], shade, ticks: days.date, partial: days.partial },
    );
  };
  draw('');
  document
    .getElementById('daily-location')
    ?.addEventListener('change', (event) => draw((event.target as HTMLSelectElement).value));
  return true;
}

function drawProfile(): boolean {
  const element = document.getElementById('chart-profile');
  const profile = data.bicycle?.profile;
  if (!element || !profile || profile.weekday.length === 0) return false;
  lineChart(
    element,
    Array.from({ length: 24 }, (_, h) => `${String(h).padStart(2, '0')}:00`),
    [
      { label: 'weekdays', values: profile.weekday },
      { label: 'weekends', values: profile.weekend },
    ],
    { incrs: [1, 2, 3, 6] },
  );
  return true;
}

const drawn = [
  drawSignsMap(),
  drawBicycleMap(),
  drawEvents(),
  drawLiveChanges(),
  drawDaily(),
  drawProfile(),
].filter(Boolean).length;

let resizing: number | undefined;
window.addEventListener('resize', () => {
  window.clearTimeout(resizing);
  resizing = window.setTimeout(() => {
    for (const { chart, element } of charts)
      chart.setSize({ width: widthOf(element), height: 260 });
  }, 150);
});

document.body.dataset['drawn'] = String(drawn);
