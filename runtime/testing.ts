/**
 * Testing an app without a socket: `testApp({ entry })` starts the whole
 * runtime of one serving thread in this process — store, graph, identity,
 * hooks, the HTTP front — and `inject` hands it requests the way a socket
 * would (as fastify's `inject` does). Nothing listens unless `listen: true`
 * (WebSocket and browser tests).
 *
 * @example
 * import { testApp } from 'svc/testing';
 * const app = await testApp({ entry: new URL('./app.ts', import.meta.url).pathname });
 * const res = await app.inject({ method: 'POST', url: '/walker/CreateTodo', body: { title: 'milk' } });
 * res.status;          // 200
 * res.json().data;     // { result: null, reports: [...] }
 * await app.close();
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ActorSystem } from '../kernel/index.ts';
import { type AnchorStore, Graph } from '../actors/graph/index.ts';
import { bootstrapAccounts, openUsersRepository, Passwords, ThreadHasher, type UsersRepository } from '../actors/identity/index.ts';
import { type Front, type HttpRequest, type HttpResponse, loadUws, readPartsAhead } from '../transports/http/index.ts';
import { createServer } from 'node:net';
import { loadConfig, type SvcConfig } from './config.ts';
import { dataPaths } from './paths.ts';
import type { Runtime } from './runtime.ts';
import type { ServeBoot } from './boot.ts';
import { FRONT, GRAPH, STORE, USERS } from './keys.ts';
import { createRuntime } from './serve.ts';

export interface TestAppOptions {
  /** The app's entry module (imported here); its folder is the project folder (`svc.toml`, `public/`). */
  entry?: string;
  /** Or the module's exports, already imported (then `dir` is the project folder). */
  app?: Record<string, unknown>;
  /** The project folder (default: the entry's folder, or a new temporary one). */
  dir?: string;
  /** Configuration by environment name (`SVC_*`, `JWT_SECRET`, `ADMIN_DEFAULT_PASSWORD`…), as `svc start` reads it; the process's own environment is not read. */
  env?: Record<string, string>;
  /** Configuration by `section.key` (`{ 'scale.server.docs_enabled': false }`), over the file and the environment. */
  config?: Record<string, unknown>;
  /** `--dev`: stack traces in error envelopes. */
  dev?: boolean;
  /** Also open a socket on 127.0.0.1 (a free port) for WebSocket or browser tests; `url` is then set. */
  listen?: boolean;
  /** Transport of that socket (default: uWebSockets.js where it loads). */
  transport?: 'uws' | 'node';
  /** Keep the temporary data folder at close (to start the app again on the same data). */
  keepData?: boolean;
  /** Log lines (JSON) go here; by default they are kept and readable through `output()`. */
  log?: (line: string) => void;
}

export interface InjectRequest {
  method?: string;
  /** Path and query: `/walker/Peek/abc?x=1`. */
  url: string;
  headers?: Record<string, string>;
  /** An object or array is sent as JSON (content-type set); a string or bytes as they are. */
  body?: unknown;
  /** The client address the handlers see (default `127.0.0.1`). */
  remoteAddress?: string;
}

export interface InjectResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The body as text. */
  body: string;
  /** The body as bytes. */
  rawBody: Buffer;
  /** The body parsed as JSON. */
  json<T = any>(): T;
}

