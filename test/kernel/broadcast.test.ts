import t from 'tap';
import { ActorBroadcast, ActorSystem, CompositeTransport, type Frame, type TransportHandler } from 'svc/kernel';
import { MemoryNet } from '../helpers/memory-transport.ts';

function cluster(ids: string[]) {
  const net = new MemoryNet();
  const systems = ids.map((id) => new ActorSystem({ transport: net.transport(id) }));
  return { net, systems };
}

t.test('publish reaches the subscribers of every member, this one included; gather collects one answer per member', async (t) => {
  const { net, systems } = cluster(['p/main', 'p/w1', 'p/w2', 'p/w3']);
  t.teardown(async () => {
    for (const s of systems) await s.shutdown();
  });
  // The main thread is not a member (no broadcast actor there).
  const members = systems.slice(1).map((s) => new ActorBroadcast(s, { accepts: (n) => !n.endsWith('/main') }));
  const got: string[] = [];
  members.forEach((b, i) => b.subscribe('revoke', (msg, from) => void got.push(`w${i + 1} got ${JSON.stringify(msg)} from ${from}`)));
  members[1]?.subscribe('stats', (msg) => ({ w: 2, gc: (msg as { gc: boolean }).gc }));
  members[0]?.subscribe('stats', async () => ({ w: 1 }));
  members[2]?.subscribe('stats', () => ({ w: 3 }));
  (members[0] as ActorBroadcast).publish('revoke', { user: 'u1' });
  await new Promise((r) => setTimeout(r, 10));
  t.same(got.sort(), ['w1 got {"user":"u1"} from p/w1', 'w2 got {"user":"u1"} from p/w1', 'w3 got {"user":"u1"} from p/w1']);
  const stats = await (members[1] as ActorBroadcast).gather<{ w: number }>('stats', { gc: true }, 1000);
  t.same(stats[0], { w: 2, gc: true }, "this node's answer first");
  t.same(stats.map((s) => s.w).sort(), [1, 2, 3]);
  // A member that goes down answers nothing; the gather still resolves.
  net.markDown('p/w3');
  t.same((await (members[0] as ActorBroadcast).gather<{ w: number }>('stats', {}, 1000)).map((s) => s.w).sort(), [1, 2]);
  t.equal(net.transports.get('p/main')?.sent, 0, 'nothing was sent to the main thread');
});

t.test('unsubscribe; a throwing subscriber does not stop the others', async (t) => {
  const { systems } = cluster(['a', 'b']);
  t.teardown(async () => {
    for (const s of systems) await s.shutdown();
  });
  const [a, b] = systems.map((s) => new ActorBroadcast(s)) as [ActorBroadcast, ActorBroadcast];
  const got: string[] = [];
  const errors = t.capture(console, 'error');
  b.subscribe('x', () => {
    throw new Error('bad subscriber');
  });
  const off = b.subscribe('x', (m) => void got.push(`b ${m}`));
  a.publish('x', 1);
  await new Promise((r) => setTimeout(r, 10));
  off();
  a.publish('x', 2);
  await new Promise((r) => setTimeout(r, 10));
  t.same(got, ['b 1']);
  t.equal(errors().length, 2, 'the throwing subscriber was reported each time');
});

t.test('a composite transport routes frames by node to the transport that reaches it', async (t) => {
  const sent: string[] = [];
  const part = (nodes: string[], tag: string) => ({
    nodeId: 'p1/w1',
    nodes: () => nodes,
    resolve: (n: string) => (n.includes('/') ? n : `p1/${n}`),
    send: (node: string, _f: Frame) => (sent.push(`${tag}->${node}`), true),
    attach: (_h: TransportHandler) => undefined,
    close: async () => undefined,
  });
  const threads = part(['p1/main', 'p1/w1', 'p1/w2'], 'threads');
  const pods = part(['p1/w1', 'p2/w1', 'p2/w2'], 'pods');
  const composite = new CompositeTransport('p1/w1', [threads, pods]);
  t.same([...composite.nodes()].sort(), ['p1/main', 'p1/w1', 'p1/w2', 'p2/w1', 'p2/w2']);
  t.ok(composite.send('p1/w2', { t: 1, to: '/user/x', msg: 1 }));
  t.ok(composite.send('p2/w2', { t: 1, to: '/user/x', msg: 1 }));
  t.notOk(composite.send('p9/w1', { t: 1, to: '/user/x', msg: 1 }), 'no part reaches it');
  t.same(sent, ['threads->p1/w2', 'pods->p2/w2']);
  t.equal(composite.resolve('w2'), 'p1/w2');
  t.throws(() => new CompositeTransport('p1/w1', [threads, { ...pods, nodeId: 'p2/w1' }]));
});
