import { describe, expect, it } from 'vitest';
import type { ReportData } from '../../src/report/data.js';
import { escapeHtml, renderPage, scriptJson, tileSource } from '../../src/report/html.js';
import { snapshotMoment } from '../../src/report/signs-queries.js';

const HOSTILE = `</script><script>alert(1)</script><img src=x onerror=alert(2)> "' & \u2028`;

function dataWith(text: string): ReportData {
  return {
    generatedAt: '2026-11-23T00:00:00.000Z',
    output: '/out',
    manifest: null,
    manifestProblem: null,
    datasets: [{ name: 'signs_live_snapshots', path: 'signs/live_snapshots', rows: 1 }],
    signs: {
      states: [
        {
          view: 'signs_live',
          title: 'Today',
          signs: 1,
          byCategory: [['C', 1]],
          byCode: [[text, 1]],
          byTown: [[text, 1]],
          points: {
            total: 1,
            shown: 1,
            id: ['1'],
            longitude: [5],
            latitude: [52],
            rvvCode: [text],
            road: [text],
            town: [text],
            text: [text],
            image: [`javascript:${text}`],
          },
        },
      ],
    },
    bicycle: null,
    quality: {
      quarantine: [{ dataset: 'signs_quarantine', rows: 1, byReason: [[text, 1]], example: text }],
      typing: [],
    },
    tiles: null,
    outline: null,
  };
}

describe('the report page', () => {
  it('escapes text in HTML and in attributes', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;',
    );
    expect(escapeHtml(null)).toBe('');
  });

  it('embeds data as JSON that no text can end early, and that reads back the same', () => {
    const value = { text: HOSTILE, list: ['<!--', '-->'] };
    const embedded = scriptJson(value);
    expect(embedded).not.toMatch(/<\/script|<!--|\u2028/i);
    expect(JSON.parse(embedded)).toEqual(value);
  });

  it('writes upstream text as text: no element, script or attribute comes of it', () => {
    const html = renderPage(dataWith(HOSTILE), { styles: '', scripts: [] }, { C: '#000' });
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>alert');
    expect(html.match(/<script/g)).toHaveLength(1); // the data block alone (no assets given)
    expect(html).toContain('&lt;img src=x onerror=alert(2)&gt;');
    const data = /<script id="report-data" type="application\/json">(.*?)<\/script>/s.exec(html);
    expect((JSON.parse(data![1]!) as ReportData).signs!.states[0]!.points.town[0]).toBe(HOSTILE);
  });

  it('allows images from the tile host only when tiles are asked for', () => {
    const policy = (html: string): string =>
      /http-equiv="Content-Security-Policy" content="([^"]*)"/
        .exec(html)![1]!
        .replaceAll('&#39;', "'");
    const without = renderPage(dataWith('x'), { styles: '', scripts: [] }, {});
    expect(policy(without)).toContain("default-src 'none'");
    expect(policy(without)).toContain('img-src data:;');
    const withTiles = renderPage(
      {
        ...dataWith('x'),
        tiles: { url: 'https://{s}.tile.example.org/{z}/{x}/{y}.png', attribution: 'x' },
      },
      { styles: '', scripts: [] },
      {},
    );
    expect(policy(withTiles)).toContain('img-src data: https://*.tile.example.org;');
    expect(tileSource('https://tile.openstreetmap.org/{z}/{x}/{y}.png')).toBe(
      'https://tile.openstreetmap.org',
    );
  });

  it('names snapshots by their moment', () => {
    expect(snapshotMoment('20261123T155259616Z')).toBe('2026-11-23T15:52:59Z');
    expect(snapshotMoment('something else')).toBe('something else');
    expect(snapshotMoment(null)).toBeNull();
  });
});
