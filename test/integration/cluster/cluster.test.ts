// Three `svc start` processes, one Redis, one data folder: one service.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { skipRedis, startRedis, post, tokenFor, adminToken, pool, startCluster, walk, type TestCluster } from '../../kit/index.ts';
import { bearer, GOOD_PASSWORD, login, register, tokenOf } from '../../helpers/identity.ts';

// Several real processes per test: more than the default per-file time on a loaded 2-core machine.
t.setTimeout(360_000);

t.test('a cluster of three processes', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster: TestCluster = await startCluster(t, 3, { redis, env: { SVC_LOGIN_ATTEMPTS_PER_IDENTITY: '5' } });
  const [a, b, c] = cluster.members as [TestCluster['members'][0], TestCluster['members'][0], TestCluster['members'][0]];
  const urls = [a.url, b.url, c.url];

  t.test('each member printed the cluster it joined', async (t) => {
    for (const m of cluster.members) t.match(m.output(), new RegExp(`svc: cluster ${cluster.name}: joined as [0-9a-f]+`));
    t.match(c.output(), /2 other members/);
  });

  t.test('3,000 concurrent increments of one shared node over the three ports: all answered 200, exactly +3,000', async (t) => {
    const before = (await walk(a.url, 'ReadShared')).body.data.reports[0] as number;
    const results = await pool(3000, 96, (i) => walk(urls[i % 3] as string, 'BumpShared'));
    const bad = results.filter((r) => r.status !== 200);
    t.equal(bad.length, 0, `every request answered 200 (${bad.slice(0, 3).map((r) => `${r.status} ${JSON.stringify(r.body)}`).join('; ')})`);
    for (const url of urls) t.equal((await walk(url, 'ReadShared')).body.data.reports[0], before + 3000, `exactly +3000, read through ${url}`);
  });

  t.test('12 users’ private counters, 100 increments each over the three ports: each exactly 100', async (t) => {
    const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => tokenFor(`cl-user-${i}`, { server: a })));
    const results = await pool(1200, 96, (i) => walk(urls[i % 3] as string, 'Bump', {}, tokens[i % 12]));
    t.equal(results.filter((r) => r.status !== 200).length, 0, 'every request answered 200');
    const counts = await Promise.all(tokens.map((token, i) => walk(urls[(i + 1) % 3] as string, 'Read', {}, token)));
    t.same(counts.map((r) => r.body.data.reports[0]), Array(12).fill(100));
  });

  t.test('a password change on A revokes the old token on B and C before it answers', async (t) => {
    await register(a.url, 'cl_rev');
    const old = await tokenOf(b.url, 'cl_rev');
    for (const url of urls) t.equal((await walk(url, 'Bump', {}, old)).status, 200, `the token works on ${url}`);
    const changed = await post(`${a.url}/user/password`, { current_password: GOOD_PASSWORD, new_password: 'another long passphrase' }, bearer(old), 'PUT');
    t.equal(changed.status, 200);
    for (const url of [b.url, c.url]) {
      const r = await walk(url, 'Bump', {}, old);
      t.equal(r.status, 401, `refused on ${url} right after the change`);
      t.match(r.body, { error: { code: 'UNAUTHORIZED' } });
    }
    t.equal((await walk(c.url, 'Bump', {}, changed.body.data.token)).status, 200, 'the new token works everywhere');
  });

  t.test('the login rate limit counts across processes', async (t) => {
    await register(a.url, 'cl_rate');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await login(urls[i % 3] as string, 'cl_rate', 'wrong password here');
      statuses.push(r.status);
    }
    t.same(statuses.slice(0, 5), [401, 401, 401, 401, 401], 'five failures, one process after the other');
    t.equal(statuses[5], 429, 'the sixth is limited, on whichever process it lands');
  });

  t.test('a WebSocket broadcast from a client on A reaches the clients on B and C exactly once', async (t) => {
    const sender = await WalkerSocket.connect(a.url, 'Room');
    const listeners = await Promise.all([a.url, b.url, c.url, c.url].map((url) => WalkerSocket.connect(url, 'Room')));
    const got = listeners.map(() => [] as unknown[]);
    listeners.forEach((s, i) => s.onBroadcast((m) => got[i]?.push(m.reports[0])));
    for (let i = 0; i < 5; i++) await sender.send({ text: `hello ${i}` });
    // Then a marker each listener answers itself: everything broadcast before it has arrived by then on its process.
    await sender.send({ text: 'end' });
    const until = Date.now() + 10_000;
    while (got.some((g) => !g.includes('end')) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const [i, g] of got.entries()) t.same(g, ['hello 0', 'hello 1', 'hello 2', 'hello 3', 'hello 4', 'end'], `listener ${i}: each message once, in order`);
    for (const s of [sender, ...listeners]) s.close();
  });

  t.test('GET /admin/cluster: the members; an admin token is needed', async (t) => {
    const token = await adminToken(a);
    const res = await fetch(`${b.url}/admin/cluster`, { headers: bearer(token) });
    t.equal(res.status, 200);
    const body = (await res.json()) as { data: { name: string; members: { id: string; address: string; workers: string[]; uptime_seconds: number; last_heartbeat: string; partitions: number; self: boolean }[] } };
    t.equal(body.data.name, cluster.name);
    t.equal(body.data.members.length, 3);
    for (const m of body.data.members) {
      t.match(m.address, /^127\.0\.0\.1:\d+$/, 'advertises the loopback address it binds');
      t.equal(m.workers.length, 1);
      t.ok(Date.now() - Date.parse(m.last_heartbeat) < 10_000, 'a recent heartbeat');
      t.type(m.uptime_seconds, 'number');
    }
    t.equal(body.data.members.filter((m) => m.self).length, 1, 'one of them is the member that answered');
    t.ok(body.data.members.reduce((n, m) => n + m.partitions, 0) >= 13, 'the partitions held add up (12 users, the guest, more)');
    t.equal((await fetch(`${b.url}/admin/cluster`)).status, 401, 'no token: 401');
    t.equal((await fetch(`${b.url}/admin/cluster`, { headers: bearer(`${token.slice(0, -4)}AAAA`) })).status, 401, 'a forged token: 401');
    const expired = await tokenFor('cluster-admin', { role: 'admin', expiresIn: Math.floor(Date.now() / 1000) - 10 });
    t.equal((await fetch(`${b.url}/admin/cluster`, { headers: bearer(expired) })).status, 401, 'an expired token: 401');
    const user = await tokenFor('cl-user-0', { server: a });
    t.equal((await fetch(`${b.url}/admin/cluster`, { headers: bearer(user) })).status, 403, 'a user token: 403');
    const spec = (await (await fetch(`${a.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    t.ok(spec.paths['/admin/cluster'], '/admin/cluster is in /openapi.json');
  });

  t.test('/ready is 200 on joined members; /health too', async (t) => {
    for (const url of urls) {
      t.equal((await fetch(`${url}/ready`)).status, 200);
      t.equal((await fetch(`${url}/health`)).status, 200);
    }
  });
});
