/**
 * `result.json` → one self-contained HTML page: inline CSS, inline SVG plots
 * drawn here, no script and no request of any kind (a CSP of
 * `default-src 'none'` says so to the browser too). Every string that came
 * from the result — the target URL, request names, error codes, server stats —
 * is HTML-escaped.
 *
 * Plots have stable ids for tests and tools: `#latency-over-time` (paths
 * `.series.p50`, `.series.p99`), `#rps-over-time` (`.series.rps`, `.series.errors`),
 * `#backlog-over-time` (open loop, `.series.backlog`), `#percentiles`
 * (`.series.latency`). A plot without data is a `<p class="no-data">`.
 */
import type { BenchResult, ErrorSummary, LatencySummary, TimelinePoint } from './types.ts';

/**
 * Escape text for HTML content and attribute values.
 *
 * @example
 * escapeHtml('<script>'); // '&#60;script&#62;'
 */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
const esc = escapeHtml;

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

function fmtNum(x: unknown, digits = 0): string {
  return finite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';
}

function fmtMs(x: unknown): string {
  if (!finite(x)) return '—';
  const digits = x < 1 ? 3 : x < 10 ? 2 : x < 100 ? 1 : 0;
  return `${fmtNum(x, digits)} ms`;
}

function fmtPct(x: unknown): string {
  return finite(x) ? `${fmtNum(x * 100, 2)} %` : '—';
}

// ---------------------------------------------------------------- plots

interface Series {
  cls: string;
  label: string;
  points: [number, number][];
}

interface Tick {
  value: number;
  label: string;
}

interface Plot {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Fixed x ticks (the percentile plot); otherwise round numbers over the data. */
  xTicks?: Tick[];
}

const W = 760;
const H = 280;
const M = { left: 64, right: 40, top: 28, bottom: 44 };

/** Round tick values from 0 (or lo) to at least hi: steps of 1, 2 or 5 × 10^k. */
function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let v = Math.floor(lo / step) * step; v < hi + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

function tickLabel(v: number): string {
  return Math.abs(v) >= 1000 ? fmtNum(v) : String(Number(v.toPrecision(6)));
}

function renderPlot(p: Plot): string {
  const all = p.series.flatMap((s) => s.points).filter(([x, y]) => finite(x) && finite(y));
  if (all.length === 0) return `<h3>${esc(p.title)}</h3><p class="no-data" id="${esc(p.id)}-no-data">no data</p>`;
  const xs = all.map(([x]) => x);
  const ys = all.map(([, y]) => y);
  const xTicks = p.xTicks ?? niceTicks(Math.min(...xs), Math.max(...xs), 8).map((v) => ({ value: v, label: tickLabel(v) }));
  const yTicks = niceTicks(0, Math.max(...ys));
  const x0 = Math.min(...xTicks.map((t) => t.value), ...xs);
  const x1 = Math.max(...xTicks.map((t) => t.value), ...xs);
  const y1 = yTicks.at(-1) as number;
  const sx = (x: number) => M.left + ((x - x0) / (x1 - x0 || 1)) * (W - M.left - M.right);
  const sy = (y: number) => H - M.bottom - (y / (y1 || 1)) * (H - M.top - M.bottom);
  const r = (v: number) => v.toFixed(1);

  const grid = [
    ...yTicks.map((v) => `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${r(sy(v))}" y2="${r(sy(v))}"/><text class="tick" x="${M.left - 6}" y="${r(sy(v) + 4)}" text-anchor="end">${esc(tickLabel(v))}</text>`),
    ...xTicks.map((t) => `<line class="tickmark" x1="${r(sx(t.value))}" x2="${r(sx(t.value))}" y1="${H - M.bottom}" y2="${H - M.bottom + 5}"/><text class="tick" x="${r(sx(t.value))}" y="${H - M.bottom + 18}" text-anchor="middle">${esc(t.label)}</text>`),
  ];
  const axes = `<line class="axis" x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}"/><line class="axis" x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}"/>`;
  const labels =
    `<text class="label" x="${(M.left + W - M.right) / 2}" y="${H - 6}" text-anchor="middle">${esc(p.xLabel)}</text>` +
    `<text class="label" transform="translate(14 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(p.yLabel)}</text>`;
  const paths = p.series.map((s) => {
    // A missing point (NaN, a second without requests) breaks the line instead of dropping it to 0.
    let d = '';
    let pen = 'M';
    for (const [x, y] of s.points) {
      if (!finite(x) || !finite(y)) {
        pen = 'M';
        continue;
      }
      d += `${pen}${r(sx(x))},${r(sy(y))} `;
      pen = 'L';
    }
    return `<path class="series ${esc(s.cls)}" d="${d.trim()}"><title>${esc(s.label)}</title></path>`;
  });
  const legend = p.series.map((s, i) => {
    const x = W - M.right - 120 * (p.series.length - i);
    return `<line class="series ${esc(s.cls)}" x1="${x}" x2="${x + 18}" y1="14" y2="14"/><text class="legend" x="${x + 24}" y="18">${esc(s.label)}</text>`;
  });
  return (
    `<h3>${esc(p.title)}</h3>` +
    `<svg id="${esc(p.id)}" class="plot" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(p.title)}" xmlns="http://www.w3.org/2000/svg">` +
    `${grid.join('')}${axes}${paths.join('')}${legend.join('')}${labels}</svg>`
  );
}

