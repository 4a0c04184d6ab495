/**
 * `svc docs`: serve the documentation site (docs/, built by VitePress) on this
 * machine, building it first when `docs/.vitepress/dist` is missing or older
 * than a page or the site's configuration.
 *
 * Decisions:
 * - The site is served by a small static server of node:http (GET and HEAD,
 *   clean URLs: `/guides/testing` is `guides/testing.html`), not by VitePress:
 *   a built site needs no build tool to be read.
 * - VitePress is a development dependency and is run as a child process
 *   (`vitepress build docs`), found by resolving its package from here; an
 *   installed svc has neither it nor the built site (the package leaves
 *   `docs/.vitepress/dist` out), so the command says where the same pages are
 *   instead: the markdown files of `docs/`, and `svc mcp`'s `svc://docs/*`.
 * - Loopback by default (127.0.0.1), port 5173 or the next free one; an
 *   explicit `--port` is that port or an error.
 */
import { spawn } from 'node:child_process';
import { createReadStream, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The `docs/` folder of this package.
 * @example join(DOCS_ROOT, 'welcome.md')
 */
export const DOCS_ROOT = fileURLToPath(new URL('../../docs', import.meta.url));

/**
 * Where `npm run docs` (and `svc docs`) put the built site.
 * @example join(SITE_DIR, 'index.html')
 */
export const SITE_DIR = join(DOCS_ROOT, '.vitepress', 'dist');

/** The first port tried when none is given (VitePress's own). */
const DEFAULT_PORT = 5173;
/** How many ports after the default are tried. */
const PORT_TRIES = 20;

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The newest modification time (ms) of the site's sources: every page and asset of
 * `docs/` and the configuration in `docs/.vitepress/`, the built site and cache aside.
 * @example newestSource(DOCS_ROOT) > statSync(join(SITE_DIR, 'index.html')).mtimeMs
 */
export function newestSource(dir: string = DOCS_ROOT): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || ((name === 'dist' || name === 'cache') && dir.endsWith(`${sep}.vitepress`))) continue;
    const stat = statSync(path);
    newest = Math.max(newest, stat.isDirectory() ? newestSource(path) : stat.mtimeMs);
  }
  return newest;
}

/**
 * Whether the built site is missing or older than its sources.
 * @example if (siteIsStale()) await buildSite();
 */
export function siteIsStale(docs: string = DOCS_ROOT, site: string = join(docs, '.vitepress', 'dist')): boolean {
  const index = join(site, 'index.html');
  return !existsSync(index) || statSync(index).mtimeMs < newestSource(docs);
}

/**
 * The VitePress command-line script, if VitePress is installed beside svc.
 * @example vitepressBin() // '/…/node_modules/vitepress/bin/vitepress.js', or undefined in an installed svc
 */
export function vitepressBin(): string | undefined {
  try {
    return join(createRequire(import.meta.url).resolve('vitepress/package.json'), '..', 'bin', 'vitepress.js');
  } catch {
    return undefined;
  }
}

/**
 * Build the site with VitePress (`vitepress build docs`), its output on stderr.
 * @example await buildSite(bin, DOCS_ROOT);
 */
export function buildSite(bin: string, docs: string = DOCS_ROOT, outDir?: string): Promise<void> {
  return withBuildLock(docs, () => runBuild(bin, docs, outDir));
}

/**
 * Run `work` (a VitePress build of `docs`) while no other process builds the same folder: every build of it writes
 * and then deletes `docs/.vitepress/.temp`, so two at once (two `svc docs`, or one and a test) break each other. The
 * lock is a file holding its owner's pid; one whose owner is gone (a build killed) is taken over.
 *
 * @example
 * await withBuildLock(DOCS_ROOT, () => build(DOCS_ROOT, { outDir }));
 */
