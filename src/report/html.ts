/**
 * The report page: its text, figures and tables are HTML written here (readable
 * with scripts off, and what the figures say is in the DOM as written); the
 * maps and charts are drawn in the browser by the page's script from the same
 * data, embedded as JSON. Scripts and styles are inlined: the file needs
 * nothing beside it and no network.
 */
import type { PageManifest, PageRun, ReportData } from './data.js';
import type { PageAssets } from './assets.js';
import {
  absent,
  bytes,
  duration,
  escapeHtml,
  figure,
  fmt,
  paramText,
  scriptJson,
} from './html-format.js';
import { bicycleSection, datasetsSection, qualitySection, signsSection } from './sections.js';

export { escapeHtml, scriptJson } from './html-format.js';

function runBlock(run: PageRun, index: number): string {
  const id = (name: string): string => (index === 0 ? name : `${name}-${index + 1}`);
  const params = Object.entries(run.params)
    .map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(paramText(v))}</td></tr>`)
    .join('');
  const steps = run.steps
    .map(
      (s) =>
        `<tr class="status-${escapeHtml(s.status)}"><td>${escapeHtml(s.id)}</td><td>${escapeHtml(s.kind)}</td><td><span class="badge ${escapeHtml(s.status)}">${escapeHtml(s.status)}</span></td><td class="num">${fmt(s.rows_in)}</td><td class="num">${fmt(s.rows_out)}</td><td class="num">${fmt(s.files)}</td><td class="num">${duration(s.duration_ms)}</td><td class="num">${s.peak_rss_bytes ? bytes(s.peak_rss_bytes) : ''}</td></tr>${s.error ? `<tr class="error"><td colspan="8">${escapeHtml(s.error)}</td></tr>` : ''}`,
    )
    .join('');
  return `<div class="run" data-pipeline="${escapeHtml(run.pipeline)}">
<h3>Pipeline ${escapeHtml(run.pipeline)}</h3>
<div class="figures">
<div class="figure"><span class="value"><span class="badge ${escapeHtml(run.status)}" id="${id('run-status')}">${escapeHtml(run.status)}</span></span><span class="label">status</span></div>
<div class="figure"><span class="value">${duration(run.duration_ms)}</span><span class="label">from ${escapeHtml(run.started_at)} to ${escapeHtml(run.finished_at)}</span></div>
${figure(id('run-steps'), run.steps.length, 'steps')}
${figure(
  id('run-rows'),
  run.steps.reduce((sum, s) => sum + s.rows_out, 0),
  'rows written',
)}
</div>
${run.error ? `<p class="error">${escapeHtml(run.error)}</p>` : ''}
<p>${escapeHtml(run.definition)}, road-etl ${escapeHtml(run.road_etl_version)}.</p>
${params ? `<table class="params"><caption>Params</caption><tbody>${params}</tbody></table>` : ''}
<table id="${id('run-steps-table')}"><caption>Steps</caption><thead><tr><th>Step</th><th>Kind</th><th>Status</th><th class="num">Rows in</th><th class="num">Rows out</th><th class="num">Files</th><th class="num">Duration</th><th class="num">Peak memory</th></tr></thead><tbody>${steps}</tbody></table>
</div>`;
}

function runSection(manifest: PageManifest | null, problem: string | null): string {
  if (!manifest)
    return `<section id="run"><h2>The runs</h2>${
      problem
        ? absent(
            'The runs are not known:',
            `${problem}. The sections below describe the datasets found.`,
          )
        : absent(
            'No manifest.json in this folder:',
            'no run has finished writing here, so the steps are not known. The sections below describe the datasets found.',
          )
    }</section>`;
  const exports = manifest.exports
    .map(
      (e) =>
        `<tr><td><a href="../${escapeHtml(e.path)}">${escapeHtml(e.path)}</a></td><td>${escapeHtml(e.format)}</td><td class="num">${e.rows === null ? '' : fmt(e.rows)}</td><td class="num">${bytes(e.bytes)}</td></tr>`,
    )
    .join('');
  return `<section id="run">
<h2>The runs</h2>
<p>The last run of each pipeline that has written this folder, the latest first (manifest.json, written ${escapeHtml(manifest.updated_at)}).</p>
${manifest.runs.map(runBlock).join('\n')}
${exports ? `<table id="run-exports"><caption>Extracts in the folder</caption><thead><tr><th>File</th><th>Format</th><th class="num">Rows</th><th class="num">Size</th></tr></thead><tbody>${exports}</tbody></table>` : ''}
</section>`;
}

/** The CSP source of a tile URL template: its scheme and host, a {s} subdomain as *. */
export function tileSource(template: string): string {
  const match = /^(https?:\/\/[^/?#]+)/.exec(template);
  return (match?.[1] ?? template).replace(/\{s\}/g, '*');
}

export function renderPage(
  data: ReportData,
  assets: PageAssets,
  colors: Record<string, string>,
): string {
  const title = data.manifest
    ? `road-etl report: ${data.manifest.runs.map((r) => r.pipeline).join(', ')}`
    : 'road-etl report';
  const imgSources = ['data:', ...(data.tiles ? [tileSource(data.tiles.url)] : [])];
  const policy = `default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src ${imgSources.join(' ')}; connect-src 'none'; base-uri 'none'; form-action 'none'`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(policy)}">
<title>${escapeHtml(title)}</title>
<style>${assets.styles}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p class="muted">Written ${escapeHtml(data.generatedAt)} from <code>${escapeHtml(data.output)}</code>.</p>
<nav><a href="#run">Run</a><a href="#signs">Traffic signs</a><a href="#bicycle">Bicycle counts</a><a href="#quality">Data quality</a><a href="#datasets">Datasets</a></nav>
</header>
<main>
${runSection(data.manifest, data.manifestProblem)}
${signsSection(data, colors)}
${bicycleSection(data)}
${qualitySection(data)}
${datasetsSection(data)}
</main>
<script id="report-data" type="application/json">${scriptJson({ ...data, colors })}</script>
${assets.scripts.map((s) => `<script>${s}</script>`).join('\n')}
</body>
</html>
`;
}
