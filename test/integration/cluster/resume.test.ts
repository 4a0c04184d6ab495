// A member paused past its lease never runs, once it resumes, a request the cluster already answered for it: the
// others fail what they forwarded to it (503 SVC_ERR_NODE_DOWN) only once its lease lapsed, and from then on it runs
// nothing it received before it joined again. So every counter ends exactly at what was acknowledged: a client that
// retries a 503 never bumps twice.
import t from 'tap';
import { skipRedis, startRedis, tokenFor, startCluster, walk, waitForMembers, type Server } from '../../kit/index.ts';
import { eventually, memberId, timed } from './helpers.ts';

// Several real processes: more than the default per-file time on a loaded 2-core machine.
t.setTimeout(360_000);

t.test('a resumed member runs none of the requests the others answered 503 while it was stopped', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 3, { redis, env: { SVC_CLUSTER_LEASE_MS: '1500' } });
  const [a, b, c] = cluster.members as [Server, Server, Server];
  // Enough users that C surely owns some roots (each is placed on one of three members).
  const tokens = await Promise.all(Array.from({ length: 18 }, (_, i) => tokenFor(`resume-user-${i}`, { server: a })));
  // Every counter at 3: bumped once through each member (each root's partition active on its owner).
  for (const token of tokens) for (const m of [a, b, c]) t.equal((await walk(m.url, 'Bump', {}, token)).status, 200);
  const key = `svc:{${cluster.name}}:member:${await memberId(a, c)}`;
  const check = redis.client();

  c.proc.kill('SIGSTOP');
  // One bump per user through B: those whose root C holds wait in C's socket, until B fails them once C's lease lapsed.
  const viaB = await Promise.all(tokens.map((token) => timed(b.url, 'Bump', token, 30_000)));
  const failed = viaB.filter((r) => r.status === 503);
  t.ok(failed.length > 0, `the bumps of roots C holds failed while it was stopped (${failed.length} of ${tokens.length})`);
  for (const [i, r] of viaB.entries()) {
    if (r.status !== 200 && !(r.status === 503 && r.retryAfter)) t.fail(`user ${i} through B: ${r.status} ${r.code ?? ''} (want 200, or 503 with Retry-After)`);
  }
  t.same([...new Set(failed.map((r) => r.code))], ['SVC_ERR_NODE_DOWN'], 'failed as sent to a member that is down');
  // Its lease has lapsed in Redis, and both others dropped it.
  await eventually(async () => (await check.exists(key)) === 0, 20_000, "C's membership key expires");
  await Promise.all([waitForMembers(a, 2), waitForMembers(b, 2)]);
  // Read through A meanwhile: C's roots start on A and B (they claim them), holding exactly what was acknowledged.
  const expected = viaB.map((r) => 3 + (r.status === 200 ? 1 : 0));
  const whileStopped = await Promise.all(tokens.map(async (token) => (await timed(a.url, 'Read', token)).value));
  t.same(whileStopped, expected, 'the counters through A while C is stopped');

  c.proc.kill('SIGCONT');
  await c.waitFor(/joined the cluster again/);
  // Settled: every user is served through C again (whatever C read when it resumed was run or refused long before).
  await Promise.all(tokens.map((token) => eventually(async () => (await timed(c.url, 'Read', token)).status === 200, 20_000, 'served through C again')));

  // Exactly what was acknowledged: 3, plus B's bump if it answered 200.
  for (const [name, server] of [['A', a], ['B', b], ['C', c]] as const) {
    const counts = await Promise.all(tokens.map(async (token) => (await timed(server.url, 'Read', token)).value));
    t.same(counts, expected, `the counters through ${name} hold exactly the acknowledged bumps (no request answered 503 ran later)`);
  }
});
