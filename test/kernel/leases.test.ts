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
