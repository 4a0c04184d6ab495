// The HTML report of a bench result: self-contained (no request of any kind,
// checked in headless Chromium), the plots drawn and sized, the summary
// figures shown, strings from the result escaped, empty results rendered.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import type { Browser } from 'playwright-core';
import { syntheticResult } from './synthetic.ts';
import { escapeHtml, renderReport } from '../../../bench/harness/report.ts';
import type { BenchResult } from '../../../bench/harness/types.ts';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';

// Page-side names for the functions that run in the browser (this file compiles without the DOM lib).
declare const document: any;
type Element = { getAttribute(name: string): string | null; getBoundingClientRect(): { width: number; height: number } };

const XSS = '<script>alert(1)</script>';
const shots = new URL('../../../.tap/screenshots/', import.meta.url).pathname;

function hostile(): BenchResult {
  const r = syntheticResult({ seed: 7, requests: [{ name: XSS }, { name: 'ok "quoted" & <b>bold</b>' }], errorRate: 0.01, url: `http://127.0.0.1:1/${XSS}?a=1&b="2"` });
  r.errors.by_code = { [XSS]: 3, '<img src=x onerror=alert(2)>': 1 };
  r.errors.by_status[`${XSS}`] = 1;
  r.machine = { cpu: '<svg onload=alert(3)>', nested: { html: '</pre><script>alert(4)</script>' } };
  r.server = { stats_after: { name: XSS }, metrics: { [XSS]: 1 } };
  r.ws = { ...syntheticResult({ ws: true }).ws!, walker: XSS };
  return r;
}

function empty(): BenchResult {
  return syntheticResult({ seconds: 0 });
}

