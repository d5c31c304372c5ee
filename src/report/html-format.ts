/** Small pieces of the report's HTML: escaping, numbers, figures and count tables. */
import type { Count } from './data.js';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text made safe for HTML content and attribute values. */
export function escapeHtml(value: string | number | boolean | null | undefined): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** JSON made safe inside <script>: no "</script", no "<!--", and the JS line separators escaped. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
export const fmt = (n: number): string => integer.format(n);
export const percent = (n: number): string =>
  `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 }).format(n * 100)}%`;

/** A number the page states, in the DOM with its exact value for readers and checks. */
export function figure(id: string, value: number, label: string): string {
  return `<div class="figure"><span class="value" id="figure-${escapeHtml(id)}" data-value="${value}">${fmt(value)}</span><span class="label">${escapeHtml(label)}</span></div>`;
}

export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 90) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 90 ? `${m} min ${Math.round(s - m * 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]!}`;
}

/** A ranking as a table, each count with a bar relative to the largest. */
export function countTable(
  caption: string,
  head: string,
  counts: readonly Count[],
  id: string,
): string {
  if (counts.length === 0) return `<p class="muted">${escapeHtml(caption)}: none.</p>`;
  const max = Math.max(...counts.map(([, n]) => n), 1);
  const rows = counts
    .map(
      ([label, n]) =>
        `<tr><td>${escapeHtml(label)}</td><td class="num">${fmt(n)}</td><td class="bar"><span style="width:${((100 * n) / max).toFixed(1)}%"></span></td></tr>`,
    )
    .join('');
  return `<table class="counts" id="${escapeHtml(id)}"><caption>${escapeHtml(caption)}</caption><thead><tr><th>${escapeHtml(head)}</th><th class="num">Count</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function absent(what: string, why: string): string {
  return `<p class="absent">${escapeHtml(what)} ${escapeHtml(why)}</p>`;
}

export function paramText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(paramText).join(', ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value as string | number);
}

/** One pipeline's last run: its figures (ids suffixed after the first run), params and steps. */