/** HDR-style x position of a percentile: 0 → 0, 90 → 1, 99 → 2, 99.9 → 3 … */
function nines(p: number): number {
  return -Math.log10(Math.max(1e-7, 1 - p / 100));
}

function percentilePlot(pairs: [number, number][]): string {
  const points = pairs.filter((pair) => Array.isArray(pair) && finite(pair[0]) && finite(pair[1])).sort((a, b) => a[0] - b[0]);
  // The axis ends at the nines of the last percentile below 100; p100 (the max) is drawn at that edge.
  const top = Math.max(2, Math.ceil(Math.max(0, ...points.filter(([p]) => p < 100).map(([p]) => nines(p))) - 1e-9));
  const xTicks: Tick[] = [];
  for (let k = 0; k <= top; k++) xTicks.push({ value: k, label: k === 0 ? '0%' : `${(100 - 10 ** (2 - k)).toFixed(Math.max(0, k - 2))}%` });
  return renderPlot({
    id: 'percentiles',
    title: 'Latency by percentile',
    xLabel: 'percentile (log scale of 1 / (1 − p))',
    yLabel: 'latency (ms)',
    xTicks,
    series: [{ cls: 'latency', label: 'latency', points: points.map(([p, ms]) => [Math.min(top, nines(p)), ms]) }],
  });
}

function timelinePlots(timeline: TimelinePoint[], open: boolean): string {
  const at = (p: TimelinePoint, i: number) => (finite(p.t) ? p.t : i + 1);
  const line = (cls: string, label: string, pick: (p: TimelinePoint) => unknown): Series => ({
    cls,
    label,
    points: timeline.map((p, i) => [at(p, i), finite(pick(p)) ? (pick(p) as number) : NaN]),
  });
  const plots = [
    renderPlot({ id: 'latency-over-time', title: 'Latency over time', xLabel: 'seconds', yLabel: 'latency (ms)', series: [line('p50', 'p50', (p) => p.p50_ms), line('p99', 'p99', (p) => p.p99_ms)] }),
    renderPlot({ id: 'rps-over-time', title: 'Requests per second', xLabel: 'seconds', yLabel: 'requests / s', series: [line('rps', 'rps', (p) => p.rps), line('errors', 'errors / s', (p) => p.errors)] }),
  ];
  if (open || timeline.some((p) => finite(p.backlog))) {
    plots.push(renderPlot({ id: 'backlog-over-time', title: 'Open-loop backlog', xLabel: 'seconds', yLabel: 'requests due, not sent', series: [line('backlog', 'backlog', (p) => p.backlog)] }));
  }
  return plots.join('\n');
}

// ---------------------------------------------------------------- tables

