// /graph, /graph/data and /traverse in process: the app's hook walkers run first, and [scale.graph] turns them off
// or makes /graph/data need a token.
import t from 'tap';
import { startApp } from '../helpers/app.ts';
import { post, tokenFor } from '../kit/index.ts';

const entry = new URL('../fixtures/http-app.ts', import.meta.url).pathname;

t.test('hook walkers run before /graph/data and /traverse, as before the app’s routes', async (t) => {
  const server = await startApp({ entry });
  t.teardown(() => server.stop());
  const token = await tokenFor('graph-hooks', { server });
  const data = await fetch(`${server.url}/graph/data`, { headers: { 'x-block': 'yes' } });
  t.equal(data.status, 418, 'the hook refused /graph/data');
  t.match(await data.json(), { error: { code: 'BLOCKED_BY_HOOK', message: 'blocked GET /graph/data' } });
  const traverse = await post(`${server.url}/traverse`, {}, { authorization: `Bearer ${token}`, 'x-block': 'yes' });
  t.equal(traverse.status, 418, 'and /traverse');
  t.equal((await fetch(`${server.url}/graph/data`)).status, 200, 'without the header the hook lets it through');
  t.equal((await post(`${server.url}/traverse`, {}, { authorization: `Bearer ${token}` })).status, 200);
});

t.test('[scale.graph] public = false: /graph/data needs a token; enabled = false: none of the routes', async (t) => {
  const closed = await startApp({ entry, env: { SVC_GRAPH_PUBLIC: 'false' } });
  t.teardown(() => closed.stop());
  const token = await tokenFor('graph-private', { server: closed });
  const none = await fetch(`${closed.url}/graph/data`);
  t.equal(none.status, 401);
  t.match(await none.json(), { error: { code: 'UNAUTHORIZED', message: /\[scale\.graph\] public = false/ } });
  t.equal((await fetch(`${closed.url}/graph/data`, { headers: { authorization: `Bearer ${token}` } })).status, 200, 'with a token: the caller’s graph');
  t.equal((await fetch(`${closed.url}/graph`)).status, 200, 'the page is still served (it asks to sign in)');

  const off = await startApp({ entry, env: { SVC_GRAPH_ENABLED: 'false' } });
  t.teardown(() => off.stop());
  const offToken = await tokenFor('graph-off', { server: off });
  t.equal((await fetch(`${off.url}/graph/data`)).status, 404);
  t.equal((await fetch(`${off.url}/graph`)).status, 404);
  t.equal((await post(`${off.url}/traverse`, {}, { authorization: `Bearer ${offToken}` })).status, 404);
  const spec = (await (await fetch(`${off.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  t.notOk(spec.paths['/traverse'], 'not in /openapi.json either');
});

t.test('/graph/data query checks: one value each, `_` allowed, errors in the walkers’ shape', async (t) => {
  const server = await startApp({ entry });
  t.teardown(() => server.stop());
  t.equal((await fetch(`${server.url}/graph/data?_=1700000000`)).status, 200, 'a cache-buster is fine');
  const twice = await fetch(`${server.url}/graph/data?depth=1&depth=2`);
  t.equal(twice.status, 400);
  t.match(await twice.json(), { error: { code: 'VALIDATION_ERROR', message: 'graph data: field "depth" is given more than once', details: [{ field: 'depth' }] } });
  const range = (await (await fetch(`${server.url}/graph/data?depth=101`)).json()) as { error: { message: string; details: unknown } };
  t.match(range.error, { message: /^graph data: field "depth"/, details: [{ field: 'depth' }] }, 'the walker’s check, named for the route');
  const negative = (await (await fetch(`${server.url}/graph/data?depth=-1`)).json()) as { error: { message: string } };
  t.match(negative.error.message, /^graph data: field "depth"/);
  const empty = await fetch(`${server.url}/graph/data?source=`);
  t.equal(empty.status, 400, 'an empty source is a bad value, not a missing node');
});
