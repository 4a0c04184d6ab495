// Service-to-service calls between real `svc start` processes: a consumer that auto-starts its provider,
// providers at registered URLs (calls both ways, a killed provider and its circuit, a slow one), eight
// providers started at once, and a sibling that goes when its parent is killed with SIGKILL.
import t from 'tap';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import WebSocket from 'ws';
import { freePort, post, startServer, type Server } from '../../kit/index.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { alive, gone } from './processes.ts';

t.setTimeout(360_000);

const FIXTURES = new URL('../../fixtures/sv/', import.meta.url).pathname;
const SHOP = `${FIXTURES}shop.ts`;
const BILLING = `${FIXTURES}billing.ts`;

async function call(server: Server, name: string, body: unknown = {}, headers: Record<string, string> = {}) {
  return post(`${server.url}/function/${name}`, body, headers);
}

t.test('a consumer auto-starts its provider and calls it as a typed module', async (t) => {
  const shop = await startServer({ entry: SHOP });
  t.teardown(() => shop.stop());

  const first = await call(shop, 'checkout', { amount: 5 }, { 'x-trace-id': 'trace-abc-1' });
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.match(first.body.data.result, { charged: 5, user: null, traceId: 'trace-abc-1' }, 'a guest call, its trace id propagated');

  const ready = await shop.waitFor(/^svc: service billing \(.*billing\.ts\) ready at http:\/\/127\.0\.0\.1:(\d+), pid (\d+)$/);
  const [, port, pid] = /ready at http:\/\/127\.0\.0\.1:(\d+), pid (\d+)$/.exec(ready) as RegExpExecArray;
  t.ok(Number(port) >= 18000 && Number(port) <= 18999, `the sibling listens in 18000-18999 (${port})`);
  t.equal(first.body.data.result.pid, Number(pid), 'the call ran in the sibling');
  t.match(shop.output(), /^\[billing\] Server ready at http:\/\/127\.0\.0\.1:\d+$/m, "the sibling's output is in the parent's log, prefixed");
  t.ok(existsSync(`${shop.dataDir}-sv-billing/anchor_store.db`), 'the sibling keeps its data in a folder of its own, beside the parent’s');

  // Signed in at the consumer: the provider's public walker runs on that user's root there.
  await register(shop.url, 'ada');
  await register(shop.url, 'bob');
  const ada = await tokenOf(shop.url, 'ada');
  const bob = await tokenOf(shop.url, 'bob');
  const bought = await post(`${shop.url}/walker/Buy`, { amount: 7 }, bearer(ada));
  t.equal(bought.status, 200, JSON.stringify(bought.body));
  const walker = bought.body.data.reports[0];
  t.match(walker, { name: 'Invoice', amount: 7, moneyRebuilt: true }, 'the walker comes back with the fields it was spawned with, its reports rebuilt');
  t.equal(walker.count, undefined, 'what its run did with its own fields stays with the provider (as for any HTTP caller)');
  t.match(walker.reports[0], { id: /^[0-9a-f]{32}$/, type: 'Bill', context: { amount: 7 } });
  t.equal((await call(shop, 'bills', {}, bearer(ada))).body.data.result, 1, "ada's graph at the provider holds her bill");
  t.equal((await call(shop, 'bills', {}, bearer(bob))).body.data.result, 0, "bob's does not");
  t.equal((await call(shop, 'bills')).body.data.result, 0, 'nor does the guest graph');
  const who = await call(shop, 'checkout', { amount: 1 }, bearer(ada));
  t.equal(typeof who.body.data.result.user, 'string');
  t.not(who.body.data.result.user, null, 'the Authorization header was forwarded');
  // A WebSocket walker's call forwards the connection's token too.
  const ws = new WebSocket(`${shop.url.replace('http', 'ws')}/ws/LiveCharge?token=${ada}`);
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const frame = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
  ws.send(JSON.stringify({ amount: 2 }));
  const live = JSON.parse(await frame);
  t.equal(live.data.reports[0].user, who.body.data.result.user, "a WebSocket walker's call runs as the connection's user");
  ws.close();
  const billsIn = (file: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare("select count(*) as n from anchors where arch_type = 'Bill'").get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  t.equal(billsIn(`${shop.dataDir}-sv-billing/anchor_store.db`), 1, "the provider's store holds the bill");
  t.equal(billsIn(`${shop.dataDir}/anchor_store.db`), 0, "the parent's store holds none of the provider's nodes");

  // Boundary types both ways.
  const quote = await call(shop, 'quote', { amount: 4 });
  t.same(quote.body.data.result, { isMoney: true, doubled: 8, currency: 'EUR' }, 'class instances rebuilt into the class the consumer knows');
  const value = { n: 1.25, s: 'é', b: false, nil: null, list: [1, [2, { deep: ['x'] }]], record: { a: { b: 1 } } };
  t.same((await call(shop, 'roundTrip', { value })).body.data.result, value, 'numbers, strings, booleans, null, arrays and records round trip');
  const anchor = await call(shop, 'tryCall', { what: 'anchor' });
  t.match(anchor.body.data.result, { ok: false, code: 'SV_BOUNDARY', message: /^sv-to-sv RPC 'billing\.echo' failed: args\.value\.nested\[0\] is a Root \(an anchor.*\(nothing was sent\)$/ });
  t.match((await call(shop, 'tryCall', { what: 'function' })).body.data.result, { ok: false, code: 'SV_BOUNDARY' });
  // Values JSON carries differently: as the types say.
  t.same((await call(shop, 'whenBack')).body.data.result, { at: '1970-01-01T00:00:00.000Z', tags: ['a', 'b'], m: { k: 1 }, link: 'https://svc.example/x' });
  // No URL, nothing to start.
  t.match((await call(shop, 'nowhere')).body.data.result, { code: 'SV_UNKNOWN_SERVICE', message: /^sv-to-sv RPC 'nowhere-at-all\.x' failed: no URL for service nowhere-at-all/ });
  // An error envelope and a private function.
  t.match((await call(shop, 'tryCall', { what: 'fail' })).body.data.result, { ok: false, code: 'SV_CALL_FAILED', status: 502, message: "sv-to-sv RPC 'billing.fail' failed: CARD_DECLINED: card declined", details: { provider: { status: 402, code: 'CARD_DECLINED' } } });
  t.match((await call(shop, 'tryCall', { what: 'internal' })).body.data.result, { ok: false, code: 'SV_CALL_FAILED', message: /NOT_FOUND: function internal is not public/ });

  // Stopping the parent stops the sibling.
  await shop.stop();
  t.ok(await gone(Number(pid)), 'the sibling stopped with its parent');
});

t.test('a sibling watches its parent: killed with SIGKILL, the parent takes no sibling with it, the sibling goes by itself', async (t) => {
  const shop = await startServer({ entry: SHOP });
  t.teardown(() => shop.stop('SIGKILL'));
  t.equal((await call(shop, 'checkout', { amount: 1 })).status, 200);
  const ready = await shop.waitFor(/^svc: service billing .* ready at .*, pid \d+$/);
  const pid = Number(/pid (\d+)$/.exec(ready)?.[1]);
  t.ok(alive(pid));
  await shop.stop('SIGKILL');
  t.ok(await gone(pid), 'the sibling saw its parent pipe close and stopped');
});

t.test('providers at registered URLs: calls both ways; a killed provider opens the circuit, a restarted one closes it; a slow one times out', async (t) => {
  const billingPort = await freePort();
  const shopPort = await freePort();
  const env = {
    SVC_SV_BILLING_URL: `http://127.0.0.1:${billingPort}`,
    SVC_SV_SHOP_URL: `http://127.0.0.1:${shopPort}`,
    SVC_SV_BREAKER_FAILURES: '2',
    SVC_SV_BREAKER_HALF_OPEN_SECONDS: '1',
    SVC_SV_RETRIES: '1',
    SVC_SV_RETRY_BACKOFF_MS: '10',
    SVC_SV_RPC_TIMEOUT: '1',
  };
  let billing = await startServer({ entry: BILLING, port: billingPort, env });
  t.teardown(() => billing.stop());
  const shop = await startServer({ entry: SHOP, port: shopPort, env });
  t.teardown(() => shop.stop());
  t.equal(billing.port, billingPort);
  t.equal(shop.port, shopPort);

  t.match((await call(shop, 'checkout', { amount: 2 })).body.data.result, { charged: 2 }, 'shop → billing');
  t.equal((await call(billing, 'askShop')).body.data.result, 'billing asked shop', 'billing → shop');
  t.notMatch(shop.output(), /svc: service billing/, 'nothing auto-started: the URL was given');

  await billing.stop('SIGKILL');
  const refused = (await call(shop, 'tryCall', { what: 'charge' })).body.data.result;
  t.match(refused, { ok: false, code: 'SV_CALL_FAILED', status: 502, message: /^sv-to-sv RPC 'billing\.charge' failed: .*ECONNREFUSED/ });
  t.equal(refused.details.attempts, 2, 'connection refused was retried once');
  await call(shop, 'tryCall', { what: 'charge' });
  const fast = (await call(shop, 'tryCall', { what: 'charge' })).body.data.result;
  t.match(fast, { ok: false, code: 'SV_UNAVAILABLE', status: 503, message: "sv-to-sv RPC 'billing.charge' failed: circuit open: billing failed 2 times in a row; calls fail fast until a trial call succeeds" });
  t.equal(fast.details.attempts, 0, 'the open circuit sent nothing');

  // Back on the same port: after the half-open delay a trial call goes through, and the circuit closes.
  billing = await startServer({ entry: BILLING, port: billingPort, env });
  const stillOpen = (await call(shop, 'tryCall', { what: 'charge' })).body.data.result;
  const openedFor = Date.now();
  if (stillOpen.ok === false) t.equal(stillOpen.code, 'SV_UNAVAILABLE', 'within the half-open delay: still failing fast');
  let back: { ok: boolean } | undefined;
  while (Date.now() - openedFor < 10_000) {
    back = (await call(shop, 'tryCall', { what: 'charge' })).body.data.result;
    if (back?.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.match(back, { ok: true }, 'half-open, then closed: calls go through again');
  t.match((await call(shop, 'tryCall', { what: 'charge' })).body.data.result, { ok: true });

  // A slow provider: rpc_timeout (1 s here) ends the call with SV_TIMEOUT.
  const slow = (await call(shop, 'tryCall', { what: 'slow', ms: 3000 })).body.data.result;
  t.match(slow, { ok: false, code: 'SV_TIMEOUT', status: 504, message: "sv-to-sv RPC 'billing.slow' failed: no answer within rpc_timeout (1000 ms)" });
  t.ok(slow.ms < 2900, `it failed at its timeout, before the provider answered (${slow.ms} ms)`);
});

t.test('eight providers start at once on the first call', async (t) => {
  // Eight `svc start` at once on two cores take a while: the first call waits for all of them.
  const fleet = await startServer({ entry: `${FIXTURES}fleet/fleet.ts`, env: { SVC_REQUEST_TIMEOUT_MS: '170000', SVC_SV_START_TIMEOUT: '160' } });
  t.teardown(() => fleet.stop());
  const res = await call(fleet, 'all');
  t.equal(res.status, 200, JSON.stringify(res.body));
  const pids = res.body.data.result.pids as number[];
  t.equal(pids.length, 8);
  t.equal(new Set(pids).size, 8, 'eight processes');
  for (const name of ['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8']) t.match(fleet.output(), new RegExp(`^svc: service ${name} \\(.*\\) ready at http://127\\.0\\.0\\.1:18\\d{3}, pid \\d+$`, 'm'));
  await fleet.stop();
  for (const pid of pids) t.ok(await gone(pid), `provider ${pid} stopped with the consumer`);
});
