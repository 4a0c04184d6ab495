// Members that leave, a new app version, a Redis that restarts or is not there: the cluster serves on.
import t from 'tap';
import { skipRedis, startRedis, startServer, tokenFor, adminToken, pool, startCluster, walk, waitForMembers, CLUSTER_APP } from '../../kit/index.ts';
import { load, readAll } from './helpers.ts';

// Several real processes per test: more than the default per-file time on a loaded 2-core machine.
t.setTimeout(360_000);

t.test('Redis restarted mid-run: the members join again and the cluster serves on', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, { redis, env: { SVC_CLUSTER_LEASE_MS: '2000' } });
  const [a, b] = cluster.members as [(typeof cluster.members)[0], (typeof cluster.members)[0]];
  const tokens = await Promise.all(Array.from({ length: 4 }, (_, i) => tokenFor(`rr-user-${i}`, { server: a })));
  for (const token of tokens) t.equal((await walk(a.url, 'Bump', {}, token)).status, 200);
  // Redis gone: /ready turns 503 (and says why), /health stays 200, no member crashes.
  await redis.stop();
  let ready = await fetch(`${a.url}/ready`);
  while (ready.status === 200) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    ready = await fetch(`${a.url}/ready`);
  }
  t.equal(ready.status, 503);
  t.match(await ready.json(), { ready: false, status: /redis unreachable|lease lapsed/ });
  t.equal((await fetch(`${a.url}/health`)).status, 200, '/health stays 200');
  await redis.restart();
  // Every member notices its key is gone (Redis kept nothing) and joins again; then everything serves.
  await a.waitFor(/joined the cluster again/);
  await b.waitFor(/joined the cluster again/);
  await waitForMembers(a, 2);
  await waitForMembers(b, 2);
  const results = await pool(40, 8, async (i) => {
    for (;;) {
      const r = await walk([a.url, b.url][i % 2] as string, 'Bump', {}, tokens[i % 4]);
      if (r.status !== 503) return r.status;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  t.same([...new Set(results)], [200], 'served after the restart');
  t.same(await readAll(b.url, tokens), Array(4).fill(11), 'nothing lost, nothing doubled');
});

t.test('SIGTERM: a member leaves gracefully under load; the others answer every request', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 3, { redis });
  const [a, b, c] = cluster.members as [(typeof cluster.members)[0], (typeof cluster.members)[0], (typeof cluster.members)[0]];
  const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => tokenFor(`gl-user-${i}`, { server: a })));
  const running = load(() => [a.url, b.url], tokens);
  while (running.acked.reduce((x, y) => x + y, 0) < 300) await new Promise((r) => setTimeout(r, 20));
  const leftAt = Date.now();
  t.equal(await c.stop('SIGTERM'), 0, 'the leaving member exits 0');
  t.comment(`left in ${Date.now() - leftAt} ms`);
  await waitForMembers(a, 2);
  const more = running.acked.reduce((x, y) => x + y, 0) + 200;
  while (running.acked.reduce((x, y) => x + y, 0) < more) await new Promise((r) => setTimeout(r, 20));
  await running.stop();
  t.same(running.failures.map((f) => `${f.status} ${JSON.stringify(f.body)}`), [], 'no request failed while it left');
  t.same(await readAll(a.url, tokens), running.acked, 'every acknowledged increment, exactly');
  t.match(c.output(), /leaving the cluster/);
});

t.test('Redis unreachable at start: one line, exit 1, no credentials printed', async (t) => {
  const r = await startServer({
    entry: CLUSTER_APP,
    env: { KV_URL: 'redis://svcuser:hunter2-secret@127.0.0.1:9/0' },
    until: /never/,
  }).then(
    () => undefined,
    (error: Error) => error.message,
  );
  t.match(r, /exited \(1\)/);
  t.match(r, /svc: Redis at redis:\/\/\*\*\*.*@127\.0\.0\.1:9\/0 is unreachable/);
  t.notMatch(r, /hunter2/, 'the password never appears');
  t.notMatch(r, /svcuser/, 'nor the user');
});

t.test('members of another app version share no partitions, and no update is lost while both serve', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 1, { redis });
  const v2 = new URL('../../fixtures/cluster-app-v2.ts', import.meta.url).pathname;
  const b = await cluster.add({ entry: v2 });
  const [a] = cluster.members as [(typeof cluster.members)[0]];
  await waitForMembers(a, 2);
  const token = await tokenFor('rolling-user', { server: a });
  const results = await pool(200, 16, (i) => walk([a.url, b.url][i % 2] as string, 'Bump', {}, token));
  const ok = results.filter((r) => r.status === 200).length;
  for (const r of results) t.ok(r.status === 200 || r.status === 503, `answered ${r.status}`);
  t.equal((await walk(a.url, 'Read', {}, token)).body.data.reports[0], ok, `exactly the ${ok} acknowledged increments`);
  const spec = await (await fetch(`${a.url}/admin/cluster`, { headers: { authorization: `Bearer ${await adminToken(a)}` } })).json();
  const apps = new Set((spec as { data: { members: { app: string }[] } }).data.members.map((m) => m.app));
  t.equal(apps.size, 2, 'two app fingerprints in the cluster');
});
