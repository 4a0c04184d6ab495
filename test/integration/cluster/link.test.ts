// Process links: authenticated TCP between the main threads of two members.
import t from 'tap';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { ProcessLinks } from '../../../transports/link/link.ts';

type Got = { from: string; to: string; bytes: number[] };

async function pair(t: { teardown(fn: () => unknown): void }, secrets: [string, string] = ['s3cret', 's3cret'], refuse?: (id: 'a' | 'b', bytes: Uint8Array) => boolean) {
  const got: Record<'a' | 'b', Got[]> = { a: [], b: [] };
  /** The processes each side heard its link with drop. */
  const downs: Record<'a' | 'b', string[]> = { a: [], b: [] };
  const errors: string[] = [];
  const waiters: (() => void)[] = [];
  const make = (id: 'a' | 'b', secret: string) =>
    ProcessLinks.listen({
      processId: id,
      cluster: 'c1',
      secret,
      host: '127.0.0.1',
      onBytes: (from, to, bytes) => {
        got[id].push({ from, to, bytes: [...bytes] });
        waiters.splice(0).forEach((w) => w());
        return refuse?.(id, bytes) ? false : undefined;
      },
      onLinkDown: (process) => {
        downs[id].push(process);
        waiters.splice(0).forEach((w) => w());
      },
      onError: (m) => errors.push(m),
    });
  const a = await make('a', secrets[0]);
  const b = await make('b', secrets[1]);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise<void>((r) => waiters.push(r));
  };
  return { a, b, got, downs, errors, until };
}

t.test('frames go both ways, in order, with their nodes', async (t) => {
  const { a, b, got, until } = await pair(t);
  a.connect('b', `127.0.0.1:${b.port}`);
  b.connect('a', `127.0.0.1:${a.port}`);
  // Sent before the link is up: queued, then delivered in order.
  const sent = Array.from({ length: 100 }, (_, i) => a.send('a/w1', 'b/w2', new Uint8Array([i, 1, 2])));
  t.ok(sent.every(Boolean), 'queued while the link comes up');
  b.send('b/w2', 'a/w1', new Uint8Array([9]));
  await until(() => got.b.length === 100 && got.a.length === 1);
  t.same(got.b.map((g) => g.bytes[0]), Array.from({ length: 100 }, (_, i) => i), 'in order');
  t.same(got.b[0], { from: 'a/w1', to: 'b/w2', bytes: [0, 1, 2] });
  t.same(got.a[0], { from: 'b/w2', to: 'a/w1', bytes: [9] });
  t.equal(a.send('a/w1', 'zz/w1', new Uint8Array([1])), false, 'no link to an unknown process: false');
});

t.test('bytes refused by the receiver close the link: the sender hears it at once, dials again, and what follows gets through', async (t) => {
  const { a, b, got, downs, until } = await pair(t, undefined, (id, bytes) => id === 'b' && bytes[0] === 0);
  a.connect('b', `127.0.0.1:${b.port}`);
  a.send('a/w1', 'b/w1', new Uint8Array([1]));
  await until(() => got.b.length === 1);
  t.same(downs.a, [], 'nothing dropped yet');
  // Refused, and in the same write another message: nothing after the refusal is read from that connection.
  a.send('a/w1', 'b/w1', new Uint8Array([0]));
  a.send('a/w1', 'b/w1', new Uint8Array([2]));
  await until(() => downs.a.length === 1);
  t.same(downs.a, ['b'], 'the sender heard its link to b drop');
  t.same(got.b.map((g) => g.bytes[0]), [1, 0], 'nothing read after the refused message');
  a.send('a/w1', 'b/w1', new Uint8Array([3]));
  await until(() => got.b.some((g) => g.bytes[0] === 3));
  t.pass('a new connection carries what is sent next');
});

t.test('disconnect drops the link both ways: the other side hears it; the side that dropped it hears nothing', async (t) => {
  const { a, b, got, downs, until } = await pair(t);
  a.connect('b', `127.0.0.1:${b.port}`);
  b.connect('a', `127.0.0.1:${a.port}`);
  a.send('a/w1', 'b/w1', new Uint8Array([1]));
  b.send('b/w1', 'a/w1', new Uint8Array([1]));
  await until(() => got.a.length === 1 && got.b.length === 1);
  t.ok(b.linked('a') && a.linked('b'));
  b.disconnect('a');
  t.notOk(b.linked('a'), 'b no longer links to a');
  await until(() => downs.a.length >= 1);
  t.same([...new Set(downs.a)], ['b'], 'a heard its link with b drop');
  t.same(downs.b, [], 'b closed it itself: nothing to hear');
});

