/**
 * What the page inlines: Leaflet (maps) and uPlot (charts) as npm ships them,
 * their styles, and the page's own scripts (page/*.ts, compiled by
 * `npm run build` into dist/report-page/) and styles.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { RunError } from '../errors.js';
import { installed } from '../util/root.js';
import { PAGE_STYLES } from './styles.js';

export interface PageAssets {
  styles: string;
  scripts: string[];
}

const require = createRequire(import.meta.url);

/** The page's own scripts, compiled from src/report/page/, in the order they run. */
const PAGE_SCRIPTS = ['common', 'maps', 'charts', 'main'].map((name) =>
  installed(`dist/report-page/page/${name}.js`),
);

async function read(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new RunError(
      `Cannot read ${what} for the report (${path}): ${(error as Error).message}. ` +
        'Install road-etl whole (npm ci) and build it (npm run build).',
      { cause: error },
    );
  }
}

/** A script made safe to inline in <script>: no "</script" ends it early. */
function inlineScript(source: string): string {
  return source.replace(/<\/(script)/gi, '<\\/$1');
}

let cached: Promise<PageAssets> | undefined;

export function pageAssets(): Promise<PageAssets> {
  cached ??= (async () => {
    const [leafletCss, uplotCss, leaflet, uplot, ...page] = await Promise.all([
      read(require.resolve('leaflet/dist/leaflet.css'), "Leaflet's styles"),
      read(require.resolve('uplot/dist/uPlot.min.css'), "uPlot's styles"),
      read(require.resolve('leaflet/dist/leaflet.js'), 'Leaflet'),
      read(require.resolve('uplot/dist/uPlot.iife.min.js'), 'uPlot'),
      ...PAGE_SCRIPTS.map((path) => read(path, "the page's scripts")),
    ]);
    return {
      // Leaflet's marker and layer-control images are not used; nothing may be fetched.
      styles: [leafletCss.replace(/url\(images\/[^)]*\)/g, 'none'), uplotCss, PAGE_STYLES].join(
        '\n',
      ),
      scripts: [leaflet, uplot, ...page].map(inlineScript),
    };
  })();
  cached.catch(() => (cached = undefined));
  return cached;
}
