// The documentation site as a reader gets it: built with VitePress (into a temporary folder, unless the site built after
// the last change is in docs/.vitepress/dist), served on 127.0.0.1 by the same static server `svc docs` uses, and
// every page opened in headless Chromium:
// - no console error, no uncaught page error, no failed request, and no request to anything but loopback
//   (the site works offline: no web fonts, remote scripts or images — such a request is aborted and reported);
// - every link into the site (`<a href>` of this origin, `#anchors` included) leads to a page that exists, and
//   the anchor's id is on that page;
// - `svc://docs/<topic>` in a page's text became a link to the page answering it;
// - the local search box opens and finds a known word.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'vitepress';
import type { Page } from 'playwright-core';
import { fileFor, serveSite, SITE_DIR, siteIsStale, withBuildLock } from '../../cli/commands/docs.ts';
import { DOCS_DIR, scanPages } from '../../docs/.vitepress/pages.ts';
import { chromiumAvailable, launch } from '../helpers/browser.ts';

// About 80 s on a quiet machine (build ~40 s, 55 pages ~40 s); a loaded one (load 20+ on 2 cores) has taken 130 s for the build alone.
t.setTimeout(230_000);

// The page's globals, inside page.evaluate (this program has no DOM types).
declare const document: any;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** A route as the site's pages are keyed: no `.html`, no trailing `index`, no trailing slash (but `/`). */
function routeOf(pathname: string): string {
  const path = decodeURIComponent(pathname).replace(/\.html$/, '').replace(/\/index$/, '/');
  return path.length > 1 ? path.replace(/\/$/, '') : '/';
}

t.test('every page of the site renders offline, without errors, and its links resolve', { skip: chromiumAvailable() ? false : 'no Chromium' }, async (t) => {
  // The site as built after the last change to a page or to the configuration (`npm run docs`, `svc docs`, or
  // `npm run docs:check`, which builds first) is the same output: it is used as it is. Otherwise the site is built
  // here, into a temporary folder (a minute or more: the build is most of this test's time).
  const started = performance.now();
  let outDir = SITE_DIR;
  if (siteIsStale()) {
    outDir = mkdtempSync(join(tmpdir(), 'svc-docs-site-'));
    t.teardown(() => rmSync(outDir, { recursive: true, force: true }));
    // Not while another process builds the same pages (their temporary files are shared: `svc docs` in cli-docs.test.ts).
    await withBuildLock(DOCS_DIR, () => build(DOCS_DIR, { outDir, logLevel: 'warn' } as Parameters<typeof build>[1]));
    t.comment(`built in ${Math.round(performance.now() - started)} ms`);
  } else t.comment(`the site built after the last change: ${outDir}`);

  const served = await serveSite(outDir, { host: '127.0.0.1', port: 0 });
  t.teardown(() => served.close());
  const origin = new URL(served.url).origin;
  const browser = await launch();
  t.teardown(() => browser.close());
  const context = await browser.newContext();

  const problems: string[] = [];
  let current = '';
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || LOOPBACK.has(url.hostname)) return route.continue();
    problems.push(`${current}: request to a non-loopback address ${url.href}`);
    return route.abort();
  });

  const pages = scanPages();
  t.ok(pages.length >= 30, `${pages.length} pages`);
  const ids = new Map<string, Set<string>>();
  const links: { from: string; href: string }[] = [];
  const page: Page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${current}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${current}: page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    const url = new URL(r.url());
    if (!LOOPBACK.has(url.hostname)) return; // reported by the route above
    // The theme prefetches the pages a page links to; going to the next page cancels those still loading.
    if (r.failure()?.errorText === 'net::ERR_ABORTED' && fileFor(outDir, url.pathname)) return;
    problems.push(`${current}: request failed ${r.url()} (${r.failure()?.errorText})`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && new URL(r.url()).origin === origin) problems.push(`${current}: ${r.status()} for ${r.url()}`);
  });

  const routes = ['/', ...pages.filter((p) => p.route !== '/').map((p) => p.route)];
  for (const route of routes) {
    current = route;
    const response = await page.goto(origin + route, { waitUntil: 'load' });
    if (response?.status() !== 200) problems.push(`${route}: status ${response?.status()}`);
    // Hydrated: Vue has mounted the app on the server-rendered page (a mismatch would have been logged by now).
    await page.waitForFunction(() => Boolean(document.querySelector('#app')?.__vue_app__));
    const found = await page.evaluate(() => ({
      ids: [...document.querySelectorAll('[id]')].map((e: { id: string }) => e.id),
      hrefs: [...document.querySelectorAll('a[href]')].map((a: { href: string }) => a.href),
      title: document.querySelector('.vp-doc h1, .VPHero .name')?.textContent ?? '',
    }));
    ids.set(route, new Set(found.ids));
    for (const href of found.hrefs) links.push({ from: route, href });
    if (route !== '/') t.ok(found.title.trim().length > 0, `${route} shows its heading`);
  }

  // Links into the site: a page (or a file of the site) that exists, and the anchor on it.
  let internal = 0;
  for (const { from, href } of links) {
    const url = new URL(href);
    if (url.origin !== origin) continue;
    internal++;
    const route = routeOf(url.pathname);
    const target = ids.get(route);
    if (!target) {
      if (!fileFor(outDir, url.pathname)) problems.push(`${from}: link to ${url.pathname}${url.hash}, which does not exist`);
      continue;
    }
    const anchor = decodeURIComponent(url.hash.slice(1));
    if (anchor && !target.has(anchor)) problems.push(`${from}: link to ${route}#${anchor}, no such anchor on that page`);
  }
  t.ok(internal > pages.length * 5, `${internal} internal links checked`);

  // svc:// cross-references became links (welcome.md's table lists pages by their URIs).
  current = '/welcome';
  await page.goto(`${origin}/welcome`, { waitUntil: 'load' });
  await page.waitForFunction(() => Boolean(document.querySelector('#app')?.__vue_app__));
  const svcLinks = await page.$$eval('.vp-doc a', (as) => as.filter((a) => /^svc:\/\//.test(a.textContent ?? '')).map((a) => a.getAttribute('href')));
  t.ok(svcLinks.length >= 3, `welcome: ${svcLinks.length} svc:// URIs are links`);
  t.ok(svcLinks.includes('/guides/pitfalls'), 'svc://guide/pitfalls links the pitfalls page');

  // The local search: open the box, type a word the pages hold, get results that link to pages.
  await page.click('.DocSearch-Button');
  await page.fill('#localsearch-input', 'pitfalls');
  await page.waitForSelector('.VPLocalSearchBox .result', { timeout: 20_000 });
  const results = await page.$$eval('.VPLocalSearchBox .result', (as) => as.map((a) => a.getAttribute('href') ?? ''));
  t.ok(results.length > 0, `search finds "pitfalls": ${results.length} results`);
  t.ok(results.some((r) => r.startsWith('/guides/pitfalls')), 'one of them is the pitfalls page');

  t.same(problems, [], problems.length ? `problems:\n${problems.join('\n')}` : 'every page clean, every link resolves');
  t.comment(`${routes.length} pages opened, ${internal} internal links checked, ${Math.round(performance.now() - started)} ms in all`);
});
