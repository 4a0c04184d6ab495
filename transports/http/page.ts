/**
 * Self-contained pages (no CDN): `index.html`, its stylesheet and script in a
 * folder beside this module, the two inlined where the page links them (so
 * the page also opens from disk as it is), served with a Content-Security-
 * Policy that allows exactly those two, by their SHA-256.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpResponse } from './types.ts';

/**
 * The folder of a page's files: beside this module. A worker thread runs
 * this module bundled (transports/worker/compile.ts), from
 * `node_modules/.cache/svc-workers/`, where `import.meta.url` is the bundle's:
 * there it is svc's folder as an installed package, or in the checkout that
 * holds that `node_modules`.
 */
function pageDir(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const tried = [join(here, name)];
  try {
    tried.push(join(dirname(createRequire(import.meta.url).resolve('svc/package.json')), 'transports/http', name));
  } catch {
    // not installed as a package
  }
  for (let dir = here; dirname(dir) !== dir; dir = dirname(dir)) {
    if (basename(dir) === 'node_modules') tried.push(join(dirname(dir), 'transports/http', name));
  }
  const found = tried.find((dir) => existsSync(join(dir, 'index.html')));
  if (found === undefined) throw new Error(`the ${name} page's files are missing (looked in ${tried.join(', ')})`);
  return found;
}

/** `html` with `link` replaced by `content` inline, in a `tag` element. */
function inlined(html: string, link: string, tag: 'style' | 'script', content: string): string {
  if (!html.includes(link)) throw new Error(`index.html does not link ${link}`);
  if (content.toLowerCase().includes(`</${tag}`)) throw new Error(`inline ${tag} must not contain </${tag}`);
  return html.replace(link, () => `<${tag}>${content}</${tag}>`); // a function: no `$` patterns in the script
}

/** A CSP source for exactly this inline text. */
const hashOf = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page in `folder` (`index.html` linking `<css>` and `<js>`), read once, as a response maker.
 *
 * @example
 * const portal = page('portal', 'portal.css', 'portal.js');
 * { method: 'GET', path: '/admin', auth: 'none', handler: () => ({ raw: portal() }) }
 */
export function page(folder: string, css: string, js: string): () => HttpResponse {
  const make = () => {
    const dir = pageDir(folder);
    const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
    const style = read(css);
    const script = read(js);
    const body = inlined(inlined(read('index.html'), `<link rel="stylesheet" href="${css}">`, 'style', style), `<script src="${js}"></script>`, 'script', script);
    const csp = `default-src 'none'; script-src ${hashOf(script)}; style-src ${hashOf(style)}; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
    return { body, csp };
  };
  // Read when the module loads: missing files fail the start, not the first visit.
  const made = make();
  return () => {
    return {
      status: 200,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': made.csp,
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'cache-control': 'no-store',
      },
      body: made.body,
    };
  };
}
