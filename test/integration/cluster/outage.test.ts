// A member paused past its lease, and Redis gone: every request is answered at once (503 with Retry-After, or served), never
// after an ask's 31 s deadline or a lease's 10 s wait; the member serves again once it has joined again.
import t, { type Test } from 'tap';
import { skipRedis, startRedis, tokenFor, adminToken, startCluster, walk, waitForMembers, type Server } from '../../kit/index.ts';
import { eventually, load, memberId, readAll, timed, timed as timedRequest, type Timed } from './helpers.ts';

// Several real processes per test: more than the default per-file time on a loaded 2-core machine.
t.setTimeout(360_000);

/** A request answered in the way the README promises during an outage: at once, served or 503 with Retry-After. */
function answered(t: Test, r: Timed, boundMs: number, what: string): void {
  const ms = r.doneAt - r.sentAt;
  if (![200, 503].includes(r.status) || ms > boundMs || (r.status === 503 && !r.retryAfter)) {
    t.fail(`${what}: ${r.status} ${r.code ?? ''} after ${ms} ms (want 200, or 503 with Retry-After, within ${boundMs} ms)`);
    return;
  }
  t.pass(`${what}: ${r.status}${r.code ? ` ${r.code}` : ''} in ${ms} ms`);
}

/** The 503s an outage answers, expected while it lasts (runtime/modules/http.ts): counted and said once, never an error line each. */
const OUTAGE_CODES = new Set(['SVC_ERR_NOT_MEMBER', 'SVC_ERR_NODE_DOWN', 'SVC_ERR_REDIS_UNREACHABLE', 'SVC_ERR_LEASE_TIMEOUT', 'SVC_ERR_FENCED', 'SVC_ERR_STORE_UNAVAILABLE']);

/** What a member printed through an outage: no error line (with a stack) per expected 503, no raw Redis client message, no repeats. */
function quietThrough(t: Test, name: string, output: string): void {
  const lines = output.split('\n');
  const json = lines.filter((l) => l.startsWith('{')).flatMap((l) => {
    try {
      return [JSON.parse(l) as { level: number; code?: string; msg: string }];
    } catch {
      return [];
    }
  });
  const errors = json.filter((j) => j.level >= 50 && j.code !== undefined && OUTAGE_CODES.has(j.code));
  t.same(errors.slice(0, 3).map((j) => `${j.code}: ${j.msg}`), [], `${name}: no expected 503 is logged as an error (${errors.length} were)`);
  const said = json.filter((j) => j.level === 40 && /^requests answered 503/.test(j.msg)).length;
  t.ok(said <= 4, `${name}: refusals are said when they start, not one line each (${said} lines)`);
  t.same(lines.filter((l) => /^svc: cluster lease:/.test(l)).slice(0, 3), [], `${name}: no raw message of the Redis client`);
  for (const once of [/^svc: Redis is unreachable/, /^svc: Redis is reachable again/, /could not be given back/, /^svc: the cluster lease of .* could not be taken/]) {
    const n = lines.filter((l) => once.test(l)).length;
    t.ok(n <= 2, `${name}: said once for the outage, not over and over (${n}× ${once})`);
  }
}

