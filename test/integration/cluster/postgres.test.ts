// svc start on PostgreSQL (DOCDB_URI): members with nothing shared on disk serve one service; the graph
// guarantees hold; a database that is down at start, or lost while serving, is handled.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import WebSocket from 'ws';
import { skipPostgres, startPostgres, skipRedis, startRedis, startServer, CLUSTER_APP, pool, walk, type Server } from '../../kit/index.ts';
import { register, tokenOf } from '../../helpers/identity.ts';

t.setTimeout(360_000);

const skip = skipPostgres || skipRedis;
if (skip) {
  t.comment(`SKIPPED LOUDLY: ${skip}`);
  t.pass(`skipped: ${skip}`);
} else {
  const pgs = await startPostgres(t);
  const redis = await startRedis(t);

  /** A member on its own data folder (nothing shared on disk: the database and Redis are the only shared parts). */
  const member = (env: Record<string, string>, workers = 1): Promise<Server> =>
    startServer({ entry: CLUSTER_APP, workers, env: { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-pg-member-')), ...env } });

  const stopAll = (servers: Server[]) => Promise.all(servers.map((s) => s.stop('SIGKILL')));

  /** An admin token of a database's bootstrap admin (ADMIN_DEFAULT_PASSWORD, changed at first login as it must be). */
  const ADMIN_PASSWORD = 'first root password 1';
  const adminOf = async (url: string): Promise<string> => {
    const first = await tokenOf(url, 'admin', ADMIN_PASSWORD);
    const changed = await fetch(`${url}/user/password`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${first}` },
      body: JSON.stringify({ current_password: ADMIN_PASSWORD, new_password: 'second root password 2' }),
    });
    if (changed.status !== 200) throw new Error(`admin password change: ${changed.status} ${await changed.text()}`);
    return tokenOf(url, 'admin', 'second root password 2');
  };

  /** Poll `/admin/cluster` on every member until each sees `count` members (so no graph moves during the test). */
  const settled = async (members: Server[], token: string, count: number): Promise<void> => {
    for (const m of members) {
      for (;;) {
        const res = await fetch(`${m.url}/admin/cluster`, { headers: { authorization: `Bearer ${token}` } });
        if (res.status === 200 && ((await res.json()) as { data: { members: unknown[] } }).data.members.length === count) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };

  t.test('three members on PostgreSQL with separate data folders: +3,000 on one counter, every request 200; registered on A, logged in on B', async (t) => {
    const env = { DOCDB_URI: await pgs.database(), KV_URL: redis.url, SVC_CLUSTER_NAME: `pg-${randomBytes(3).toString('hex')}`, ADMIN_DEFAULT_PASSWORD: ADMIN_PASSWORD };
    const members: Server[] = [];
    t.teardown(() => stopAll(members));
    // The first alone (it makes the tables and the bootstrap admin in the database), the other two side by side.
    members.push(await member(env));
    const rest = await Promise.allSettled([member(env), member(env)]);
    for (const r of rest) if (r.status === 'fulfilled') members.push(r.value);
    for (const r of rest) if (r.status === 'rejected') throw r.reason;
    await settled(members, await adminOf((members[0] as Server).url), 3);
    t.match(members[0]?.output(), /store postgres at postgres:\/\/postgres@127\.0\.0\.1/);
    const [a, b, c] = members as [Server, Server, Server];
    await register(a.url, 'pg_alice');
    const token = await tokenOf(b.url, 'pg_alice');
    t.ok(token, 'a user registered through A logs in through B');
    const answers = await pool(3_000, 12, (i) => walk([a, b, c][i % 3]?.url as string, 'Bump', {}, token));
    const statuses = new Map<number, number>();
    for (const r of answers) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    t.same([...statuses], [[200, 3_000]], 'every request answered 200');
    const read = await walk(c.url, 'Read', {}, token);
    t.equal(read.body?.data?.reports?.[0], 3_000, 'exactly +3,000');
  });

  t.test('kill -9 of the svc process loses no acknowledged write', async (t) => {
    const env = { DOCDB_URI: await pgs.database() };
    const first = await member(env, 2);
    t.teardown(() => first.stop('SIGKILL'));
    await register(first.url, 'pg_kill');
    const token = await tokenOf(first.url, 'pg_kill');
    let acked = 0;
    let sent = 0;
    let running = true;
    const load = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (running) {
          sent++;
          if ((await walk(first.url, 'Bump', {}, token)).status === 200) acked++;
        }
      }),
    );
    while (acked < 300) await new Promise((r) => setImmediate(r));
    first.proc.kill('SIGKILL');
    running = false;
    await load;
    await first.exited;
    const second = await member(env, 2);
    t.teardown(() => second.stop('SIGKILL'));
    const count = (await walk(second.url, 'Read', {}, await tokenOf(second.url, 'pg_kill'))).body?.data?.reports?.[0] as number;
    t.ok(count >= acked, `every acknowledged increment is there (${count} ≥ ${acked})`);
    t.ok(count <= sent, `and nothing that was never sent (${count} ≤ ${sent})`);
  });

  t.test('PostgreSQL stopped and restarted mid-load: 503 STORE_UNAVAILABLE with Retry-After, /ready 503, then it serves again and nothing acknowledged is lost', async (t) => {
    const server = await startPostgres(t);
    const env = { DOCDB_URI: await server.database() };
    const svc = await member(env, 2);
    t.teardown(() => svc.stop('SIGKILL'));
    await register(svc.url, 'pg_outage');
    const token = await tokenOf(svc.url, 'pg_outage');
    let acked = 0;
    const failures: { status: number; code?: string; retryAfter: string | null }[] = [];
    let running = true;
    const load = Promise.all(
      Array.from({ length: 6 }, async () => {
        while (running) {
          const r = await walk(svc.url, 'Bump', {}, token);
          if (r.status === 200) acked++;
          else failures.push({ status: r.status, code: r.body?.error?.code, retryAfter: r.headers.get('retry-after') });
          if (r.status !== 200) await new Promise((r) => setTimeout(r, 20)); // a client honouring Retry-After, briefly
        }
      }),
    );
    while (acked < 100) await new Promise((r) => setImmediate(r));
    await server.stop();
    // Unready while the database is gone.
    let ready = 200;
    while (ready === 200) ready = (await fetch(`${svc.url}/ready`)).status;
    t.equal(ready, 503, '/ready answers 503 while the database is gone');
    const before = failures.length;
    while (failures.length < before + 5) await new Promise((r) => setTimeout(r, 10));
    await server.start();
    // It recovers by itself once the database answers again.
    const resumed = acked;
    while (acked < resumed + 100) await new Promise((r) => setTimeout(r, 10));
    running = false;
    await load;
    t.equal((await fetch(`${svc.url}/ready`)).status, 200, 'ready again');
    t.ok(failures.length > 0, `requests failed while the database was gone (${failures.length})`);
    const codes = new Set(failures.map((f) => `${f.status} ${f.code}`));
    t.same([...codes], ['503 STORE_UNAVAILABLE'], 'every failure is 503 STORE_UNAVAILABLE');
    t.ok(failures.every((f) => f.retryAfter !== null), 'each with Retry-After');
    const count = (await walk(svc.url, 'Read', {}, token)).body?.data?.reports?.[0] as number;
    t.ok(count >= acked, `every acknowledged increment is there (${count} ≥ ${acked})`);
    t.ok(count <= acked + failures.length, `and at most the unanswered ones besides (${count} ≤ ${acked} + ${failures.length})`);
  });

  t.test('WebSocket: a token in the first frame, of a user this thread has not met yet, is taken (the user is looked up first)', async (t) => {
    const svc = await member({ DOCDB_URI: await pgs.database() }, 2);
    t.teardown(() => svc.stop('SIGKILL'));
    await register(svc.url, 'pg_ws');
    const token = await tokenOf(svc.url, 'pg_ws');
    // Several connections: the uWS workers share the port, so some land on a thread that has not seen this user.
    for (let i = 0; i < 6; i++) {
      const ws = new WebSocket(`${svc.url.replace('http', 'ws')}/ws/Room`);
      await once(ws, 'open');
      ws.send(JSON.stringify({ token }));
      const [data] = (await once(ws, 'message')) as [Buffer];
      t.same(JSON.parse(data.toString()), { type: 'authenticated' }, `connection ${i + 1}`);
      ws.close();
    }
  });

  t.test('one process serves a database outside a cluster: a second one without KV_URL refuses to start, in one line', async (t) => {
    const env = { DOCDB_URI: await pgs.database() };
    const first = await member(env);
    t.teardown(() => first.stop('SIGKILL'));
    const second = await member(env).catch((e: Error) => e);
    t.ok(second instanceof Error, 'the second does not serve');
    t.match((second as Error).message, /another svc process is serving this database; set KV_URL/);
  });

  t.test('a database that is down at start: one line naming it (never the password), exit 1', async (t) => {
    const closed = pgs.port + 7;
    const failed = await startServer({ entry: CLUSTER_APP, env: { DOCDB_URI: `postgres://svc:hunter2secret@127.0.0.1:${closed}/svc` }, until: /cannot reach PostgreSQL/ }).catch((e: Error) => e);
    const text = failed instanceof Error ? failed.message : failed.output();
    if (!(failed instanceof Error)) t.equal(await failed.exited, 1);
    t.match(text, new RegExp(`cannot reach PostgreSQL at postgres://svc:\\*\\*\\*@127\\.0\\.0\\.1:${closed}/svc`));
    t.notMatch(text, /hunter2secret/);
  });
}

if (!skipPostgres) {
  t.test('users of the Python original in PostgreSQL are migrated once at start; their old passwords log in and are rehashed', async (t) => {
    const pgs = await startPostgres(t);
    const uri = await pgs.database();
    // The Python original's flat users table: bcrypt and SHA-256 hex hashes, two users whose names differ only in case.
    await pgs.query(
      `CREATE TABLE users (id text PRIMARY KEY, username text, email text, password_hash text, root_id text, role text, created_at text);
       INSERT INTO users VALUES
         ('u1', 'Legacy_Ann', 'ann@example.com', '$2b$04$feO9eb6hMnO33Hp5c7oNyOhdX07oaq5P9wmMNACHoRdpknLHP3R4m', '0123456789abcdef0123456789abcdef', 'admin', '2024-01-01T00:00:00Z'),
         ('u2', 'legacy_ben', NULL, '18d93a5ff5b94c527ab5df83f4881cdedaa8789a8231f57bbf7292c020d56e92', NULL, 'user', '2024-02-01T00:00:00Z'),
         ('u3', 'LEGACY_BEN', NULL, '18d93a5ff5b94c527ab5df83f4881cdedaa8789a8231f57bbf7292c020d56e92', NULL, 'user', '2024-03-01T00:00:00Z')`,
      [],
      uri,
    );
    const env = { DOCDB_URI: uri };
    const first = await startServer({ entry: CLUSTER_APP, env: { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-pg-legacy-')), ...env } });
    t.teardown(() => first.stop('SIGKILL'));
    t.match(first.output(), /migrated 3 users of the Python original/);
    const ann = await tokenOf(first.url, 'legacy_ann', 'legacy password 1');
    t.ok(ann, 'a bcrypt password logs in');
    t.ok(await tokenOf(first.url, 'ann@example.com', 'legacy password 1'), 'by email too');
    t.ok(await tokenOf(first.url, 'legacy_ben', 'legacy password 2'), 'a SHA-256 password logs in');
    const { rows } = await pgs.query("SELECT u.password_hash, u.status, u.root_id FROM users u JOIN identities i USING (user_id) WHERE i.value_normalized = 'legacy_ann'", [], uri);
    t.match(rows[0]?.password_hash, /^\$argon2id\$/, 'rehashed to argon2id at its first login');
    t.equal(rows[0]?.root_id, '0123456789abcdef0123456789abcdef', 'the old root id is kept');
    t.equal(JSON.parse(Buffer.from(ann.split('.')[1] as string, 'base64url').toString()).root_id, '0123456789abcdef0123456789abcdef', 'and named by the token');
    // The graph that user works on is that root: bump through the token, then read it stored under the old root.
    t.equal((await walk(first.url, 'Bump', {}, ann)).status, 200);
    const stored = await pgs.query("SELECT count(*)::int AS n FROM anchors WHERE root = '0123456789abcdef0123456789abcdef'", [], uri);
    t.ok((stored.rows[0]?.n as number) >= 2, 'the root and its counter are stored under the old root id');
    const dup = await pgs.query("SELECT status FROM users WHERE user_id NOT IN (SELECT user_id FROM identities) ", [], uri);
    t.same(dup.rows.map((r) => r.status), ['disabled'], 'the later of two names equal after normalisation is disabled');
    await first.stop('SIGTERM');
    const second = await startServer({ entry: CLUSTER_APP, env: { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-pg-legacy-')), ...env } });
    t.teardown(() => second.stop('SIGKILL'));
    t.notMatch(second.output(), /migrated/, 'once only');
    t.equal((await pgs.query('SELECT count(*)::int AS n FROM users', [], uri)).rows[0]?.n, 3 + 2, 'three migrated, plus the guest and the admin');
  });
}
