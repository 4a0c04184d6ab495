// `[scale.server.cors]` against real listening servers, on both transports (uWebSockets.js and node:http):
// the permissive default as it always was, an allow list, credentials, CORS turned off, bad values refused.
import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runSvc, startServer, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
const TRANSPORTS = ['uws', 'node'] as const;
/** A small body limit: a larger body gets the 413 the servers write themselves (not the front). */
const SMALL_BODY = '2000';

/** The CORS headers of an answer (and Vary), by name. */
function cors(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name.startsWith('access-control-') || name === 'vary') out[name] = value;
  });
  return out;
}

async function call(server: Server, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  const res = await fetch(`${server.url}${path}`, { method: init.method ?? 'GET', headers: init.headers ?? {}, ...(init.body === undefined ? {} : { body: init.body }) });
  await res.arrayBuffer();
  return res;
}

const echo = (server: Server, headers: Record<string, string> = {}) => call(server, '/walker/Echo', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"msg":"hi"}' });
const tooLarge = (server: Server, headers: Record<string, string> = {}) => call(server, '/walker/Echo', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ msg: 'x'.repeat(3000) }) });
const preflight = (server: Server, origin: string | undefined, extra: Record<string, string> = {}) =>
  call(server, '/walker/Echo', { method: 'OPTIONS', headers: { ...(origin === undefined ? {} : { origin }), 'access-control-request-method': 'POST', ...extra } });

/** `svc start` of the HTTP fixture on `transport`; with `dir`, a copy of it there (beside that folder's svc.toml). */
async function serve(t: Test, transport: string, env: Record<string, string> = {}, dir?: string): Promise<Server> {
  let app = entry;
  if (dir !== undefined) writeFileSync((app = join(dir, 'app.ts')), readFileSync(entry));
  const server = await startServer({ entry: app, env: { SVC_TRANSPORT: transport, SVC_MAX_BODY_BYTES: SMALL_BODY, ...env } });
  t.teardown(() => server.stop());
  return server;
}

/** The same checks on a server of each transport, both started at once (a start takes seconds on a busy machine). */
async function onBoth(t: Test, env: Record<string, string>, check: (t: Test, server: Server) => Promise<void>): Promise<void> {
  const servers = await Promise.all(TRANSPORTS.map((transport) => serve(t, transport, env)));
  for (const [i, server] of servers.entries()) await t.test(TRANSPORTS[i] as string, (t) => check(t, server));
}

t.test('the default is permissive, as it always was', async (t) => {
  await onBoth(t, {}, async (t, server) => {
    t.same(cors(await echo(server, { origin: 'https://anyone.example' })), { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'x-request-id, x-trace-id' }, 'an app route: *, the ids exposed, no Vary');
    t.same(cors(await echo(server)), {}, 'no Origin: no CORS header');
    t.same(cors(await call(server, '/health', { headers: { origin: 'https://anyone.example' } })), { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'x-request-id, x-trace-id' }, 'a route of the runtime alike');
    const pre = await preflight(server, 'https://anyone.example', { 'access-control-request-headers': 'authorization, content-type' });
    t.equal(pre.status, 204);
    t.same(
      cors(pre),
      {
        'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type',
        'access-control-max-age': '600',
        'access-control-allow-origin': '*',
        'access-control-expose-headers': 'x-request-id, x-trace-id',
      },
      'a preflight: the usual methods, the headers asked',
    );
    const bare = await call(server, '/walker/Echo', { method: 'OPTIONS' });
    t.equal(bare.status, 204, 'any OPTIONS is answered');
    t.same(cors(bare), { 'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS', 'access-control-allow-headers': '*', 'access-control-max-age': '600' });
    const big = await tooLarge(server);
    t.equal(big.status, 413);
    t.same(cors(big), { 'access-control-allow-origin': '*' }, 'an answer the server writes itself: * as before');
  });
});

