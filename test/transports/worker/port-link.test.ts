// A thread link's batches: a small one is copied to the other thread (a structured clone costs less than handing a
// buffer over: about 2 µs less a cross-thread ask, `npm run bench:kernel`), a large one is transferred.
import t from 'tap';
import { MessageChannel } from 'node:worker_threads';
import { PortLink } from '../../../transports/worker/index.ts';

t.test('small batches are copied, large ones transferred, both arrive whole', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => {
    port1.close();
    port2.close();
  });
  const posted: { bytes: number; transferred: boolean }[] = [];
  const spy = {
    postMessage(value: unknown, transfer?: readonly ArrayBuffer[]) {
      posted.push({ bytes: (value as Uint8Array).byteLength, transferred: (transfer?.length ?? 0) > 0 });
      port1.postMessage(value, transfer as ArrayBuffer[]);
    },
    on: port1.on.bind(port1),
    off: port1.off.bind(port1),
  };
  const link = new PortLink('peer', spy, () => undefined, () => undefined);
  const got: Uint8Array[] = [];
  port2.on('message', (v: Uint8Array) => got.push(v));
  link.send({ t: 1, to: '/user/a', msg: 'small' });
  link.flush();
  link.send({ t: 1, to: '/user/a', msg: 'x'.repeat(64 * 1024) });
  link.flush();
  while (got.length < 2) await new Promise((r) => setImmediate(r));
  t.match(posted, [{ transferred: false }, { transferred: true }]);
  t.ok((posted[0]?.bytes ?? 0) < 100 && (posted[1]?.bytes ?? 0) > 64 * 1024);
  t.same(got.map((b) => b.byteLength), posted.map((p) => p.bytes), 'each arrives whole');
});
