// Asks to other nodes that can no longer be answered fail at once: a link that dropped, a node gone for a known reason.
import t from 'tap';
import { ActorSystem, fromReceive, replyLater, SvcError } from 'svc/kernel';
import { MemoryNet } from '../helpers/memory-transport.ts';

/** Two systems; `b` runs an actor that answers `ping` and holds `hold` (its reply never comes, as if it were lost on the way). */
function two() {
  const net = new MemoryNet();
  const a = new ActorSystem({ transport: net.transport('p1/w1') });
  const b = new ActorSystem({ transport: net.transport('p2/w1') });
  b.spawn(
    fromReceive((msg: string) => (msg === 'hold' ? replyLater(new Promise(() => undefined)) : 'pong')),
    'echo',
  );
  const ref = a.refFromAddress({ node: 'p2/w1', path: '/user/echo' });
  return { net, a, b, ref, handlerOf: (node: string) => net.transports.get(node)?.handler };
}

t.test('a lost link fails the asks waiting on that node at once; the node stays up and answers the next ask', async (t) => {
  const { a, b, ref, handlerOf } = two();
  t.teardown(async () => {
    await a.shutdown();
    await b.shutdown();
  });
  t.equal(await ref.ask('ping', 30_000), 'pong');
  const held = ref.ask('hold', 30_000);
  const other = ref.ask('hold', 30_000);
  await new Promise((r) => setImmediate(r));
  const started = Date.now();
  handlerOf('p1/w1')?.onLinkLost?.('p2/w1');
  await t.rejects(held, { code: 'SVC_ERR_NODE_DOWN', status: 503, message: /link to p2\/w1 dropped before it replied/ });
  await t.rejects(other, { code: 'SVC_ERR_NODE_DOWN' });
  t.ok(Date.now() - started < 1000, 'at once, not at the 30 s deadline');
  t.ok(a.nodes().includes('p2/w1'), 'the node is still up');
  t.equal(await ref.ask('ping', 30_000), 'pong', 'and answers what is sent next');
});

t.test('a node gone for a reason the transport knows: its pending asks fail with that error', async (t) => {
  const { a, b, ref, handlerOf } = two();
  t.teardown(async () => {
    await a.shutdown();
    await b.shutdown();
  });
  const held = ref.ask('hold', 30_000);
  await new Promise((r) => setImmediate(r));
  handlerOf('p1/w1')?.onNodeDown('p2/w1', new SvcError('SVC_ERR_NOT_MEMBER', 'not a member any more', { status: 503 }));
  await t.rejects(held, { code: 'SVC_ERR_NOT_MEMBER', message: 'not a member any more' });
  // Without a reason: the kernel's own.
  const { a: a2, b: b2, ref: ref2, handlerOf: handlerOf2 } = two();
  t.teardown(async () => {
    await a2.shutdown();
    await b2.shutdown();
  });
  const held2 = ref2.ask('hold', 30_000);
  await new Promise((r) => setImmediate(r));
  handlerOf2('p1/w1')?.onNodeDown('p2/w1');
  await t.rejects(held2, { code: 'SVC_ERR_NODE_DOWN', message: /went down before replying/ });
});