function table(id: string, head: string[], rows: string[][], empty = 'no data'): string {
  if (rows.length === 0) return `<p class="no-data" id="${id}-no-data">${esc(empty)}</p>`;
  return `<table id="${id}"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.join('')}</tr>`).join('')}</tbody></table>`;
}

/** A cell: text is escaped here; `metric` names the figure for tools and tests. */
function td(text: string, metric?: string): string {
  return `<td${metric ? ` data-metric="${esc(metric)}"` : ''}>${esc(text)}</td>`;
}

function latencyCells(l: Partial<LatencySummary> | undefined): string[] {
  return [td(fmtMs(l?.p50), 'p50'), td(fmtMs(l?.p90), 'p90'), td(fmtMs(l?.p99), 'p99'), td(fmtMs(l?.p999), 'p999'), td(fmtMs(l?.max), 'max')];
}

function countTable(id: string, label: string, counts: Record<string, number> | undefined, total: number): string {
  const rows = Object.entries(counts ?? {})
    .sort((a, b) => (finite(b[1]) ? b[1] : 0) - (finite(a[1]) ? a[1] : 0))
    .map(([k, n]) => [td(k, 'key'), td(fmtNum(n), 'count'), td(total > 0 && finite(n) ? fmtPct(n / total) : '—')]);
  return table(id, [label, 'count', 'share'], rows, 'none');
}

function plain(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'object') return json(value);
  return String(value);
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function errorsOf(e: Partial<ErrorSummary> | undefined, requests: number): string {
  return finite(e?.total) ? `${fmtNum(e.total)}${requests > 0 ? ` (${fmtPct(e.total / requests)})` : ''}` : '—';
}

// ---------------------------------------------------------------- page

const CSS = `
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;padding:0 16px;color:#1a202c}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e2e8f0}h3{font-size:14px;margin:16px 0 4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}dt{color:#4a5568}dd{margin:0;word-break:break-all}
table{border-collapse:collapse;margin:4px 0}th,td{padding:3px 10px;border-bottom:1px solid #edf2f7;text-align:right}
th:first-child,td:first-child,#per-request td:nth-child(-n+3),#per-request th:nth-child(-n+3){text-align:left}th{background:#f7fafc;font-weight:600}
pre{background:#f7fafc;padding:8px;overflow:auto;max-height:400px}
.no-data{color:#718096;font-style:italic}.warn{color:#c53030;font-weight:600}
svg.plot{display:block;max-width:100%;height:auto}
.axis{stroke:#4a5568}.grid{stroke:#edf2f7}.tickmark{stroke:#4a5568}.tick,.legend{font-size:11px;fill:#4a5568}.label{font-size:12px;fill:#2d3748}
.series{fill:none;stroke-width:1.6}.p50{stroke:#3182ce}.p99{stroke:#e53e3e}.rps{stroke:#38a169}.errors{stroke:#dd6b20}.backlog{stroke:#805ad5}.latency{stroke:#2c5282}
`;

/**
 * Render a result as a self-contained HTML page (no script, no network).
 *
 * @example
 * writeFileSync('report.html', renderReport(JSON.parse(readFileSync('result.json', 'utf8'))));
 */
export function renderReport(result: BenchResult): string {
  const s = result.scenario ?? ({} as Partial<BenchResult['scenario']>);
  const requests = finite(result.throughput?.requests) ? result.throughput.requests : 0;
  const timeline = Array.isArray(result.timeline) ? result.timeline : [];
  const open = s.mode === 'open';
  const load = open ? `${fmtNum(s.rate)} requests/s (at most ${fmtNum(s.connections)} connections)` : `${fmtNum(s.connections)} connections`;
  const title = `svc bench — ${s.name ?? 'result'}`;

  const header: [string, string][] = [
    ['target', `${result.target?.url ?? '—'}${result.target?.entry ? ` (${result.target.entry})` : ''}`],
    ['scenario', String(s.name ?? '—')],
    ['mode', open ? 'open loop' : 'closed loop'],
    [open ? 'rate' : 'connections', load],
    ['duration', `${fmtNum(s.duration_s)} s measured after ${fmtNum(s.warmup_s)} s warm-up`],
    ['threads / users', `${fmtNum(s.threads)} generator thread${s.threads === 1 ? '' : 's'}, ${fmtNum(s.users)} user${s.users === 1 ? '' : 's'}`],
    ['at', String(result.at ?? '—')],
    ...Object.entries(result.machine ?? {}).map(([k, v]): [string, string] => [`machine: ${k}`, plain(v)]),
  ];

  const l = result.latency_ms;
  const summary = table(
    'summary',
    ['rps', 'requests', 'p50', 'p90', 'p99', 'p99.9', 'max', 'mean', 'errors'],
    requests > 0 ? [[td(fmtNum(result.throughput?.rps, 1), 'rps'), td(fmtNum(requests), 'requests'), ...latencyCells(l), td(fmtMs(l?.mean), 'mean'), td(errorsOf(result.errors, requests), 'errors')]] : [],
    'no data: no request was measured',
  );

  const ol = result.open_loop;
  const openLoop = ol
    ? `<h2>Open loop</h2>${table('open-loop', ['asked rps', 'achieved rps', 'kept up', 'backlog max', 'backlog at end'], [
        [td(fmtNum(ol.target_rps)), td(fmtNum(ol.achieved_rps, 1)), `<td class="${ol.kept_up ? '' : 'warn'}">${ol.kept_up ? 'yes' : 'no'}</td>`, td(fmtNum(ol.backlog_max)), td(fmtNum(ol.backlog_end))],
      ])}`
    : '';

  const declared = new Map((s.requests ?? []).map((r) => [r.name, r]));
  const perRequest = table(
    'per-request',
    ['request', 'method', 'path', 'requests', 'rps', 'p50', 'p90', 'p99', 'p99.9', 'max', 'errors'],
    Object.entries(result.per_request ?? {}).map(([name, r]) => [
      td(name, 'name'),
      td(declared.get(name)?.method ?? '—'),
      td(declared.get(name)?.path ?? '—'),
      td(fmtNum(r?.requests), 'requests'),
      td(fmtNum(r?.rps, 1), 'rps'),
      ...latencyCells(r?.latency_ms),
      td(errorsOf(r?.errors, finite(r?.requests) ? r.requests : 0), 'errors'),
    ]),
  );

  const ws = result.ws;
  const wsSection = ws
    ? `<h2>WebSocket</h2>${table('ws', ['walker', 'clients', 'rate', 'sent', 'expected', 'delivered', 'delivery', 'p50', 'p90', 'p99', 'p99.9', 'max'], [
        [td(String(ws.walker)), td(fmtNum(ws.clients)), td(`${fmtNum(ws.rate)}/s`), td(fmtNum(ws.sent)), td(fmtNum(ws.expected)), td(fmtNum(ws.delivered)), td(fmtPct(ws.delivery_ratio), 'delivery'), ...latencyCells(ws.latency_ms)],
      ])}`
    : '';

  const server = result.server;
  const serverSection = server
    ? `<h2>Server</h2>` +
      (server.metrics ? `<h3>Metrics</h3>${table('server-metrics', ['metric', 'value'], Object.entries(server.metrics).map(([k, v]) => [td(k), td(finite(v) ? fmtNum(v, 3) : plain(v))]))}` : '') +
      (server.stats_before !== undefined ? `<h3>Stats before</h3><pre id="stats-before">${esc(json(server.stats_before))}</pre>` : '') +
      (server.stats_after !== undefined ? `<h3>Stats after</h3><pre id="stats-after">${esc(json(server.stats_after))}</pre>` : '')
    : '';

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head>
<body>
<h1>${esc(title)}</h1>
<dl id="header">${header.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>
<h2>Summary</h2>
${summary}
${openLoop}
<h2>Errors</h2>
<h3>By status</h3>
${countTable('errors-by-status', 'status', result.errors?.by_status, requests)}
<h3>By code</h3>
${countTable('errors-by-code', 'code', result.errors?.by_code, requests)}
<h2>Over time</h2>
${timelinePlots(timeline, open)}
<h2>Latency distribution</h2>
${percentilePlot(Array.isArray(result.percentiles) ? result.percentiles : [])}
<h2>Per request</h2>
${perRequest}
${wsSection}
${serverSection}
</body>
</html>
`;
}
