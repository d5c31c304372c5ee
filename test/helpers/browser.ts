/**
 * Headless Chromium for the report's tests: Debian's chromium package (or the
 * browser ROAD_ETL_CHROMIUM names), driven by playwright-core, which downloads
 * nothing. Where no Chromium is installed, the browser tests are skipped with
 * a message saying so; CI installs it (.ci/run).
 */
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

const CANDIDATES = [
  process.env['ROAD_ETL_CHROMIUM'],
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
];

/** The Chromium to test with, or undefined where none is installed. */
export const CHROMIUM: string | undefined = CANDIDATES.find(
  (path): path is string => path !== undefined && path !== '' && existsSync(path),
);

export const NO_CHROMIUM = `no Chromium at ${CANDIDATES.filter(Boolean).join(' or ')}: the report's browser tests are skipped (apt-get install chromium, or set ROAD_ETL_CHROMIUM)`;

export interface OpenedPage {
  page: Page;
  /** Console errors and uncaught exceptions of the page. */
  errors: string[];
  /** Requests refused: everything but the file itself (and data: URLs). */
  refused: string[];
}

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM!,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Opens a page from disk with every other request refused, and waits until its script has drawn. */
export async function openReport(browser: Browser, file: string): Promise<OpenedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const refused: string[] = [];
  const own = pathToFileURL(file).href;
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    if (url === own || url.startsWith('data:')) return route.continue();
    refused.push(url);
    return route.abort('blockedbyclient');
  });
  await page.goto(own);
  await page.waitForFunction('document.body.dataset.drawn !== undefined', null, {
    timeout: 20_000,
  });
  return { page, errors, refused };
}

/** The number a figure of the page states, as its text reads (1,234 -> 1234). */
export async function figure(page: Page, id: string): Promise<number> {
  const text = await page.locator(`#figure-${id}`).textContent();
  return Number((text ?? '').replaceAll(',', ''));
}

/** Pixels of the element's canvases that are not transparent: what was drawn on them. */
export async function paintedPixels(page: Page, selector: string): Promise<number> {
  // (a string: the tests are type-checked without the DOM's types)
  return page.evaluate(`(() => {
    let painted = 0;
    for (const canvas of document.querySelectorAll(${JSON.stringify(`${selector} canvas`)})) {
      const context = canvas.getContext('2d');
      if (!context || canvas.width === 0 || canvas.height === 0) continue;
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) painted++;
    }
    return painted;
  })()`);
}
