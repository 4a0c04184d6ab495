/**
 * Interactive API docs served from npm packages (no CDN): Swagger UI at
 * `/docs` (swagger-ui-dist) and ReDoc at `/redoc` (redoc's standalone
 * bundle), both reading `/openapi.json`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { HttpResponse } from './types.ts';

const require = createRequire(import.meta.url);

function packageDir(name: string): string {
  return dirname(require.resolve(`${name}/package.json`));
}

const ASSETS: Record<string, { pkg: string; file: string; type: string }> = {
  '/docs/swagger-ui.css': { pkg: 'swagger-ui-dist', file: 'swagger-ui.css', type: 'text/css' },
  '/docs/swagger-ui-bundle.js': { pkg: 'swagger-ui-dist', file: 'swagger-ui-bundle.js', type: 'application/javascript' },
  '/docs/swagger-ui-standalone-preset.js': { pkg: 'swagger-ui-dist', file: 'swagger-ui-standalone-preset.js', type: 'application/javascript' },
  '/redoc/redoc.standalone.js': { pkg: 'redoc', file: 'bundles/redoc.standalone.js', type: 'application/javascript' },
};

/** ReDoc's bundle fetches its logo from a CDN: point it at a local copy (the machine may be offline). */
const REWRITES: Record<string, [string, string][]> = {
  '/redoc/redoc.standalone.js': [['https://cdn.redoc.ly/redoc/logo-mini.svg', '/redoc/logo-mini.svg']],
};

const REDOC_LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#e53935"/></svg>';

const SWAGGER_PAGE = (title: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} — API docs</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-ui-standalone-preset.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });</script>
</body></html>`;

const REDOC_PAGE = (title: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} — API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc>
<script src="/redoc/redoc.standalone.js"></script></body></html>`;

/** Serves the docs pages and their assets (read from disk once, kept in memory). */
export class Docs {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly title: string) {}

  /** The response for a docs path, or undefined when the path is not a docs one. */
  serve(path: string): HttpResponse | undefined {
    if (path === '/docs' || path === '/docs/') return page(SWAGGER_PAGE(this.title));
    if (path === '/redoc' || path === '/redoc/') return page(REDOC_PAGE(this.title));
    if (path === '/redoc/logo-mini.svg') return { status: 200, headers: { 'content-type': 'image/svg+xml' }, body: REDOC_LOGO };
    const asset = ASSETS[path];
    if (!asset) return undefined;
    let body = this.cache.get(path);
    if (!body) {
      body = readFileSync(join(packageDir(asset.pkg), asset.file));
      const rewrites = REWRITES[path];
      if (rewrites) {
        let text = body.toString('utf8');
        for (const [from, to] of rewrites) text = text.split(from).join(to);
        body = Buffer.from(text);
      }
      this.cache.set(path, body);
    }
    return { status: 200, headers: { 'content-type': `${asset.type}; charset=utf-8`, 'cache-control': 'public, max-age=86400' }, body };
  }
}

function page(html: string): HttpResponse {
  return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: html };
}
