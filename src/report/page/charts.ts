/* The report page's charts (uPlot): events per week, live changes, cyclists per day and hour. */

const charts: { chart: Chart; element: HTMLElement }[] = [];

function widthOf(element: HTMLElement): number {
  return Math.max(320, element.clientWidth || 800);
}

type Series = { label: string; values: (number | null)[] };

/**
 * The series split: the whole points make the lines; the partial ones (a day
 * or week the counts landed cut) are series of their own, drawn as hollow
 * points apart, so that they do not read as drops.
 */
function splitPartial(
  series: Series[],
  partial: boolean[] | undefined,
): { whole: Series[]; cut: Series[] } {
  const isPartial = (i: number): boolean => partial?.[i] === true;
  return {
    whole: series.map((s) => ({ ...s, values: s.values.map((v, i) => (isPartial(i) ? null : v)) })),
    cut: partial?.some(Boolean)
      ? series.map((s) => ({
          label: `${s.label} (partial)`,
          values: s.values.map((v, i) => (isPartial(i) ? v : null)),
        }))
      : [],
  };
}

/** A hook that paints the band of each label `shade` gives a colour, beneath the lines. */
function shadeBands(
  labels: string[],
  shade: (i: number) => string | undefined,
): NonNullable<ChartOptions['hooks']> {
  return {
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
  };
}

const valueText = (_u: Chart, v: number | null): string => (v === null ? '' : decimal.format(v));

/** A line chart over categories (weeks, days, hours) given by their labels. */
function lineChart(
  element: HTMLElement,
  labels: string[],
  series: Series[],
  options: {
    incrs: number[];
    shade?: (i: number) => string | undefined;
    /** Shorter labels for the axis (default: the labels). */
    ticks?: string[];
    /** Points the data covers only in part: drawn apart, on a grey band. */
    partial?: boolean[];
  } = { incrs: [1] },
): Chart {
  const ticks = options.ticks ?? labels;
  const { whole, cut } = splitPartial(series, options.partial);
  const shade = (i: number): string | undefined =>
    options.partial?.[i] === true ? 'rgba(110, 119, 129, 0.14)' : options.shade?.(i);
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
        value: valueText,
      })),
      ...cut.map((s, k) => ({
        label: s.label,
        stroke: PALETTE[k % PALETTE.length]!,
        width: 1,
        paths: () => null,
        points: { show: true, size: 7, fill: '#ffffff' },
        value: valueText,
      })),
    ],
    ...(options.shade || cut.length > 0 ? { hooks: shadeBands(labels, shade) } : {}),
  };
  const chart = new uPlot(
    chartOptions,
    [
      labels.map((_, i) => i),
      ...whole.map((s) => s.values),
      ...cut.map((s) => s.values),
    ] as ChartData,
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
    const hours = days.hours[i];
    const measured = days.measuredHours[i]!;
    if (hours === null || hours === undefined) return `${d} (no counts)`;
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
