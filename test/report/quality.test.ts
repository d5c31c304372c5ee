/**
 * The report's data quality section against the simulator's truth: records it
 * sends that cannot be typed are quarantined, and the report counts them by reason.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM, figure, launch, openReport } from '../helpers/browser.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({ seed: 59, signs: { signs: 150, badRecordRate: 0.05 } });
let browser: Browser | undefined;
afterAll(() => browser?.close());

describe('the report of messy records', () => {
  it('counts the quarantined records by reason, as many as the simulator sent', async () => {
    const { summary, output } = await runDefinition(
      await testDir(),
      `name: messy
source:
  signs: { url: "\${env.ROAD_ETL_SIGNS_URL}" }
report: true
steps:
  - { id: signs_events, kind: signs.events, options: { backoff_ms: 1 } }
`,
      {},
      { env: { ROAD_ETL_SIGNS_URL: simulator.env.ROAD_ETL_SIGNS_URL } },
    );
    expect(summary.status).toBe('succeeded');
    expect(summary.report).toBe(join(output, 'report', 'index.html'));
    const events = [...simulator.world.distinctEvents()];
    const bad = events.filter((e) => !/^\d+$/.test(String(e['id'])));
    expect(bad.length).toBeGreaterThan(3);

    const html = await readFile(join(output, 'report', 'index.html'), 'utf8');
    expect(html).toContain(`id="figure-quarantine-signs_quarantine" data-value="${bad.length}"`);
    expect(html).toMatch(
      new RegExp(
        `id="reasons-signs_quarantine".*<td>id is not an integer</td><td class="num">${bad.length}</td>`,
        's',
      ),
    );
    expect(html).toContain(`id="figure-signs-events" data-value="${events.length - bad.length}"`);

    if (!CHROMIUM) return;
    browser = await launch();
    const { page, errors, refused } = await openReport(
      browser,
      join(output, 'report', 'index.html'),
    );
    expect(await figure(page, 'quarantine-signs_quarantine')).toBe(bad.length);
    expect(errors).toEqual([]);
    expect(refused).toEqual([]);
  });
});