t.test('a member paused past its lease answers at once when it resumes, and serves every client again within 3 s', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 3, { redis, env: { SVC_CLUSTER_LEASE_MS: '1500' } });
  const [a, b, c] = cluster.members as [Server, Server, Server];
  const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => tokenFor(`pause-user-${i}`, { server: a })));
  // Every root has a counter at 1, its partition active on whichever member placement gives it.
  for (const [i, token] of tokens.entries()) t.equal((await walk([a, b, c][i % 3]!.url, 'Bump', {}, token)).status, 200);
  const key = `svc:{${cluster.name}}:member:${await memberId(a, c)}`;
  const check = redis.client();
  t.equal(await check.exists(key), 1, 'C is a member');
  // Writes go on through the others all along: they take C's roots over while it is stopped, and hand them back after.
  const writes = load(() => [a.url, b.url], tokens);

  c.proc.kill('SIGSTOP');
  // Sent while it is stopped, a read and a write per user: C picks them up when it resumes, with timers that have not fired yet.
  const heldRead = tokens.map((token) => timed(c.url, 'Read', token));
  const heldBump = tokens.map((token) => timed(c.url, 'Bump', token));
  // Past its lease: its membership key expires in Redis, and the others drop it (and their links to it).
  await eventually(async () => (await check.exists(key)) === 0, 20_000, "C's membership key expires");
  await Promise.all([waitForMembers(a, 2), waitForMembers(b, 2)]);
  const resumedAt = Date.now();
  c.proc.kill('SIGCONT');

  // Every client is served through C again within 3 s of the resume (asking from the resume on); no request in between waits.
  const servedAfter = Promise.all(
    tokens.map(async (token, i) => {
      for (;;) {
        const r = await timed(c.url, 'Read', token, 10_000);
        if (r.status !== 200 && r.status !== 503) {
          answered(t, r, 2000, `user ${i} through C after the resume`);
          return Infinity;
        }
        if (r.doneAt - r.sentAt > 2000) answered(t, r, 2000, `user ${i} through C after the resume`);
        if (r.status === 503 && !r.retryAfter) t.fail(`user ${i}: a 503 without Retry-After (${r.code})`);
        if (r.status === 200) return r.doneAt - resumedAt;
        if (Date.now() - resumedAt > 10_000) return Infinity;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }),
  );
  // Roots C held and roots the others hold alike: C answers what it holds at once, instead of an ask's 31 s deadline
  // or a partition's 5 s stop deadline.
  const held = [...(await Promise.all(heldRead)), ...(await Promise.all(heldBump))];
  for (const [i, r] of held.entries()) {
    answered(t, { ...r, sentAt: Math.max(r.sentAt, resumedAt) }, 3000, `user ${i % tokens.length}, ${i < tokens.length ? 'a read' : 'a write'} asked of C while it was stopped`);
  }
  const served = await servedAfter;
  const worst = Math.max(...served);
  t.comment(`every client served through C again ${Math.min(...served)}–${worst} ms after SIGCONT (lease 1,500 ms, writes through the others meanwhile)`);
  t.ok(worst <= 3000, `every client is served again within 3 s of the resume (${worst} ms)`);
  await c.waitFor(/joined the cluster again/);
  t.match(c.output(), /lost its lease/);
  quietThrough(t, 'C', c.output());
  await writes.stop();
  for (const r of writes.failures) {
    if (r.status !== 503 || !r.headers.get('retry-after')) t.fail(`a write through A or B: ${r.status} ${JSON.stringify(r.body)} (want 200, or 503 with Retry-After)`);
  }
  // Every member reads the same counters, and no acknowledged write is missing from them.
  const counts = await Promise.all([a, b, c].map((m) => readAll(m.url, tokens)));
  t.same(counts[1], counts[0], 'B reads what A reads');
  t.same(counts[2], counts[0], 'C reads what A reads');
  const acknowledged = tokens.map((_, i) => 1 + writes.acked[i]! + (held[tokens.length + i]!.status === 200 ? 1 : 0));
  t.same(
    counts[0]!.map((n, i) => n >= acknowledged[i]!),
    tokens.map(() => true),
    `no acknowledged write lost (counters ${counts[0]}, acknowledged ${acknowledged})`,
  );
});

