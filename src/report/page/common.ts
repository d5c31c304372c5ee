/*
 * The report page's scripts draw the maps (Leaflet, maps.ts) and charts
 * (uPlot, charts.ts) from the data the page embeds (#report-data); main.ts
 * draws them all. The figures and tables are already in the HTML: these only
 * draw. They run in the browser as classic scripts, in that order after
 * Leaflet's and uPlot's, sharing one global scope, and fetch nothing. This one
 * holds what they share: the data and how values are written.
 */
/// <reference types="leaflet" />
/// <reference types="uplot" />

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
