import t, { type Test } from 'tap';
import { ActorSystem, remoteLeases, serveActivationLeases, type ActorLogic, type Placement } from 'svc/kernel';
import { MemoryNet } from '../helpers/memory-transport.ts';

/** A main thread keeping the leases and two worker threads, over one in-memory net. */
function threeNodes(t: Test) {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const a = new ActorSystem({ transport: net.transport('p/w1') });
  const b = new ActorSystem({ transport: net.transport('p/w2') });
  t.teardown(async () => {
    for (const s of [a, b, main]) await s.shutdown();
  });
  serveActivationLeases(main);
  return { net, a, b };
}

/** A placement whose answer the test moves. */
function movable(owner: { now: string }): Placement {
  return { ownerOf: () => owner.now, join() {}, leave() {}, members: () => [owner.now] };
}

t.test('a key moved to another node starts there only once the old activation has stopped (leases on the main thread)', async (t) => {
  const { a, b } = threeNodes(t);
  const events: string[] = [];
  let release!: () => void;
  const slowStop = new Promise<void>((r) => (release = r));
  const owner = { now: 'p/w1' };
  for (const system of [a, b]) {
    system.defineKind<string, string>('thing', {
      placement: movable(owner),
      lease: remoteLeases(system, 'p/main'),
      props: () => ({
        logic: (): ActorLogic<string, string> => ({
          preStart: () => void events.push(`start on ${system.nodeId}`),
          receive: (m) => `${m} on ${system.nodeId}`,
          postStop: async () => {
            events.push(`stopping on ${system.nodeId}`);
            if (system === a) await slowStop;
            events.push(`stopped on ${system.nodeId}`);
          },
        }),
      }),
    });
  }
  t.equal(await a.activate<string, string>('thing', 'k').ask('one'), 'one on p/w1');
  // The key moves to w2 while w1's activation is still stopping.
  owner.now = 'p/w2';
  const stopping = a.stop(a.activation('thing', 'k') as never);
  const answer = b.activate<string, string>('thing', 'k').ask('two', 5000);
  await new Promise((r) => setTimeout(r, 50));
  t.same(events, ['start on p/w1', 'stopping on p/w1'], 'w2 waits: w1 still holds the key');
  release();
  await stopping;
  t.equal(await answer, 'two on p/w2');
  t.same(events, ['start on p/w1', 'stopping on p/w1', 'stopped on p/w1', 'start on p/w2']);
});

t.test('a node that goes down gives its leases back', async (t) => {
  const { net, a, b } = threeNodes(t);
  const owner = { now: 'p/w1' };
  for (const system of [a, b]) {
    system.defineKind<string, string>('thing', {
      placement: movable(owner),
      lease: remoteLeases(system, 'p/main'),
      props: () => ({ logic: (): ActorLogic<string, string> => ({ receive: (m) => `${m} on ${system.nodeId}` }) }),
    });
  }
  await a.activate('thing', 'k').ask('x');
  owner.now = 'p/w2';
  const answer = b.activate<string, string>('thing', 'k').ask('y', 5000);
  net.markDown('p/w1'); // w1 dies holding the lease
  t.equal(await answer, 'y on p/w2');
});

t.test('a backing lease (a cluster): taken before the first holder of the process, given back once none holds or waits', async (t) => {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('q/main') });
  const a = new ActorSystem({ transport: net.transport('q/w1') });
  t.teardown(async () => {
    for (const s of [a, main]) await s.shutdown();
  });
  const calls: string[] = [];
  let grant!: () => void;
  const backing = {
    acquire: (kind: string, key: string) => {
      calls.push(`acquire ${kind} ${key}`);
      return new Promise<void>((resolve) => (grant = resolve));
    },
    release: (kind: string, key: string) => void calls.push(`release ${kind} ${key}`),
  };
  serveActivationLeases(main, { backing });
  const lease = remoteLeases(a, 'q/main');
  let held = false;
  const first = lease.acquire('partition', 'r1').then(() => (held = true));
  while (calls.length === 0) await new Promise((r) => setTimeout(r, 1));
  t.same(calls, ['acquire partition r1'], 'the cluster is asked first');
  await new Promise((r) => setTimeout(r, 20));
  t.equal(held, false, 'not held before the cluster grants it');
  grant();
  await first;
  // A second activation on the same node while the first is held: no second cluster acquire.
  await lease.acquire('partition', 'r1');
  t.same(calls, ['acquire partition r1']);
  lease.release('partition', 'r1');
  lease.release('partition', 'r1');
  while (calls.length < 2) await new Promise((r) => setTimeout(r, 1));
  t.same(calls, ['acquire partition r1', 'release partition r1'], 'given back to the cluster once nobody here holds it');
});

/** A worker's leases served by a main thread whose backing lease fails (with `message`) while `fail` is set; the reports of `onError`. */
function failingBacking(t: Test, message: string): { lease: ReturnType<typeof remoteLeases>; errors: string[]; fail: boolean } {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('r/main') });
  const a = new ActorSystem({ transport: net.transport('r/w1') });
  t.teardown(async () => {
    for (const s of [a, main]) await s.shutdown();
  });
  const state = { lease: remoteLeases(a, 'r/main'), errors: [] as string[], fail: true };
  serveActivationLeases(main, {
    backing: { acquire: () => (state.fail ? Promise.reject(new Error(message)) : Promise.resolve()), release: () => undefined },
    onError: (e, id) => state.errors.push(`${id}: ${(e as Error).message}`),
  });
  return state;
}

t.test('a backing lease that fails refuses the acquire and frees the key here', async (t) => {
  const backing = failingBacking(t, 'lease timeout');
  const { lease, errors } = backing;
  await t.rejects(lease.acquire('partition', 'k'), /lease timeout/);
  t.same(errors, ['partition/k: lease timeout']);
  backing.fail = false;
  await t.resolves(lease.acquire('partition', 'k'), 'the next try takes it');
});

t.test('a backing lease that keeps failing is reported once, not once per key, until an acquire succeeds again', async (t) => {
  const backing = failingBacking(t, 'Redis is unreachable');
  const { lease, errors } = backing;
  for (const key of ['k1', 'k2', 'k3']) await t.rejects(lease.acquire('partition', key), /unreachable/, `${key} is refused`);
  t.same(errors, ['partition/k1: Redis is unreachable'], 'one report for the outage');
  backing.fail = false;
  await lease.acquire('partition', 'k4');
  backing.fail = true;
  await t.rejects(lease.acquire('partition', 'k5'));
  t.same(errors, ['partition/k1: Redis is unreachable', 'partition/k5: Redis is unreachable'], 'the next outage is reported again');
});
