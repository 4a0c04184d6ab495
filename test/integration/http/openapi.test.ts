// OpenAPI 3.1 describes every generated route; /docs and /redoc render it in a real browser.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type Server } from '../../kit/index.ts';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startServer({ entry });
});
t.teardown(() => server.stop());

interface Spec {
  openapi: string;
  paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required: string[] } }> }; parameters: { name: string; in: string; schema: unknown }[]; security?: unknown[]; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

t.test('/openapi.json is OpenAPI 3.1 with every route and its schema', async (t) => {
  const res = await fetch(`${server.url}/openapi.json`);
  t.equal(res.status, 200);
  const spec = (await res.json()) as Spec;
  t.equal(spec.openapi, '3.1.0');
  const expect: [string, string][] = [
    ['/walker/Echo', 'post'],
    ['/walker/Echo/{node_id}', 'post'],
    ['/walker/Whoami', 'post'],
    ['/walker/AddNote', 'post'],
    ['/items/{item_id}', 'get'],
    ['/things/{name}', 'put'],
    ['/walker/Upload', 'post'],
    ['/function/add', 'post'],
    ['/function/secret', 'post'],
    ['/install.sh', 'get'],
    ['/healthz', 'get'],
  ];
  for (const [path, method] of expect) t.ok(spec.paths[path]?.[method], `${method.toUpperCase()} ${path} is described`);
  t.notOk(spec.paths['/walker/_Guard'], 'hook walkers are not routes');
  const echo = spec.paths['/walker/Echo']?.post;
  t.match(echo?.requestBody?.content['application/json']?.schema, { properties: { msg: { type: 'string' }, times: { type: 'integer', default: 1 } }, required: ['msg'] });
  t.notOk(echo?.security, 'public: no security requirement');
  t.same(spec.paths['/walker/Whoami']?.post?.security, [{ bearerAuth: [] }]);
  const item = spec.paths['/items/{item_id}']?.get;
  t.match(item?.parameters, [{ name: 'item_id', in: 'path' }, { name: 'q', in: 'query' }, { name: 'limit', in: 'query' }, { name: 'exact', in: 'query' }]);
  t.ok(spec.paths['/walker/Upload']?.post?.requestBody?.content['multipart/form-data'], 'uploads are multipart');
  // The runtime's own routes are described too.
  t.match(spec.paths['/user/login']?.post?.requestBody?.content['application/json']?.schema, { required: ['identity', 'credential'] });
  t.notOk(spec.paths['/user/login']?.post?.security, 'login needs no token');
  t.same(spec.paths['/user/me']?.get?.security, [{ bearerAuth: [] }]);
  t.ok(spec.paths['/admin/users/{username}']?.delete?.parameters.some((p) => p.name === 'username' && p.in === 'path'));
  t.ok(spec.paths['/user/register']?.post?.responses['201'], 'register answers 201');
  t.ok(spec.paths['/admin/stats']?.get, '/admin/stats');
  t.match(spec.components.schemas.Envelope, { properties: { ok: {}, type: {}, data: {}, error: {}, meta: {} } });
  t.ok(spec.components.securitySchemes.bearerAuth);
  // Every $ref resolves.
  const refs = JSON.stringify(spec).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const ref of new Set(refs)) {
    const name = ref.split('/').pop()?.replace('"', '') as string;
    t.ok(spec.components.schemas[name], `${ref} resolves`);
  }
});

t.test('/docs (Swagger UI) and /redoc (ReDoc) render the endpoint list in headless Chromium', { skip: chromiumAvailable() ? false : 'Debian chromium is not installed (.ci/run installs it)' }, async (t) => {
  const shots = join(t.testdirName, '..', 'screenshots');
  mkdirSync(shots, { recursive: true });
  const browser = await launch();
  t.teardown(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  const failed: string[] = [];
  page.on('requestfailed', (r) => failed.push(r.url()));
  await page.goto(`${server.url}/docs`);
  await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
  const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.textContent?.replace(/\u200b/g, '')));
  t.ok(paths.includes('/walker/Echo'), 'Swagger UI lists /walker/Echo');
  t.ok(paths.includes('/items/{item_id}'), 'and /items/{item_id}');
  await page.screenshot({ path: join(shots, 'docs.png'), fullPage: false });
  await page.goto(`${server.url}/redoc`);
  await page.waitForSelector('[role=menuitem], .menu-content li', { timeout: 30_000 });
  const text = await page.textContent('body');
  t.match(text, /Walker Echo/, 'ReDoc lists the walkers');
  await page.screenshot({ path: join(shots, 'redoc.png'), fullPage: false });
  t.same(failed.filter((u) => !u.startsWith(server.url)), [], 'nothing fetched from outside (no CDN)');
});

t.test('docs_enabled = false turns off /docs, /redoc and /openapi.json', async (t) => {
  const quiet = await startServer({ entry, env: { SVC_DOCS_ENABLED: 'false' } });
  t.teardown(() => quiet.stop());
  for (const path of ['/docs', '/redoc', '/openapi.json']) t.equal((await fetch(`${quiet.url}${path}`)).status, 404, path);
  t.equal((await fetch(`${quiet.url}/healthz`)).status, 200);
});