t.test('a large batch arrives whole', async (t) => {
  const { a, b, got, until } = await pair(t);
  a.connect('b', `127.0.0.1:${b.port}`);
  const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
  a.send('a/w1', 'b/w1', big);
  await until(() => got.b.length === 1);
  t.equal(got.b[0]?.bytes.length, big.length);
  t.equal(got.b[0]?.bytes[big.length - 1], (big.length - 1) % 251);
});

t.test('a link without the cluster secret is closed; nothing it sends is delivered', async (t) => {
  const { a, b, got, errors } = await pair(t, ['right', 'wrong']);
  b.connect('a', `127.0.0.1:${a.port}`);
  b.send('b/w1', 'a/w1', new Uint8Array([1]));
  while (errors.length === 0) await new Promise((r) => setTimeout(r, 10));
  t.match(errors[0], /did not prove the cluster secret/);
  t.equal(got.a.length, 0);
});

t.test('a raw client that skips the handshake gets nothing through', async (t) => {
  const { a, got } = await pair(t);
  const socket = createConnection({ host: '127.0.0.1', port: a.port });
  await once(socket, 'connect');
  socket.resume();
  // A data message straight away: the link closes.
  const payload = Buffer.from([0, 4, ...Buffer.from('x/w1'), 0, 4, ...Buffer.from('a/w1'), 7]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length + 1);
  head.writeUInt8(2, 4);
  socket.write(Buffer.concat([head, payload]));
  await once(socket, 'close');
  t.equal(got.a.length, 0);
});

t.test('a peer may only speak for its own nodes', async (t) => {
  const { a, b, got, errors } = await pair(t);
  b.connect('a', `127.0.0.1:${a.port}`);
  b.send('b/w1', 'a/w1', new Uint8Array([1]));
  b.send('c/w1', 'a/w1', new Uint8Array([2]));
  while (got.a.length === 0) await new Promise((r) => setTimeout(r, 10));
  t.same(got.a.map((g) => g.from), ['b/w1']);
  t.same(errors, []);
});

t.test('a link comes back after the peer restarts on the same port', async (t) => {
  const { a, b, got, until } = await pair(t);
  a.connect('b', `127.0.0.1:${b.port}`);
  a.send('a/w1', 'b/w1', new Uint8Array([1]));
  await until(() => got.b.length === 1);
  const port = b.port;
  await b.close();
  const again = await ProcessLinks.listen({
    processId: 'b',
    cluster: 'c1',
    secret: 's3cret',
    host: '127.0.0.1',
    port,
    onBytes: (from, to, bytes) => void got.b.push({ from, to, bytes: [...bytes] }),
  });
  t.teardown(() => again.close());
  const until2 = Date.now() + 5000;
  while (got.b.length < 2 && Date.now() < until2) {
    a.send('a/w1', 'b/w1', new Uint8Array([2]));
    await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(got.b.length >= 2, 'frames flow again over the new connection');
});

t.test('a link reaches only the member it meant to: another process at that address is refused', async (t) => {
  const { a, b, got, errors } = await pair(t);
  // a believes member "x" listens at b's address: b's proof names b, not x.
  a.connect('x', `127.0.0.1:${b.port}`);
  a.send('a/w1', 'x/w1', new Uint8Array([1]));
  while (errors.length === 0) await new Promise((r) => setTimeout(r, 10));
  t.match(errors.join('\n'), /did not prove the cluster secret|did not prove it is member x/);
  t.equal(got.b.length, 0, 'nothing delivered');
});

t.test('before its proof a connection may send only a few hundred bytes', async (t) => {
  const { a } = await pair(t);
  const socket = createConnection({ host: '127.0.0.1', port: a.port });
  await once(socket, 'connect');
  socket.resume();
  socket.on('error', () => undefined);
  const closed = once(socket, 'close');
  socket.write(Buffer.alloc(64 * 1024, 1));
  await closed;
  t.pass('closed at once, not buffered');
});

t.test('an unusable address from a member record is refused, not thrown', async (t) => {
  const { a, errors } = await pair(t);
  t.doesNotThrow(() => a.connect('y', 'nowhere:99999999'));
  t.doesNotThrow(() => a.connect('z', 'no-port'));
  t.match(errors.join('\n'), /unusable link address/);
  t.equal(a.send('a/w1', 'y/w1', new Uint8Array([1])), false);
});
