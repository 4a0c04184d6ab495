import t from 'tap';
import { ActorSystem, fnv1a, RendezvousPlacement, workerPlacement, threadOf, processOf, type Placement, type ActorLogic } from 'svc/kernel';
import { MemoryNet } from '../helpers/memory-transport.ts';

const keys = Array.from({ length: 4000 }, (_, i) => `root-${i}-${(i * 2654435761) >>> 0}`);

t.test('rendezvous: an even spread; a member leaving moves only its own keys, and they come back when it returns', async (t) => {
  const members = Array.from({ length: 8 }, (_, i) => `p1/w${i + 1}`);
  const placement = new RendezvousPlacement({ members });
  const before = new Map(keys.map((k) => [k, placement.ownerOf('partition', k)]));
  const counts = new Map<string, number>();
  for (const owner of before.values()) counts.set(owner as string, (counts.get(owner as string) ?? 0) + 1);
  for (const m of members) t.ok((counts.get(m) ?? 0) > 350 && (counts.get(m) ?? 0) < 650, `${m} holds ${counts.get(m)} of 4000`);
  placement.leave('p1/w3');
  let moved = 0;
  for (const k of keys) {
    const now = placement.ownerOf('partition', k);
    if (before.get(k) === 'p1/w3') t.not(now, 'p1/w3');
    else if (now !== before.get(k)) moved++;
  }
  t.equal(moved, 0, 'no key of a live member moved');
  // What this replaces, for scale: `hash % members` moved most keys when one of 8 left (the figure).
  const modulo = (k: string, names: string[]) => names[fnv1a(k) % names.length];
  const left = members.filter((m) => m !== 'p1/w3');
  const movedByModulo = keys.filter((k) => modulo(k, members) !== modulo(k, left)).length;
  t.ok(movedByModulo / keys.length > 0.8, `hash % members moved ${Math.round((movedByModulo / keys.length) * 100)}% of keys; rendezvous moved only the leaver's`);
  placement.join('p1/w3');
  t.same(new Map(keys.map((k) => [k, placement.ownerOf('partition', k)])), before, 'the same owners once it is back');
  // The same members in another order (another node's view) give the same answers.
  const other = new RendezvousPlacement({ members: [...members].reverse() });
  t.ok(keys.every((k) => other.ownerOf('partition', k) === before.get(k)), 'every node agrees');
});

t.test('worker placement leaves out main threads; node id parts', async (t) => {
  const p = workerPlacement();
  for (const n of ['a/main', 'a/w1', 'a/w2']) p.join(n);
  t.same(p.members(), ['a/w1', 'a/w2']);
  t.equal(threadOf('a1b2/w3'), 'w3');
  t.equal(processOf('a1b2/w3'), 'a1b2');
  t.equal(threadOf('local'), 'local');
  t.equal(processOf('local'), '');
});

/** A placement with a fixed answer: two nodes that disagree about who owns a key. */
function fixed(owner: string): Placement {
  return { ownerOf: () => owner, join() {}, leave() {}, members: () => [owner] };
}

function whereKind(system: ActorSystem, placement: Placement, seen: string[]): void {
  system.defineKind<string, string>('thing', {
    placement,
    props: (key) => ({
      logic: (): ActorLogic<string, string> => ({
        receive: (m) => {
          seen.push(`${system.nodeId}:${key}:${m}`);
          return system.nodeId;
        },
      }),
    }),
  });
}

t.test('ownership check: a node that does not host the actor answers SVC_ERR_MOVED, and the sender goes where it says', async (t) => {
  const net = new MemoryNet();
  const a = new ActorSystem({ transport: net.transport('a') });
  const b = new ActorSystem({ transport: net.transport('b') });
  t.teardown(async () => {
    await a.shutdown();
    await b.shutdown();
  });
  const seen: string[] = [];
  // a believes b hosts every key; b believes a does (a's view is behind).
  whereKind(a, fixed('b'), seen);
  whereKind(b, fixed('a'), seen);
  t.equal(await a.activate<string, string>('thing', 'k').ask('ask'), 'a', 'b sent a back to itself; a activated it');
  t.equal(b.activationCount('thing'), 0, 'b never activated it');
  // A tell is forwarded once, and delivered where it lands.
  a.activate('thing', 'k').tell('tell');
  await new Promise((r) => setImmediate(r));
  t.same(seen, ['a:k:ask', 'a:k:tell']);
});

