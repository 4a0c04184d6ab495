// Event streaming in one process (memory streams): walkers and functions publish through the run's
// outbox, subscriptions exported by the app handle events and run walkers, retries and the dead-letter
// topic, pull with ack and redelivery, /admin/events behind an admin token, and a disabled broker.
import t from 'tap';
import { startApp, type InProcessServer } from '../../helpers/app.ts';
import { post, tokenFor } from '../../kit/index.ts';
import { testApp } from 'svc/testing';
import { fn, subscribe, T } from 'svc';

const entry = new URL('../../fixtures/events-app.ts', import.meta.url).pathname;
let server: InProcessServer;

t.before(async () => {
  server = await startApp({ entry, env: { SVC_EVENTS_ENABLED: 'true', SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS: '0.3' } });
});
t.teardown(() => server?.stop());

/** Poll a condition (a read through the app), yielding between tries; fail after `ms`. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms: ${JSON.stringify(v)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const seen = async (topic: string, headers: Record<string, string> = {}) => (await post(`${server.url}/walker/ListSeen`, { topic }, headers)).body.data.reports as { key: string; attempt: number; trace: string; eventId: string; note: string }[];

t.test('a walker publishes through its outbox: sent when it commits, with the request trace id; never when it fails', async (t) => {
  t.match(server.output(), /event streaming on: memory broker, 7 subscriptions/, 'start logs the broker kind and the subscription count');
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const ok = await post(`${server.url}/walker/PlaceOrder`, { key: 'kept' }, { 'x-trace-id': trace });
  t.equal(ok.status, 200);
  const failed = await post(`${server.url}/walker/PlaceOrder`, { key: 'rolled-back', fail: true });
  t.equal(failed.status, 409);
  await post(`${server.url}/walker/PlaceOrder`, { key: 'marker' });
  const got = await until(() => seen('orders'), (r) => r.some((s) => s.key === 'marker'));
  t.same(got.map((s) => s.key).sort(), ['kept', 'marker'], 'the failed run published nothing');
  const kept = got.find((s) => s.key === 'kept');
  t.equal(kept?.trace, trace, 'the event carries the trace id of the request that published it');
  t.match(kept?.eventId, /^[0-9a-f-]{36}$/);
});

t.test('publishing data JSON cannot hold fails the run (nothing committed), not the broker later', async (t) => {
  const res = await post(`${server.url}/walker/PublishBad`, {});
  t.equal(res.status, 500);
  t.match(res.body.error, { code: 'EXECUTION_ERROR', message: /cannot be written as JSON/ });
  t.same(await seen('bad'), [], 'the run’s write was rolled back');
});

t.test('a handler that fails is retried; a poison event goes to <topic>.dlq after max_attempts, with its reason', async (t) => {
  await post(`${server.url}/function/emit`, { topic: 'flaky', key: 'f1' });
  const flaky = await until(() => seen('flaky'), (r) => r.length > 0);
  t.same(flaky.map((s) => [s.key, s.attempt]), [['f1', 2]]);
  await post(`${server.url}/function/emit`, { topic: 'poison', key: 'p1' });
  const dead = await until(() => seen('poison.dlq'), (r) => r.length > 0);
  t.equal(dead[0]?.note, 'Error: poison pill|3|poison', 'the reason, attempts and topic in the dead letter headers');
  const tries = (await seen('poison')).filter((s) => s.key === 'p1').sort((a, b) => a.attempt - b.attempt);
  t.same(tries.map((s) => s.attempt), [1, 2, 3], 'exactly max_attempts tries');
  const gaps = [Number(tries[1]?.note) - Number(tries[0]?.note), Number(tries[2]?.note) - Number(tries[1]?.note)];
  t.ok((gaps[0] as number) >= 190 && (gaps[1] as number) >= 390, `waited the configured backoff between tries (${gaps.join(', ')} ms)`);
  t.equal(dead[0]?.eventId, tries[0]?.eventId, 'the dead letter keeps the event id');
});

t.test('a handler runs a walker on a user’s root with that root’s rights', async (t) => {
  const token = await tokenFor('evan', { server });
  const root = (await post(`${server.url}/walker/MyRoot`, {}, { authorization: `Bearer ${token}` })).body.data.reports[0];
  t.match(root, /^[0-9a-f]{32}$/);
  await post(`${server.url}/function/noteFor`, { key: 'for-evan', root });
  const mine = await until(() => seen('user-notes', { authorization: `Bearer ${token}` }), (r) => r.length > 0);
  t.same(mine.map((s) => s.key), ['for-evan'], 'in the user’s graph');
  t.same(await seen('user-notes'), [], 'not in the guest graph');
});

t.test('pull: consume with ack; an event not acknowledged comes back after the visibility timeout', async (t) => {
  await post(`${server.url}/function/emit`, { topic: 'jobs', key: 'j', count: 3 });
  const first = (await post(`${server.url}/function/pull`, { topic: 'jobs', max: 2, ack: true })).body.data.result;
  t.equal(first.kind, 'memory');
  t.same(first.events.map((e: { key: string }) => e.key), ['j-0', 'j-1']);
  const unacked = (await post(`${server.url}/function/pull`, { topic: 'jobs', max: 5, ack: false })).body.data.result;
  t.same(unacked.events.map((e: { key: string }) => e.key), ['j-2']);
  t.equal(unacked.events[0].type, 'jobs', 'the type defaults to the topic');
  const again = await until(
    async () => (await post(`${server.url}/function/pull`, { topic: 'jobs', max: 5, ack: true })).body.data.result.events as { key: string; id: string }[],
    (r) => r.length > 0,
  );
  t.same(again.map((e) => e.key), ['j-2'], 'redelivered');
  t.equal(again[0]?.id, unacked.events[0].id, 'same event id');
  const timed = Date.now();
  const empty = (await post(`${server.url}/function/pull`, { topic: 'jobs', max: 5, timeout: 0.2 })).body.data.result;
  t.same(empty.events, []);
  t.ok(Date.now() - timed >= 150, 'consume waited up to its timeout for an event');
});

t.test('GET /admin/events: admin only; topics, groups, pending, dead-letter sizes, counters', async (t) => {
  const url = `${server.url}/admin/events`;
  t.equal((await fetch(url)).status, 401, 'no token');
  t.equal((await fetch(url, { headers: { authorization: `Bearer ${await tokenFor('admin', { role: 'admin', secret: 'x'.repeat(48) })}` } })).status, 401, 'forged');
  t.equal((await fetch(url, { headers: { authorization: `Bearer ${await tokenFor('root', { server, role: 'admin', expiresIn: Math.floor(Date.now() / 1000) - 60 })}` } })).status, 401, 'expired');
  t.equal((await fetch(url, { headers: { authorization: `Bearer ${await tokenFor('plain', { server })}` } })).status, 403, 'not an admin');
  const res = await fetch(url, { headers: { authorization: `Bearer ${await tokenFor('root', { server, role: 'admin' })}` } });
  t.equal(res.status, 200);
  const { data } = (await res.json()) as any;
  t.match(data, { enabled: true, broker: 'memory', consumer_group: 'svc-scale', stream_prefix: 'svc:events:' });
  t.same(data.subscriptions.map((s: { name: string }) => s.name).sort(), ['onDead', 'onFeed', 'onFlaky', 'onOrder', 'onPoison', 'onSlow', 'onUserNote']);
  const poison = data.topics.find((x: { topic: string }) => x.topic === 'poison');
  t.match(poison, { dead_letter: { topic: 'poison.dlq', length: 1 }, groups: [{ name: 'svc-scale', pending: 0, lag: 0 }] });
  t.ok(data.counters.published >= 6 && data.counters.dead_lettered === 1 && data.counters.retried >= 3, JSON.stringify(data.counters));
  const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as any;
  t.ok(openapi.paths['/admin/events']?.get, 'documented in /openapi.json');
});

t.test('a topic from request data that cannot be a stream is a 400 INVALID_TOPIC', async (t) => {
  for (const topic of ['has space', '', 'x'.repeat(201)]) {
    const res = await post(`${server.url}/function/emit`, { topic, key: 'k' });
    t.equal(res.status, 400, JSON.stringify(topic).slice(0, 20));
    t.equal(res.body.error.code, 'INVALID_TOPIC');
  }
  t.equal((await post(`${server.url}/function/pull`, { topic: 'bad topic' })).body.error.code, 'INVALID_TOPIC');
});

t.test('two subscriptions of one topic in one group are refused at start (each would get only some events)', async (t) => {
  const handler = async () => undefined;
  const app = { ping: fn({ access: 'pub', params: T.Object({}) }, () => 1), onA: subscribe('orders', handler), onB: subscribe('orders', handler) };
  await t.rejects(testApp({ app }), /onA and onB both subscribe to 'orders' in consumer group 'svc-scale'/);
  const ok = await testApp({ app: { ...app, onB: subscribe('orders', handler, { group: 'audit' }) }, env: { SVC_EVENTS_ENABLED: 'true' } });
  t.match(ok.output(), /2 subscriptions/, 'with a group of its own, both get every event');
  await ok.close();
  t.throws(() => subscribe('orders', handler, { startFrom: 'yesterday' }), /startFrom/);
  t.throws(() => subscribe('orders', handler, { retry: { deadLetterSuffix: '' } }), /deadLetterSuffix/);
});

t.test('disabled (the default): publish and pull do nothing, subscriptions receive nothing, and the log says so', async (t) => {
  const off = await startApp({ entry });
  t.teardown(() => off.stop());
  t.match(off.output(), /event streaming is off/);
  t.equal((await post(`${off.url}/walker/PlaceOrder`, { key: 'x' })).status, 200);
  const pulled = (await post(`${off.url}/function/pull`, { topic: 'orders', timeout: 1 })).body.data.result;
  t.same(pulled, { kind: 'disabled', events: [] });
  const res = await fetch(`${off.url}/admin/events`, { headers: { authorization: `Bearer ${await tokenFor('root', { server: off, role: 'admin' })}` } });
  t.match(((await res.json()) as any).data, { enabled: false, broker: 'disabled', topics: [] });
});
