// The admin portal's page is built from its files (transports/http/portal/) at
// load: its CSP allows exactly the inline style and script it carries, by hash,
// and the files ship with the package. (The page itself, in Chromium:
// test/actors/identity/portal.test.ts.)
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import t from 'tap';
import { adminPortal } from '../../../transports/http/admin-portal.ts';

const root = new URL('../../../', import.meta.url);
const portal = new URL('transports/http/portal/', root);
const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

t.test('the CSP allows the page’s own inline style and script, and nothing else', async (t) => {
  const res = adminPortal();
  const page = String(res.body);
  const csp = res.headers['content-security-policy'] as string;
  const scripts = [...page.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)];
  const styles = [...page.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/g)];
  t.equal(scripts.length, 1, 'one script');
  t.equal(styles.length, 1, 'one style');
  t.notMatch(page, /\ssrc=|<link rel="stylesheet"/, 'nothing loaded from elsewhere');
  t.match(csp, `script-src ${sha256(scripts[0]?.[1] as string)};`);
  t.match(csp, `style-src ${sha256(styles[0]?.[1] as string)};`);
  t.match(csp, /^default-src 'none';/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
});

t.test('the page is made of the portal’s files', async (t) => {
  const page = String(adminPortal().body);
  t.ok(page.includes(`<style>${readFileSync(new URL('portal.css', portal), 'utf8')}</style>`), 'portal.css inline');
  t.ok(page.includes(`<script>${readFileSync(new URL('portal.js', portal), 'utf8')}</script>`), 'portal.js inline');
  t.ok(page.startsWith('<!doctype html>'));
});

t.test('the portal’s files ship with the package', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { files?: string[] };
  t.ok(pkg.files === undefined || pkg.files.some((f) => 'transports/http/portal/index.html'.startsWith(f.replace(/^\.\//, '').replace(/\*.*$/, ''))), 'package.json "files" leaves them in');
  t.notOk(existsSync(new URL('.npmignore', root)) && /portal/.test(readFileSync(new URL('.npmignore', root), 'utf8')), '.npmignore leaves them in');
});
