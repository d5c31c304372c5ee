/** The report page's own styles (Leaflet's and uPlot's come with them). */
export const PAGE_STYLES = `
:root { --ink: #1d2430; --muted: #5b6574; --line: #dde2e8; --bg: #f6f7f9; --accent: #1f6feb; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--ink); background: var(--bg); }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 16px 24px 0; }
header h1 { margin: 0 0 4px; font-size: 22px; }
nav { display: flex; gap: 18px; margin-top: 8px; }
nav a { color: var(--accent); text-decoration: none; padding: 6px 0 10px; border-bottom: 2px solid transparent; }
nav a:hover { border-bottom-color: var(--accent); }
main { max-width: 1200px; margin: 0 auto; padding: 8px 24px 48px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 20px 20px; margin: 18px 0; }
h2 { font-size: 18px; margin: 12px 0; }
h3 { font-size: 15px; margin: 22px 0 6px; }
.muted { color: var(--muted); }
.absent { color: var(--muted); font-style: italic; border-left: 3px solid var(--line); padding-left: 10px; }
.error { color: var(--bad); }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--bg); padding: 1px 4px; border-radius: 4px; }
.figures { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0 12px; }
.figure { display: inline-flex; flex-direction: column; min-width: 150px; padding: 10px 14px; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); }
.figure .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure .label { color: var(--muted); font-size: 12px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: var(--line); }
.badge.succeeded { background: #dafbe1; color: var(--ok); }
.badge.failed { background: #ffebe9; color: var(--bad); }
.badge.interrupted, .badge.skipped { background: #fff8c5; color: var(--warn); }
.badge.reused { background: #ddf4ff; color: var(--accent); }
table { border-collapse: collapse; margin: 10px 0; font-variant-numeric: tabular-nums; display: block; max-width: 100%; overflow-x: auto; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { text-align: left; padding: 4px 10px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
td.num, th.num { text-align: right; }
tr.error td { border-bottom: 1px solid var(--line); font-size: 12px; }
table.counts td.bar { width: 160px; }
table.counts td.bar span { display: block; height: 10px; margin-top: 4px; background: var(--accent); opacity: 0.7; border-radius: 2px; }
.columns { display: flex; flex-wrap: wrap; gap: 32px; align-items: flex-start; }
.map { height: 460px; border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; background: #eef1f4; }
.chart { margin: 8px 0; min-height: 40px; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; font-size: 12px; margin: 4px 0; }
.legend .key i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; vertical-align: -1px; }
.chooser { display: flex; gap: 18px; margin: 8px 0; }
.quality { margin-bottom: 12px; }
table.calendar { border-collapse: separate; border-spacing: 1px; }
table.calendar th { font-size: 10px; padding: 0 2px; border: 0; text-align: center; }
table.calendar th.who { text-align: left; white-space: nowrap; padding-right: 6px; }
table.calendar td { width: 11px; min-width: 11px; height: 13px; padding: 0; border: 0; }
.q-ok { background: #8fd19e; }
.q-suspect { background: #f2c14e; }
.q-faulty { background: #d64545; }
.q-none { background: #e6e9ed; }
span.key { display: inline-block; width: 10px; height: 10px; vertical-align: -1px; margin-left: 8px; }
.leaflet-popup-content { font-size: 12px; }
.leaflet-popup-content table { margin: 0; }
.leaflet-popup-content th, .leaflet-popup-content td { padding: 1px 8px 1px 0; font-size: 12px; }
`;
