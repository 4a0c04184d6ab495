/**
 * The admin portal at `/admin`: one self-contained page (no CDN) over the
 * `/admin/*` endpoints — login (and the forced password change, which the
 * server enforces anyway), a searchable users table, create, edit role and
 * status, force a password reset, delete. User data is put in the page with
 * `textContent` only.
 *
 * Its markup, style and script are the files in `portal/`, read once when
 * this module loads: `portal.css` and `portal.js` go inline where
 * `index.html` links them (so the page opens from disk as it is), and the
 * Content-Security-Policy allows exactly those two, by their SHA-256.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpResponse } from './types.ts';

/**
 * The folder of the portal's files: beside this module. A worker thread runs
 * this module bundled (transports/worker/compile.ts), from
 * `node_modules/.cache/svc-workers/`, where `import.meta.url` is the bundle's:
 * there it is svc's folder as an installed package, or in the checkout that
 * holds that `node_modules`.
 */
function portalDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const tried = [join(here, 'portal')];
  try {
    tried.push(join(dirname(createRequire(import.meta.url).resolve('svc/package.json')), 'transports/http/portal'));
  } catch {
    // not installed as a package
  }
  for (let dir = here; dirname(dir) !== dir; dir = dirname(dir)) {
    if (basename(dir) === 'node_modules') tried.push(join(dirname(dir), 'transports/http/portal'));
  }
  const found = tried.find((dir) => existsSync(join(dir, 'index.html')));
  if (found === undefined) throw new Error(`the admin portal's files are missing (looked in ${tried.join(', ')})`);
  return found;
}

const DIR = portalDir();
const read = (name: string): string => readFileSync(join(DIR, name), 'utf8');
const STYLE = read('portal.css');
const SCRIPT = read('portal.js');

/** `html` with `link` replaced by `content` inline, in a `tag` element. */
function inlined(html: string, link: string, tag: 'style' | 'script', content: string): string {
  if (!html.includes(link)) throw new Error(`portal/index.html does not link ${link}`);
  if (content.toLowerCase().includes(`</${tag}`)) throw new Error(`inline ${tag} must not contain </${tag}`);
  return html.replace(link, () => `<${tag}>${content}</${tag}>`); // a function: no `$` patterns in the script
}

const PAGE = inlined(
  inlined(read('index.html'), '<link rel="stylesheet" href="portal.css">', 'style', STYLE),
  '<script src="portal.js"></script>',
  'script',
  SCRIPT,
);

/** A CSP source for exactly this inline text. */
const hashOf = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

const CSP = `default-src 'none'; script-src ${hashOf(SCRIPT)}; style-src ${hashOf(STYLE)}; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

/**
 * The portal page, with its CSP and the headers that keep it out of frames and caches.
 *
 * @example
 * { method: 'GET', path: '/admin', auth: 'none', handler: () => ({ raw: adminPortal() }) }
 */
export function adminPortal(): HttpResponse {
  return {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
    },
    body: PAGE,
  };
}