t.test('the HTML on its own', async (t) => {
  t.test('escapes the five characters', async (t) => {
    t.equal(escapeHtml(`<a href="x">'&'</a>`), '&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
  });

  t.test('refers to nothing outside the page', async (t) => {
    const html = renderReport(syntheticResult({ ws: true, server: true, rate: 1000, rps: 1000 }));
    t.notMatch(html, /<script/i, 'no script');
    t.notMatch(html, /\ssrc=/i, 'no src attribute');
    t.notMatch(html, /url\(|@import/i, 'no CSS resource');
    for (const [, href] of html.matchAll(/href="([^"]*)"/g)) t.equal(href, 'data:,', 'only the empty data: icon');
    t.match(html, /default-src 'none'/, 'and a CSP that forbids loading anything');
  });

  t.test('a hostile result is escaped everywhere', async (t) => {
    const html = renderReport(hostile());
    t.notMatch(html, /<script/i);
    t.notMatch(html, /<img/i);
    t.notMatch(html, /<svg onload/i);
    t.notMatch(html, /<b>bold/);
    t.match(html, '&#60;script&#62;alert(1)&#60;/script&#62;');
  });

  t.test('empty, zero and NaN figures render "no data", never throw', async (t) => {
    const html = renderReport(empty());
    t.match(html, /no data/);
    t.notMatch(html, /id="latency-over-time"/, 'no empty plot');
    t.match(html, /id="latency-over-time-no-data"/);
    t.match(html, /id="percentiles-no-data"/);

    const broken = syntheticResult({ seconds: 5 });
    broken.throughput.rps = NaN;
    broken.latency_ms.p99 = NaN;
    (broken.latency_ms as unknown as Record<string, unknown>).p50 = null; // NaN after a JSON round trip
    for (const p of broken.timeline) p.p99_ms = NaN;
    broken.percentiles = [[50, NaN], [99, Infinity]];
    t.doesNotThrow(() => renderReport(broken));
    const html2 = renderReport(broken);
    t.match(html2, /id="latency-over-time"/, 'p50 still drawn');
    t.match(html2, /<path class="series p99" d="">/, 'the p99 series is empty, not zero');
    t.match(html2, /id="percentiles-no-data"/);

    const bare = { format: 'svc-bench/1', at: 'now', target: { url: 'x' } } as unknown as BenchResult;
    t.doesNotThrow(() => renderReport(bare), 'even a result missing whole sections');
  });
});

t.test('in headless Chromium', { skip: chromiumAvailable() ? false : 'Debian chromium is not installed (.ci/run installs it)' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-report-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(shots, { recursive: true });
  const browser: Browser = await launch();
  t.teardown(() => browser.close());

  /** Open a rendered result as a file and record every request, console error and dialog. */
  async function open(name: string, result: BenchResult) {
    const file = join(dir, `${name}.html`);
    writeFileSync(file, renderReport(result));
    const url = pathToFileURL(file).href;
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const requests: string[] = [];
    const problems: string[] = [];
    const dialogs: string[] = [];
    await page.route('**', (route) => {
      if (route.request().url() === url) return route.continue();
      requests.push(route.request().url());
      return route.abort();
    });
    page.on('request', (r) => {
      if (r.url() !== url && !requests.includes(r.url())) requests.push(r.url());
    });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.screenshot({ path: join(shots, `bench-report-${name}.png`), fullPage: true });
    t.teardown(() => page.close());
    return { page, requests, problems, dialogs };
  }

  t.test('a closed-loop result: plots, summary, no request', async (t) => {
    const result = syntheticResult({ seed: 3, seconds: 30, requests: [{ name: 'list', weight: 3 }, { name: 'create' }], ws: true, server: true, errorRate: 0.002 });
    const { page, requests, problems, dialogs } = await open('closed', result);

    for (const id of ['latency-over-time', 'rps-over-time', 'percentiles']) {
      const box = await page.$eval(`svg#${id}`, (el: Element) => el.getBoundingClientRect());
      t.ok(box.width > 100 && box.height > 50, `#${id} is drawn (${box.width}×${box.height})`);
    }
    t.equal(await page.locator('svg#backlog-over-time').count(), 0, 'no backlog plot in a closed loop');
    const d = (await page.getAttribute('#latency-over-time path.series.p99', 'd')) ?? '';
    t.equal(d.match(/[ML]/g)?.length, result.timeline.length, 'one p99 point per second');
    const d50 = (await page.getAttribute('#latency-over-time path.series.p50', 'd')) ?? '';
    t.equal(d50.match(/[ML]/g)?.length, result.timeline.length, 'one p50 point per second');
    const dp = (await page.getAttribute('#percentiles path.series.latency', 'd')) ?? '';
    t.equal(dp.match(/[ML]/g)?.length, result.percentiles.length, 'one point per percentile');
    const ticks = await page.$$eval('#percentiles text.tick', (els: { textContent: string }[]) => els.map((e) => e.textContent));
    for (const label of ['0%', '90%', '99%', '99.9%', '99.99%', '99.999%']) t.ok(ticks.includes(label), `the percentile axis shows ${label}`);

    const cell = (metric: string) => page.textContent(`#summary td[data-metric="${metric}"]`);
    t.equal(await cell('rps'), result.throughput.rps.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 }));
    t.equal(await cell('requests'), result.throughput.requests.toLocaleString('en-US'));
    t.equal(await cell('p50'), `${result.latency_ms.p50.toFixed(2)} ms`);
    t.equal(await cell('p99'), `${result.latency_ms.p99.toFixed(1)} ms`);
    t.match(await cell('errors'), new RegExp(`^${result.errors.total.toLocaleString('en-US')} \\(0\\.20 %\\)$`));
    t.match(await page.textContent('#errors-by-status'), /503/);
    t.match(await page.textContent('#errors-by-code'), /OVERLOADED/);
    t.same(await page.$$eval('#per-request td[data-metric="name"]', (els: { textContent: string }[]) => els.map((e) => e.textContent)), ['list', 'create']);
    t.match(await page.textContent('#ws'), /chat/);
    t.match(await page.textContent('#stats-after'), /"walkers"/);

    t.same(requests, [], 'the page asked for nothing');
    t.same(problems, [], 'no console error');
    t.same(dialogs, []);
  });

  t.test('an open-loop result draws its backlog', async (t) => {
    const result = syntheticResult({ seed: 4, rate: 2000, rps: 2000, seconds: 12 });
    const { page, requests, problems } = await open('open', result);
    const box = await page.$eval('svg#backlog-over-time', (el: Element) => el.getBoundingClientRect());
    t.ok(box.width > 100 && box.height > 50, 'the backlog plot is drawn');
    const d = (await page.getAttribute('#backlog-over-time path.series.backlog', 'd')) ?? '';
    t.equal(d.match(/[ML]/g)?.length, 12);
    t.match(await page.textContent('#open-loop'), /2,000/);
    t.same(requests, []);
    t.same(problems, []);
  });

  t.test('a hostile result: shown literally, nothing runs or loads', async (t) => {
    const { page, requests, problems, dialogs } = await open('hostile', hostile());
    t.same(dialogs, [], 'no dialog fired');
    t.same(requests, [], 'no image or other request');
    t.same(problems, []);
    t.equal(await page.locator('script, img, iframe, object').count(), 0);
    const text: string = await page.evaluate(() => document.body.innerText);
    t.ok(text.includes(`http://127.0.0.1:1/${XSS}?a=1&b="2"`), 'the URL is visible as written');
    t.ok(text.includes('<img src=x onerror=alert(2)>'), 'the error code is visible as written');
    t.ok(text.includes('ok "quoted" & <b>bold</b>'), 'the request name is visible as written');
    t.ok(text.includes('</pre><script>alert(4)</script>'), 'machine facts are visible as written');
    t.same(await page.$$eval('#per-request td[data-metric="name"]', (els: { textContent: string }[]) => els.map((e) => e.textContent)), [XSS, 'ok "quoted" & <b>bold</b>']);
  });

  t.test('an empty result says "no data"', async (t) => {
    const { page, requests, problems } = await open('empty', empty());
    t.match(await page.textContent('#summary-no-data'), /no data/);
    t.match(await page.textContent('#latency-over-time-no-data'), /no data/);
    t.match(await page.textContent('#percentiles-no-data'), /no data/);
    t.equal(await page.locator('svg').count(), 0);
    t.same(requests, []);
    t.same(problems, []);
  });
});
