import t, { type Test } from 'tap';
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { Membership, type MemberRecord, type MemberView } from '../../../cluster/membership.ts';
import { openRedis, whenReady } from '../../../stores/redis/connection.ts';
import { skipRedis, startRedis, type RedisServer } from '../../kit/index.ts';

/** One member as a process would run it: its own two connections (svc's options), everything it hears recorded. */
interface Probe {
  name: string;
  m: Membership;
  address: string;
  /** Every onChange view, with the time it came. */
  views: { at: number; members: MemberView[] }[];
  lost: number;
  redis: boolean[];
  /** Incarnations so far (ids are `<name>-<n>`). */
  incarnation: number;
}

/** Everything that happens to any probe of one test: `until` re-checks its condition on each. */
class Bus extends EventEmitter {
  /** Resolves with `check()`'s first truthy answer, checked now and after each event; fails after `ms`. */
  until<T>(check: () => T | undefined | false, what: string, ms = 5000): Promise<T> {
    return new Promise((resolve, reject) => {
      const test = (): void => {
        const v = check();
        if (!v) return;
        clearTimeout(timer);
        this.off('event', test);
        resolve(v);
      };
      const timer = setTimeout(() => {
        this.off('event', test);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.on('event', test);
      test();
    });
  }
}

/** Poll `check` every 10 ms (for what no event tells, e.g. validUntil); fails after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const record = (name: string, n: number, port: number): MemberRecord => ({
  id: `${name}-${n}`,
  address: `127.0.0.1:${port}`,
  workers: [`${name}-${n}/w1`],
  app: 'app-1',
  pid: process.pid,
  version: '0.1.0',
  startedAt: Date.now(),
});

let nextPort = 7001;

async function member(t: Test, server: RedisServer, bus: Bus, name: string, options: { leaseMs: number; heartbeatMs?: number; cluster?: string; rejoinOnLost?: boolean }): Promise<Probe> {
  const redis = openRedis(server.url, { name: `test-${name}` });
  const subscriber = openRedis(server.url, { name: `test-${name}-sub` });
  t.teardown(() => {
    redis.disconnect();
    subscriber.disconnect();
  });
  await whenReady(redis, 5000);
  await whenReady(subscriber, 5000);
  const port = nextPort++;
  const probe = { name, address: `127.0.0.1:${port}`, views: [], lost: 0, redis: [], incarnation: 1 } as unknown as Probe;
  probe.m = await Membership.join({
    redis,
    subscriber,
    cluster: options.cluster ?? 'test',
    leaseMs: options.leaseMs,
    ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    record: record(name, 1, port),
    onChange: (members) => {
      probe.views.push({ at: Date.now(), members });
      bus.emit('event');
    },
    onLost: () => {
      probe.lost++;
      if (options.rejoinOnLost) {
        probe.m.rejoin(record(name, ++probe.incarnation, port)).then(
          () => bus.emit('event'),
          (e: unknown) => bus.emit('error', e),
        );
      }
      bus.emit('event');
    },
    onRedis: (up) => {
      probe.redis.push(up);
      bus.emit('event');
    },
  });
  t.teardown(() => probe.m.close());
  return probe;
}

const ids = (p: Probe): string[] => p.m.members().map((v) => v.id);
const sees = (p: Probe, ...want: string[]): boolean => want.every((id) => ids(p).includes(id));
const lastHeartbeatInRedis = async (r: Redis, cluster: string, id: string): Promise<number> =>
  (JSON.parse((await r.get(`svc:{${cluster}}:member:${id}`)) ?? 'null') as MemberView).lastHeartbeat;

t.test('three members see each other; a crashed one is dropped within leaseMs + heartbeatMs of its last renewal', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  const leaseMs = 600;
  const heartbeatMs = 120;
  const [a, b, c] = [await member(t, server, bus, 'a', { leaseMs }), await member(t, server, bus, 'b', { leaseMs }), await member(t, server, bus, 'c', { leaseMs })] as [Probe, Probe, Probe];
  await bus.until(() => [a, b, c].every((p) => sees(p, 'a-1', 'b-1', 'c-1')), 'all three to see each other');
  t.same(ids(a), ['a-1', 'b-1', 'c-1'], 'ordered by id');
  const cView = a.m.members().find((v) => v.id === 'c-1');
  t.match(cView, { address: c.address, workers: ['c-1/w1'], app: 'app-1', pid: process.pid, version: '0.1.0' });
  t.ok(a.m.joined && a.m.validUntil() > Date.now(), 'joined, with a valid lease');

  // Renewals change no record: no onChange while nothing happens.
  const before = a.views.length;
  const v0 = a.m.validUntil();
  await eventually(() => a.m.validUntil() > v0 + heartbeatMs, 'two renewals');
  t.equal(a.views.length, before, 'a renewal is not a change');

  c.m.close();
  await c.m.renew(); // whatever was in flight has landed: this is c's last renewal
  const r = server.client();
  const last = await lastHeartbeatInRedis(r, 'test', 'c-1');
  const dropped = await Promise.all(
    [a, b].map((p) => bus.until(() => !sees(p, 'c-1') && Date.now(), `${p.name} to drop c`)),
  );
  for (const at of dropped) {
    t.ok(at - last >= leaseMs - 5, `not before its lease ran out (${at - last} ms)`);
    // The slack is for a loaded machine's late timers; a lease too many would be 600 ms over.
    t.ok(at - last <= leaseMs + heartbeatMs + 250, `within leaseMs + heartbeatMs (+ slack): ${at - last} ms`);
  }
  t.same(ids(a), ['a-1', 'b-1']);
  t.same(ids(b), ['a-1', 'b-1']);
  // Pruned by whoever noticed first, on its own connection: not ordered with ours.
  await eventually(async () => !(await r.sismember('svc:{test}:members', 'c-1')), 'the dead id to leave the index');
  t.same(await r.smembers('svc:{test}:members').then((s) => s.sort()), ['a-1', 'b-1'], 'the dead id left the index');
  t.equal(a.lost + b.lost, 0);
});

t.test('leave: the others drop it at once (channel), even on a fresh connection; setState is seen at once', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  // Long periods: a reaction well inside a heartbeat is the channel's doing, not polling's.
  const opts = { leaseMs: 6000, heartbeatMs: 3000 };
  const [a, b, c] = [await member(t, server, bus, 'a', opts), await member(t, server, bus, 'b', opts), await member(t, server, bus, 'c', opts)] as [Probe, Probe, Probe];
  await bus.until(() => [a, b, c].every((p) => sees(p, 'a-1', 'b-1', 'c-1')), 'all three to see each other');

  let at = Date.now();
  await b.m.setState('leaving');
  await bus.until(() => [a, b, c].every((p) => p.m.members().find((v) => v.id === 'b-1')?.state === 'leaving'), 'the state to be seen');
  t.ok(Date.now() - at < 500, `state seen in ${Date.now() - at} ms`);
  t.match(a.views.at(-1)?.members.find((v) => v.id === 'b-1'), { state: 'leaving' }, 'through onChange');

  at = Date.now();
  await b.m.leave();
  await bus.until(() => [a, c].every((p) => !sees(p, 'b-1')), 'the others to drop b');
  t.ok(Date.now() - at < 500, `dropped in ${Date.now() - at} ms, though nobody has been connected for leaseMs yet`);
  t.notOk(b.m.joined);
  t.equal(b.m.validUntil(), 0);
  const r = server.client();
  t.equal(await r.exists('svc:{test}:member:b-1'), 0, 'its key is gone');
  t.notOk(await r.sismember('svc:{test}:members', 'b-1'), 'and its id from the index');
  await t.rejects(b.m.rejoin(record('b', 1, 7999)), { code: 'SVC_ERR_CLUSTER' }, 'an id is never reused');
  await b.m.rejoin(record('b', 2, 7999));
  await bus.until(() => [a, b, c].every((p) => sees(p, 'a-1', 'b-2', 'c-1')), 'b to be back under a new id');
});

t.test('validUntil advances with renewals and stops advancing while Redis is down; nobody is declared down meanwhile', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  const leaseMs = 600;
  const heartbeatMs = 120;
  const [a, b] = [await member(t, server, bus, 'a', { leaseMs }), await member(t, server, bus, 'b', { leaseMs })] as [Probe, Probe];
  await bus.until(() => sees(a, 'a-1', 'b-1') && sees(b, 'a-1', 'b-1'), 'both to see each other');
  const joinedAt = Date.now();
  const v0 = a.m.validUntil();
  t.ok(v0 > joinedAt && v0 <= joinedAt + leaseMs, 'valid for less than a lease');
  await eventually(() => a.m.validUntil() > v0, 'a renewal');
  t.ok(a.m.validUntil() - Date.now() <= leaseMs - leaseMs / 10, 'lease minus the margin, at most');

  await server.stop();
  await bus.until(() => a.redis.includes(false) && b.redis.includes(false), 'both to report Redis down');
  const stuck = a.m.validUntil();
  const views = a.views.length;
  // Time is the subject here: several heartbeats pass, none may extend the lease.
  await new Promise((r) => setTimeout(r, leaseMs + 2 * heartbeatMs));
  t.equal(a.m.validUntil(), stuck, 'no renewal without Redis');
  t.ok(a.m.validUntil() < Date.now(), 'so the lease is known to have run out');
  t.same(ids(a), ['a-1', 'b-1'], 'the last view is kept: nobody declared down');
  t.equal(a.views.length, views, 'and no change reported');
  t.same(a.redis, [false], 'reported once');
});

t.test('Redis restarts empty: every member loses its key, rejoins, and nobody is declared down in between', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  bus.on('error', (e: unknown) => t.fail(`rejoin failed: ${String(e)}`));
  // Long enough that every member reconnects and rejoins well within one lease.
  const opts = { leaseMs: 2000, heartbeatMs: 200, rejoinOnLost: true };
  const probes = [await member(t, server, bus, 'a', opts), await member(t, server, bus, 'b', opts), await member(t, server, bus, 'c', opts)];
  await bus.until(() => probes.every((p) => sees(p, 'a-1', 'b-1', 'c-1')), 'all three to see each other');
  const from = probes.map((p) => p.views.length);

  await server.restart();
  await bus.until(
    () => probes.every((p) => p.lost === 1 && p.m.joined && sees(p, 'a-2', 'b-2', 'c-2') && p.m.members().length === 3),
    'everyone to rejoin and see the others again',
  );
  probes.forEach((p, i) => {
    t.equal(p.redis[0], false, `${p.name}: Redis down`);
    t.equal(p.redis.at(-1), true, `${p.name}: then up`);
    const others = probes.filter((o) => o !== p).map((o) => o.address);
    for (const { members } of p.views.slice(from[i])) {
      const addresses = members.map((v) => v.address);
      t.ok(
        others.every((o) => addresses.includes(o)),
        `${p.name} never lacked another member: ${members.map((v) => v.id).join(',')}`,
      );
    }
    t.ok(p.m.validUntil() > Date.now(), `${p.name} holds a lease again`);
  });
  t.same(await server.client().smembers('svc:{test}:members').then((s) => s.sort()), ['a-2', 'b-2', 'c-2']);
});

t.test('a paused member finds its lease lost, and rejoins under a new id', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  const leaseMs = 600;
  const [a, b, c] = [await member(t, server, bus, 'a', { leaseMs }), await member(t, server, bus, 'b', { leaseMs }), await member(t, server, bus, 'c', { leaseMs })] as [Probe, Probe, Probe];
  await bus.until(() => [a, b, c].every((p) => sees(p, 'a-1', 'b-1', 'c-1')), 'all three to see each other');

  // A pause: c's timers stop (close keeps it "joined" in its own eyes), the others give up on it.
  c.m.close();
  await bus.until(() => !sees(a, 'c-1') && !sees(b, 'c-1'), 'the others to drop c');
  t.ok(c.m.joined, 'c does not know yet');
  // c wakes up: its next renewal finds the key gone.
  t.equal(await c.m.renew(), false, 'the renewal fails');
  t.equal(c.lost, 1, 'onLost once');
  t.notOk(c.m.joined);
  t.equal(c.m.validUntil(), 0);
  t.equal(await c.m.renew(), false, 'no renewal until rejoined');
  t.equal(c.lost, 1, 'still once');
  await t.rejects(c.m.rejoin(record('c', 1, 7998)), { code: 'SVC_ERR_CLUSTER' }, 'not under the old id');
  await c.m.rejoin(record('c', 2, 7998));
  t.ok(c.m.joined && c.m.validUntil() > Date.now());
  await bus.until(() => [a, b, c].every((p) => sees(p, 'a-1', 'b-1', 'c-2') && p.m.members().length === 3), 'c to be back under a new id');
  await t.rejects(c.m.rejoin(record('c', 3, 7998)), { code: 'SVC_ERR_CLUSTER' }, 'no rejoin while joined');
});

t.test('a key replaced under us is lost; leave does not delete a key that is not ours', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  const a = await member(t, server, bus, 'a', { leaseMs: 600 });
  const r = server.client();
  const foreign = JSON.stringify({ ...record('x', 1, 1), id: 'intruder', lastHeartbeat: 0 });
  await r.set('svc:{test}:member:a-1', foreign, 'PX', 10_000);
  await bus.until(() => a.lost === 1, 'a to find its key replaced');
  t.equal(a.m.validUntil(), 0);
  await a.m.leave();
  t.equal(await r.get('svc:{test}:member:a-1'), foreign, 'the foreign record is untouched');
});

t.test('join: rejects when Redis is unreachable, or when the id is taken', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const bus = new Bus();
  await member(t, server, bus, 'a', { leaseMs: 600 });
  const options = { cluster: 'test', leaseMs: 600, onChange: () => undefined };
  const redis = openRedis(server.url, { name: 'test-dup' });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5000);
  await t.rejects(Membership.join({ ...options, redis, record: record('a', 1, 7997) }), { code: 'SVC_ERR_CLUSTER' }, 'a live member has the id');
  await t.rejects(Membership.join({ ...options, redis, heartbeatMs: 600, record: record('z', 1, 7997) }), { code: 'SVC_ERR_CLUSTER' }, 'heartbeatMs < leaseMs');

  const dead = openRedis('redis://127.0.0.1:1', { name: 'test-dead' });
  dead.on('error', () => undefined);
  t.teardown(() => dead.disconnect());
  await t.rejects(Membership.join({ ...options, redis: dead, record: record('z', 1, 7997) }), 'Redis unreachable');
});