t.test('a MOVED loop ends with the error, not forever', async (t) => {
  const net = new MemoryNet();
  const a = new ActorSystem({ transport: net.transport('a') });
  const b = new ActorSystem({ transport: net.transport('b') });
  const c = new ActorSystem({ transport: net.transport('c') });
  t.teardown(async () => {
    for (const s of [a, b, c]) await s.shutdown();
  });
  const seen: string[] = [];
  whereKind(a, fixed('b'), seen);
  // b and c each say the other hosts it.
  whereKind(b, fixed('c'), seen);
  whereKind(c, fixed('b'), seen);
  await t.rejects(a.activate('thing', 'k').ask('?'), { code: 'SVC_ERR_MOVED' });
  t.same(seen, []);
});

t.test('members leave and come back: the down set heals, moved activations are handed off', async (t) => {
  const net = new MemoryNet();
  const systems = ['n1', 'n2', 'n3'].map((id) => new ActorSystem({ transport: net.transport(id) }));
  t.teardown(async () => {
    for (const s of systems) await s.shutdown();
  });
  const seen: string[] = [];
  for (const s of systems) whereKind(s, new RendezvousPlacement(), seen);
  const [n1, n2] = systems as [ActorSystem, ActorSystem, ActorSystem];
  const homes = new Map<string, string>();
  for (let i = 0; i < 30; i++) homes.set(`k${i}`, await n1.activate<string, string>('thing', `k${i}`).ask('where'));
  const onN3 = [...homes].filter(([, h]) => h === 'n3').map(([k]) => k);
  t.ok(onN3.length > 0, `n3 hosts ${onN3.length}`);
  net.markDown('n3');
  for (const k of onN3) t.not(await n1.activate<string, string>('thing', k).ask('where'), 'n3', `${k} answers elsewhere while n3 is down`);
  const hostedBefore = n1.activationCount('thing') + n2.activationCount('thing');
  net.markUp('n3');
  await new Promise((r) => setImmediate(r));
  t.equal(n1.activationCount('thing') + n2.activationCount('thing'), hostedBefore - onN3.length, 'the keys that went back to n3 were stopped on n1 and n2');
  for (const k of onN3) t.equal(await n2.activate<string, string>('thing', k).ask('where'), 'n3', `${k} is on n3 again`);
});

t.test('a node leaving gracefully: it gets no new actors, hands its own off, and still answers (nothing fails)', async (t) => {
  const net = new MemoryNet();
  const a = new ActorSystem({ transport: net.transport('p/w1') });
  const b = new ActorSystem({ transport: net.transport('p/w2') });
  t.teardown(async () => {
    await a.shutdown();
    await b.shutdown();
  });
  const seen: string[] = [];
  const pa = new RendezvousPlacement();
  const pb = new RendezvousPlacement();
  whereKind(a, pa, seen);
  whereKind(b, pb, seen);
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
  const before = await Promise.all(keys.map((k) => a.activate<string, string>('thing', k).ask('one')));
  t.ok(before.includes('p/w2') && before.includes('p/w1'), 'keys on both nodes');
  // w2 leaves: both sides stop placing on it; w2's activations stop, and w2 still answers an ask sent to it meanwhile.
  for (const s of [a, b]) s.nodeLeaving('p/w2');
  const after = await Promise.all(keys.map((k, i) => (i % 2 ? a : b).activate<string, string>('thing', k).ask('two')));
  t.same([...new Set(after)], ['p/w1'], 'every key on w1 now, asked from either node');
  await new Promise((r) => setImmediate(r));
  t.equal(b.activationCount('thing'), 0, 'w2 handed every activation off');
  t.notOk(net.isDown('p/w2'), 'w2 is not down: it still answers');
});
