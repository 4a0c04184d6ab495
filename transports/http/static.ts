/**
 * Static files from `public/` beside the entry file, after every generated
 * route. Paths are resolved inside that folder only: `..`, encoded
 * separators and NUL bytes never leave it.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { HttpResponse } from './types.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'application/javascript; charset=utf-8',
  '.mjs': 'application/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.map': 'application/json; charset=utf-8',
};

export class StaticFiles {
  private readonly root: string;

  constructor(dir: string) {
    this.root = resolve(dir);
  }

  /** The file for a URL path, or undefined (not found, or outside the folder). */
  async serve(urlPath: string, head: boolean): Promise<HttpResponse | undefined> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    if (decoded.includes('\0') || decoded.split(/[\\/]/).includes('..')) return undefined;
    let file = resolve(join(this.root, decoded));
    if (file !== this.root && !file.startsWith(this.root + sep)) return undefined;
    try {
      let info = await stat(file);
      if (info.isDirectory()) {
        file = join(file, 'index.html');
        info = await stat(file);
      }
      if (!info.isFile()) return undefined;
      const headers: Record<string, string> = { 'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream' };
      if (head) {
        // The length of the body a GET would get; no body.
        headers['content-length'] = String(info.size);
        return { status: 200, headers, body: '' };
      }
      return { status: 200, headers, body: await readFile(file) };
    } catch {
      return undefined;
    }
  }
}