t.test('Redis unreachable: requests are answered at once (503 once a lease lapsed), and served again when Redis is back', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 3, { redis, env: { SVC_CLUSTER_LEASE_MS: '1500', SVC_METRICS_ENABLED: 'true' } });
  const members = cluster.members as [Server, Server, Server];
  const [a] = members;
  // Every answer of an outage's 503 this test gets, by member: each member counts as many (requests_refused_total).
  const refused = new Map<string, number>(members.map((m) => [m.url, 0]));
  const timed = async (url: string, walker: string, token: string, abortMs?: number): Promise<Timed> => {
    const r = await timedRequest(url, walker, token, abortMs);
    if (r.status === 503 && r.code !== undefined && OUTAGE_CODES.has(r.code)) refused.set(url, (refused.get(url) ?? 0) + 1);
    return r;
  };
  // Warm roots (their partitions active) and cold ones (never asked: a request needs a partition, and so a lease, for them).
  const warm = await Promise.all(Array.from({ length: 6 }, (_, i) => tokenFor(`warm-user-${i}`, { server: a })));
  const cold = await Promise.all(Array.from({ length: 24 }, (_, i) => tokenFor(`cold-user-${i}`, { server: a })));
  for (const [i, token] of warm.entries()) t.equal((await walk(members[i % 3]!.url, 'Bump', {}, token)).status, 200);

  await redis.stop();
  const stoppedAt = Date.now();
  // Round after round over every member, warm and cold roots: each answered within 2 s (no 10 s wait for a lease) —
  // served while the member's lease holds, then 503 — until a whole round is refused (every member's lease lapsed).
  let next = 0;
  let rounds = 0;
  let refusedRound = false;
  const codes = new Set<string>();
  while (!refusedRound && Date.now() - stoppedAt < 20_000) {
    rounds++;
    const round = await Promise.all(
      members.flatMap((m, mi) => [
        timed(m.url, 'Read', warm[(rounds + mi) % warm.length]!, 10_000),
        timed(m.url, 'Read', cold[next++ % cold.length]!, 10_000),
      ]),
    );
    for (const r of round) {
      if (r.status !== 200 && r.status !== 503) answered(t, r, 2000, `round ${rounds}`);
      else if (r.doneAt - r.sentAt > 2000 || (r.status === 503 && !r.retryAfter)) answered(t, r, 2000, `round ${rounds}`);
      if (r.code) codes.add(r.code);
    }
    refusedRound = round.every((r) => r.status === 503);
    if (round.some((r) => r.status === 0 || r.doneAt - r.sentAt > 2000)) break;
  }
  t.ok(refusedRound, `every member refuses at once once its lease lapsed (${rounds} rounds, ${Date.now() - stoppedAt} ms after Redis stopped)`);
  t.same([...codes].filter((c) => c !== 'SVC_ERR_NOT_MEMBER'), [], `503s say the member is not serving (${[...codes]})`);
  for (const m of members) t.equal((await fetch(`${m.url}/ready`)).status, 503, 'not ready while Redis is unreachable');

  // Redis back on the same port (empty, as after a crash): each member joins again and serves warm and cold roots.
  await redis.restart();
  const restartedAt = Date.now();
  const back = await Promise.all(
    members.flatMap((m) =>
      [warm[0]!, cold[0]!, cold[cold.length - 1]!].map(async (token) => {
        for (;;) {
          const r = await timed(m.url, 'Read', token, 10_000);
          if (r.status !== 200 && (r.status !== 503 || r.doneAt - r.sentAt > 2000 || !r.retryAfter)) {
            answered(t, r, 2000, 'while Redis comes back');
            return Infinity;
          }
          if (r.status === 200) return r.doneAt - restartedAt;
          if (Date.now() - restartedAt > 30_000) return Infinity;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }),
    ),
  );
  t.comment(`served again ${Math.min(...back)}–${Math.max(...back)} ms after Redis restarted (reconnect backoff up to 2 s, then a rejoin)`);
  t.ok(back.every(Number.isFinite), 'every member serves again once Redis is back');
  for (const m of members) t.equal((await fetch(`${m.url}/ready`)).status, 200, 'ready again');
  // Said once, counted always: the refusals are in each member's metrics, not one log line each.
  const token = await adminToken(a);
  for (const [i, m] of members.entries()) {
    quietThrough(t, `member ${i}`, m.output());
    const text = await (await fetch(`${m.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const counted = text
      .split('\n')
      .filter((l) => l.startsWith('svc_requests_refused_total{'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    t.equal(counted, refused.get(m.url), `member ${i} counted every refusal it answered (svc_requests_refused_total)`);
  }
});