t.test('an allow list with credentials (environment variables)', async (t) => {
  const env = {
    SVC_CORS_ALLOW_ORIGINS: 'https://app.example, https://Admin.example/',
    SVC_CORS_ALLOW_METHODS: 'GET,POST',
    SVC_CORS_ALLOW_HEADERS: '["authorization","content-type"]',
    SVC_CORS_ALLOW_CREDENTIALS: 'true',
    SVC_CORS_EXPOSE_HEADERS: 'x-request-id',
    SVC_CORS_MAX_AGE: '120',
  };
  await onBoth(t, env, async (t, server) => {
    const allowed = await echo(server, { origin: 'https://app.example' });
    t.equal(allowed.status, 200);
    t.same(
      cors(allowed),
      { vary: 'Origin', 'access-control-allow-origin': 'https://app.example', 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'x-request-id' },
      'an allowed origin is echoed, with credentials and Vary',
    );
    t.equal(cors(await echo(server, { origin: 'https://admin.example' }))['access-control-allow-origin'], 'https://admin.example', 'origins compare without case or trailing slash');
    const other = await echo(server, { origin: 'https://evil.example' });
    t.equal(other.status, 200, 'served (the browser hides it)');
    t.same(cors(other), { vary: 'Origin' }, 'another origin: no CORS header, Vary all the same');
    t.same(cors(await echo(server)), { vary: 'Origin' }, 'no Origin: Vary (a cache must not hand it to a page)');
    t.same(cors(await call(server, '/health', { headers: { origin: 'https://app.example' } }))['access-control-allow-origin'], 'https://app.example', 'a route of the runtime alike');
    const pre = await preflight(server, 'https://app.example', { 'access-control-request-headers': 'authorization, x-other' });
    t.equal(pre.status, 204);
    t.same(cors(pre), {
      vary: 'Origin',
      'access-control-allow-methods': 'GET, POST',
      'access-control-allow-headers': 'authorization, content-type',
      'access-control-max-age': '120',
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'x-request-id',
    });
    const refused = await preflight(server, 'https://evil.example');
    t.equal(refused.status, 204);
    t.same(cors(refused), { vary: 'Origin' }, 'a preflight from another origin: nothing granted');
    t.same(cors(await tooLarge(server, { origin: 'https://app.example' })), { vary: 'Origin', 'access-control-allow-origin': 'https://app.example', 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'x-request-id' }, 'a 413 the server writes itself: the same policy');
    t.same(cors(await tooLarge(server, { origin: 'https://evil.example' })), { vary: 'Origin' });
  });
});

t.test('"*" with credentials echoes the origin, never * (svc.toml)', async (t) => {
  const dir = t.testdir({ 'svc.toml': '[scale.server.cors]\nallow_credentials = true\nexpose_headers = []\n' });
  const server = await serve(t, 'uws', {}, dir);
  t.same(cors(await echo(server, { origin: 'https://x.example' })), { vary: 'Origin', 'access-control-allow-origin': 'https://x.example', 'access-control-allow-credentials': 'true' });
  const pre = await preflight(server, 'https://x.example');
  t.same(cors(pre), {
    vary: 'Origin',
    'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
    'access-control-max-age': '600',
    'access-control-allow-origin': 'https://x.example',
    'access-control-allow-credentials': 'true',
  }, 'no allow-headers * with credentials (a browser reads it literally)');
});

t.test('an empty allow list turns CORS off (node:http)', async (t) => {
  const server = await serve(t, 'node', { SVC_CORS_ALLOW_ORIGINS: '[]' });
  const res = await echo(server, { origin: 'https://x.example' });
  t.equal(res.status, 200);
  t.same(cors(res), {}, 'no CORS header');
  const pre = await preflight(server, 'https://x.example', { 'access-control-request-headers': 'content-type' });
  t.equal(pre.status, 204);
  t.same(cors(pre), {}, 'a preflight is granted nothing');
  t.same(cors(await tooLarge(server, { origin: 'https://x.example' })), {}, 'nor an answer the server writes itself');
});

t.test('bad values are refused at start, the key named', async (t) => {
  const app = "import { Walker } from 'svc';\nexport class Hello extends Walker {\n  static access = 'pub' as const;\n}\n";
  const cases: Record<string, [string, Record<string, string>?]> = {
    listed: ['[scale.server.cors]\nallow_origins = "https://app.example"\n'],
    credentials: ['[scale.server.cors]\nallow_credentials = "yes"\n'],
    age: ['', { SVC_CORS_MAX_AGE: 'a day' }],
    bare: ['', { SVC_CORS_ALLOW_ORIGINS: 'app.example' }],
    mixed: ['[scale.server.cors]\nallow_origins = ["*", "https://app.example"]\n'],
    fine: ['[scale.server.cors]\nallow_origins = ["https://app.example"]\nallow_credentials = true\n'],
  };
  // One folder per case (each its svc.toml beside the app), all started at once.
  const dir = t.testdir(Object.fromEntries(Object.entries(cases).map(([name, [toml]]) => [name, { 'app.ts': app, 'svc.toml': toml }])));
  const [listed, credentials, age, bare, mixed, fine] = await Promise.all(Object.entries(cases).map(([name, [, env]]) => runSvc(['start', join(dir, name, 'app.ts'), '--faux'], { env: env ?? {} })));
  for (const r of [listed, credentials, age, bare, mixed]) t.equal(r?.code, 1);
  t.match(listed?.stderr, /\[scale\.server\.cors\] allow_origins must be a list of strings/);
  t.match(credentials?.stderr, /\[scale\.server\.cors\] allow_credentials must be true or false/);
  t.match(age?.stderr, /SVC_CORS_MAX_AGE must be an integer/);
  t.match(bare?.stderr, /\[scale\.server\.cors\] allow_origins \(SVC_CORS_ALLOW_ORIGINS\): "app\.example" is not an origin/);
  t.match(mixed?.stderr, /allow_origins .*"\*" stands alone/);
  t.equal(fine?.code, 0, fine?.stderr ?? '');
  t.match(fine?.stdout, /POST \/walker\/Hello/, 'a good section starts');
});