export interface TestApp {
  /** Answer one request, without a socket. */
  inject(request: InjectRequest): Promise<InjectResponse>;
  /** A `fetch` into the app: same arguments as the global `fetch`, only the path and query of the URL are read. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** `http://127.0.0.1:<port>` with `listen: true`. */
  url: string | undefined;
  /** The project folder and the data folder (SQLite files, the admin password file). */
  dir: string;
  dataDir: string;
  config: SvcConfig;
  /** The JWT secret the app signs with (a random one unless `JWT_SECRET` was given). */
  jwtSecret: string;
  /**
   * The HMAC key of webhook signatures: `WEBHOOK_SECRET` (or `[scale.webhook]
   * secret`) when given, else a random one for this app.
   */
  webhookSecret: string;
  /** Parts of the runtime, for white-box tests. */
  front: Front;
  graph: Graph;
  store: AnchorStore;
  users: UsersRepository;
  runtime: Runtime;
  system: ActorSystem;
  /** The log lines so far. */
  output(): string;
  /** Resolves once `count` log lines match (already written or still to come). */
  waitFor(re: RegExp, count?: number): Promise<string>;
  /** Drain, close every module, stop the actors; temporary folders are removed. */
  close(): Promise<void>;
}

/** Build and start an app in this process. */
export async function testApp(options: TestAppOptions): Promise<TestApp> {
  if (!options.entry && !options.app) throw new Error('testApp needs an entry module or its exports (app)');
  const made: string[] = [];
  const temp = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
  const entry = options.entry === undefined ? undefined : resolve(options.entry);
  const dir = options.dir ?? (entry ? dirname(entry) : temp('svc-app-'));
  const env: Record<string, string> = { ...options.env };
  env.SVC_DATA_DIR ??= options.keepData ? mkdtempSync(join(tmpdir(), 'svc-data-')) : temp('svc-data-');
  if (!env.JWT_SECRET) env.JWT_SECRET = randomBytes(32).toString('hex');
  const flags: Record<string, unknown> = { 'scale.server.host': '127.0.0.1', 'scale.server.port': 0, ...options.config };
  const { config } = loadConfig({ dir, env, flags });
  const app = options.app ?? ((await import(pathToFileURL(entry as string).href)) as Record<string, unknown>);
  const { dataDir, storePath, usersPath, docdbUri } = dataPaths(dir, config, env);
  // As the JWT secret: the configured one, else one of this app's own (nothing written under the project's .svc/).
  const webhookSecret = config['scale.webhook'].secret || randomBytes(32).toString('hex');

  const lines: string[] = [];
  const waiters: { re: RegExp; left: number; resolve: (line: string) => void }[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.re.test(line) && --w.left === 0) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  const write = options.log ?? onLine;

  const hasher = new ThreadHasher({ threads: 1 });
  const system = new ActorSystem();
  let rt: Runtime | undefined;
  const cleanup = async () => {
    await rt?.close();
    await system.shutdown();
    await hasher.close();
    for (const d of made) rmSync(d, { recursive: true, force: true });
  };
  try {
    const users = await openUsersRepository(docdbUri, { path: usersPath, baseDir: dir });
    try {
      await bootstrapAccounts({ users, passwords: new Passwords(hasher), admin: config['scale.admin'], passwordFile: join(dataDir, 'admin_password'), say: (line) => write(line) });
    } finally {
      await users.close();
    }
    hasher.serve(system);
    const boot: ServeBoot = {
      faux: false,
      moduleName: entry ? basename(entry).replace(/\.[mc]?[jt]s$/, '') : 'app',
      title: basename(dir),
      projectRoot: dir,
      config,
      jwtSecret: env.JWT_SECRET,
      webhookSecret,
      dev: options.dev === true,
      transport: options.transport ?? 'uws',
      port: 0,
      listeners: options.listen ? ['local'] : [],
      listenNow: true,
      storePath,
      usersPath,
      version: '0.0.0-test',
    };
    if (options.listen) {
      // A port of our own: the runtime binds exactly the one it is given.
      boot.port = await freeLoopbackPort();
      if (boot.transport === 'uws' && loadUws() instanceof Error) boot.transport = 'node';
    }
    rt = createRuntime({ system, boot, app, logDestination: { write: (chunk: string) => void write(chunk.replace(/\n$/, '')) } });
    await rt.start();
    const front = rt.need(FRONT);
    const inject = (request: InjectRequest) => injectInto(front, request);
    return {
      inject,
      fetch: (input, init) => fetchInto(inject, input, init),
      url: options.listen ? `http://127.0.0.1:${boot.port}` : undefined,
      dir,
      dataDir,
      config,
      jwtSecret: env.JWT_SECRET,
      webhookSecret,
      front,
      graph: rt.need(GRAPH),
      store: rt.need(STORE),
      users: rt.need(USERS),
      runtime: rt,
      system,
      output: () => lines.join('\n'),
      waitFor(re, count = 1) {
        const seen = lines.filter((l) => re.test(l));
        if (seen.length >= count) return Promise.resolve(seen[count - 1] as string);
        return new Promise((resolve) => waiters.push({ re, left: count - seen.length, resolve }));
      },
      async close() {
        await rt?.drain(1000);
        await cleanup();
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** One request through the front, as a server would hand it over. */
export async function injectInto(front: Front, request: InjectRequest): Promise<InjectResponse> {
  const url = request.url.startsWith('/') ? request.url : `/${request.url}`;
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  let path: string;
  try {
    path = decodeURI(rawPath);
  } catch {
    path = rawPath;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers ?? {})) headers[k.toLowerCase()] = v;
  let body: Buffer;
  const given = request.body;
  if (given === undefined || given === null) body = Buffer.alloc(0);
  else if (typeof given === 'string') body = Buffer.from(given);
  else if (given instanceof Uint8Array) body = Buffer.from(given.buffer, given.byteOffset, given.byteLength);
  else {
    body = Buffer.from(JSON.stringify(given));
    headers['content-type'] ??= 'application/json';
  }
  if (body.length > 0) headers['content-length'] ??= String(body.length);
  const req: HttpRequest = { method: (request.method ?? 'GET').toUpperCase(), path, query: q < 0 ? '' : url.slice(q + 1), headers, body, remoteAddress: request.remoteAddress ?? '127.0.0.1' };
  // Multipart parts are read ahead, as the node:http server reads them.
  const reading = readPartsAhead(req);
  if (reading) await reading;
  const res: HttpResponse = await front.handle(req);
  const raw = req.method === 'HEAD' ? Buffer.alloc(0) : typeof res.body === 'string' ? Buffer.from(res.body) : res.body;
  const text = raw.toString('utf8');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) out[k.toLowerCase()] = v;
  return { status: res.status, headers: out, body: text, rawBody: raw, json: () => JSON.parse(text) };
}

/** `fetch` semantics over {@link injectInto}: a real `Response`. */
async function fetchInto(inject: (r: InjectRequest) => Promise<InjectResponse>, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const request = input instanceof Request ? input : undefined;
  const url = new URL(request ? request.url : String(input), 'http://app.invalid');
  const headers: Record<string, string> = {};
  new Headers(request?.headers).forEach((v, k) => (headers[k] = v));
  new Headers(init.headers).forEach((v, k) => (headers[k] = v));
  const method = init.method ?? request?.method ?? 'GET';
  let body: Buffer | undefined;
  const source = init.body ?? (request && request.body ? await request.arrayBuffer() : undefined);
  if (source !== undefined && source !== null) {
    // FormData, URLSearchParams, Blob, strings: the body (and its content type) as fetch itself would send them.
    const encoded = new Request('http://app.invalid/', { method: 'POST', body: source as NonNullable<RequestInit['body']> });
    body = Buffer.from(await encoded.arrayBuffer());
    if (!('content-type' in headers)) {
      const type = encoded.headers.get('content-type');
      if (type) headers['content-type'] = type;
    }
  }
  const res = await inject({ method, url: url.pathname + url.search, headers, ...(body === undefined ? {} : { body }) });
  const bodyless = res.status === 204 || res.status === 304 || method.toUpperCase() === 'HEAD';
  return new Response(bodyless ? null : res.rawBody, { status: res.status, headers: res.headers });
}

/** A port nobody listens on now, on 127.0.0.1. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