export async function withBuildLock<T>(docs: string, work: () => Promise<T>, waitMs = 15 * 60_000): Promise<T> {
  const lock = join(docs, '.vitepress', '.build-lock');
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!ownerAlive(lock)) {
      rmSync(lock, { force: true });
      continue;
    }
    if (Date.now() > until) throw new Error(`another build of ${docs} has held ${lock} for more than ${Math.round(waitMs / 60_000)} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Whether the process whose pid a lock file holds is still running (an unreadable or empty lock counts as held, briefly: it is being written). */
function ownerAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(lock, 'utf8'));
  } catch {
    return true;
  }
  if (!Number.isInteger(pid) || pid <= 0) return statAge(lock) < 5_000;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function statAge(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return Infinity;
  }
}

function runBuild(bin: string, docs: string, outDir?: string): Promise<void> {
  return new Promise((done, fail) => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, [bin, 'build', docs, ...(outDir ? ['--outDir', outDir] : [])], { stdio: ['ignore', process.stderr, process.stderr], env });
    child.on('error', fail);
    child.on('exit', (code, signal) => (code === 0 ? done() : fail(new Error(`vitepress build ${docs} failed (${signal ?? `exit code ${code}`})`))));
  });
}

/**
 * The file a request path names in a built site (clean URLs: `/a/b` is `a/b.html`, `/a/` is `a/index.html`), or undefined.
 * @example fileFor('/tmp/site', '/guides/testing') // '/tmp/site/guides/testing.html'
 */
export function fileFor(site: string, urlPath: string): string | undefined {
  let path: string;
  try {
    path = decodeURIComponent(urlPath.split('?')[0] ?? '/');
  } catch {
    return undefined;
  }
  if (path.includes('\0')) return undefined;
  const root = resolve(site);
  const full = normalize(join(root, path));
  if (full !== root && !full.startsWith(root + sep)) return undefined;
  for (const candidate of [full, `${full}.html`, join(full, 'index.html')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/**
 * A running site server.
 * @example const served: ServedSite = await serveSite(SITE_DIR); await served.close();
 */
export type ServedSite = { url: string; server: Server; close(): Promise<void> };

/**
 * Serve a built site from `site` on `host`:`port` (port 0: any free one).
 * @example const { url, close } = await serveSite('/tmp/site', { host: '127.0.0.1', port: 0 });
 */
export async function serveSite(site: string, options: { host?: string; port?: number; tries?: number } = {}): Promise<ServedSite> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const file = fileFor(site, req.url ?? '/');
    const notFound = file === undefined ? join(site, '404.html') : undefined;
    const body = file ?? (notFound && existsSync(notFound) ? notFound : undefined);
    if (!body) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    const type = TYPES[extname(body)] ?? 'application/octet-stream';
    // Hashed assets never change; pages do at each build.
    const cache = body.includes(`${sep}assets${sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache';
    res.writeHead(file ? 200 : 404, { 'content-type': type, 'content-length': statSync(body).size, 'cache-control': cache });
    if (req.method === 'HEAD') res.end();
    else createReadStream(body).pipe(res);
  });
  const first = options.port ?? DEFAULT_PORT;
  const tries = options.port === undefined ? (options.tries ?? PORT_TRIES) : 1;
  for (let i = 0; ; i++) {
    try {
      await new Promise<void>((done, fail) => {
        server.once('error', fail);
        server.listen(first === 0 ? 0 : first + i, host, () => {
          server.off('error', fail);
          done();
        });
      });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || i + 1 >= tries) throw error;
    }
  }
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : first;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    server,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/**
 * What to read when the site cannot be built here.
 * @example process.stderr.write(readInstead());
 */
export function readInstead(): string {
  return [
    'svc docs: the documentation site is not built, and VitePress (a development dependency of svc) is not installed here.',
    'Read the same pages:',
    `  - as markdown files: ${DOCS_ROOT}${sep} (start with welcome.md, then tutorial/)`,
    '  - through the tool server: svc mcp serves each page as svc://docs/<topic> (svc://docs/welcome first)',
    '  - or build the site from a checkout of svc: npm install && npm run docs && svc docs',
    '',
  ].join('\n');
}

/**
 * `svc docs [--port N] [--host H]`: build the site if needed, serve it, print its URL; SIGINT or SIGTERM stops it.
 * @example await docs({ port: '5173' });
 */
export async function docs(options: { port?: string | number; host?: string }): Promise<void> {
  const port = options.port === undefined ? undefined : Number(options.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    process.stderr.write(`svc docs: --port must be a port number (0-65535), not ${JSON.stringify(options.port)}\n`);
    process.exit(2);
  }
  if (siteIsStale()) {
    const bin = vitepressBin();
    if (!bin) {
      if (!existsSync(join(SITE_DIR, 'index.html'))) {
        process.stderr.write(readInstead());
        process.exit(1);
      }
      process.stderr.write('svc docs: the built site is older than the pages, and VitePress is not installed to rebuild it: serving it as it is\n');
    } else {
      process.stderr.write(`svc docs: building the site (${existsSync(join(SITE_DIR, 'index.html')) ? 'a page changed' : 'first time'})…\n`);
      await buildSite(bin);
    }
  }
  let served: ServedSite;
  try {
    served = await serveSite(SITE_DIR, { host: options.host ?? '127.0.0.1', ...(port === undefined ? {} : { port }) });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw error;
    const where = port === undefined ? `ports ${DEFAULT_PORT}-${DEFAULT_PORT + PORT_TRIES - 1}` : `port ${port}`;
    process.stderr.write(`svc docs: cannot listen on ${options.host ?? '127.0.0.1'}, ${where} (${code}); choose another with --port\n`);
    process.exit(1);
  }
  process.stdout.write(`svc docs: the documentation at ${served.url} (Ctrl-C to stop)\n`);
  const stop = () => {
    void served.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
