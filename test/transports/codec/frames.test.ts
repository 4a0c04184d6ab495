// The frame codec through its door: kernel frames survive the trip as they were (types JSON has not, actor refs by
// address), the bytes are the batch's own, and a `__proto__` key is refused at encoding rather than renamed.
import t from 'tap';
import { ActorSystem, fromReceive, isActorRef, RemoteRef, VirtualRef, type Frame, type RefAddress } from 'svc/kernel';
import { decodeFrames, encodeFrames } from '../../../transports/codec/index.ts';

const noRefs = (address: RefAddress): never => {
  throw new Error(`no ref expected, got ${JSON.stringify(address)}`);
};

t.test('a batch of every frame kind comes back equal, with what JSON would lose', async (t) => {
  const when = new Date('2024-05-06T07:08:09.010Z');
  const frames: Frame[] = [
    { t: 1, to: '/user/counter', msg: { n: 1, big: 2n ** 70n, when, bytes: new Uint8Array([1, 2, 255]), tags: new Set(['a', 'b']), byId: new Map([['x', 1]]) } },
    { t: 1, to: ['partition', 'root-1'], msg: 'hi', fw: 1 },
    { t: 2, id: 7, to: '/user/echo', msg: { nested: [null, true, -0.5, 'ü'] } },
    { t: 3, id: 7, ok: true, value: undefined },
    { t: 3, id: 8, ok: false, error: { code: 'SVC_ERR_TIMEOUT', message: 'no answer', status: 504, details: { after: 30 } } },
  ];
  const back = decodeFrames(encodeFrames(frames), noRefs);
  t.same(back, frames);
  const msg = (back[0] as { msg: Record<string, unknown> }).msg;
  t.ok(msg.when instanceof Date && (msg.when as Date).getTime() === when.getTime(), 'a Date stays a Date');
  t.equal(msg.big, 2n ** 70n, 'a BigInt stays a BigInt');
  t.ok(msg.bytes instanceof Uint8Array, 'bytes stay bytes');
  t.ok(msg.tags instanceof Set && msg.byId instanceof Map, 'a Set and a Map stay what they were');
  t.same((back[1] as { to: unknown }).to, ['partition', 'root-1'], 'a virtual target stays a pair');
});

t.test('the encoded bytes are the batch alone, and stay so when the next batch is encoded', async (t) => {
  const first = encodeFrames([{ t: 1, to: '/user/a', msg: 'first' }]);
  t.equal(first.byteOffset, 0);
  t.equal(first.buffer.byteLength, first.byteLength, 'it owns its memory (it can be transferred)');
  const copy = Uint8Array.from(first);
  encodeFrames([{ t: 1, to: '/user/b', msg: 'x'.repeat(10_000) }]);
  t.same(first, copy, 'a later encoding does not write over it');
  t.same(decodeFrames(first, noRefs), [{ t: 1, to: '/user/a', msg: 'first' }]);
});

t.test('actor refs travel by address and are rebuilt by the receiving system', async (t) => {
  const sender = new ActorSystem({ nodeId: 'p/w1' });
  const receiver = new ActorSystem({ nodeId: 'p/w2' });
  t.teardown(async () => {
    await sender.shutdown();
    await receiver.shutdown();
  });
  const local = sender.spawn(fromReceive((n: number) => n + 1), 'adder');
  const virtual = sender.refFromAddress({ kind: 'partition', key: 'root-9' });
  const seen: RefAddress[] = [];
  const bytes = encodeFrames([{ t: 1, to: '/user/x', msg: { replyTo: local, owner: virtual, list: [local] } }]);
  const [frame] = decodeFrames(bytes, (address) => {
    seen.push(address);
    return receiver.refFromAddress(address);
  });
  t.same(seen, [{ node: 'p/w1', path: '/user/adder' }, { kind: 'partition', key: 'root-9' }, { node: 'p/w1', path: '/user/adder' }]);
  const msg = (frame as { msg: { replyTo: unknown; owner: unknown; list: unknown[] } }).msg;
  t.ok(isActorRef(msg.replyTo) && msg.replyTo instanceof RemoteRef, 'a ref of another node is a remote ref there');
  t.same((msg.replyTo as RemoteRef).address(), { node: 'p/w1', path: '/user/adder' });
  t.ok(msg.owner instanceof VirtualRef, 'a virtual ref stays virtual');
  t.same((msg.owner as VirtualRef).address(), { kind: 'partition', key: 'root-9' });
  t.ok(msg.list[0] instanceof RemoteRef, 'refs inside arrays too');
});

t.test('a resolver that refuses a ref fails the decode; the next decode resolves through its own resolver', async (t) => {
  const system = new ActorSystem({ nodeId: 'p/w1' });
  t.teardown(() => system.shutdown());
  const bytes = encodeFrames([{ t: 1, to: '/user/x', msg: system.spawn(fromReceive(() => 1)) }]);
  t.throws(() => decodeFrames(bytes, () => {
    throw new Error('the resolver refuses');
  }), /the resolver refuses/);
  const resolved: RefAddress[] = [];
  decodeFrames(bytes, (address) => (resolved.push(address), system.refFromAddress(address)));
  t.equal(resolved.length, 1, 'the next decode asks its own resolver');
});

t.test('a __proto__ key anywhere is refused at encoding (RESERVED_KEY, 400, its path named); the name as a value is fine', async (t) => {
  const withKey = JSON.parse('{"a":[{"b":{"__proto__":{"x":1}}}]}') as unknown;
  t.throws(() => encodeFrames([{ t: 1, to: '/user/x', msg: 'ok' }, { t: 2, id: 1, to: '/user/y', msg: withKey }]), { code: 'RESERVED_KEY', status: 400, message: /frames\.1\.msg\.a\.0\.b\.__proto__/ });
  t.throws(() => encodeFrames([{ t: 3, id: 1, ok: true, value: JSON.parse('{"__proto__":null}') }]), { code: 'RESERVED_KEY' }, 'in an answer too');
  const fine: Frame[] = [{ t: 1, to: '/user/x', msg: { text: '__proto__', list: ['__proto__'], __proto_: 1 } }];
  t.same(decodeFrames(encodeFrames(fine), noRefs), fine, 'the name as a string, or a near name, crosses intact');
});
