// A document key `__proto__` was silently lost: renamed `__proto_` by msgpackr between worker threads,
// or dropped by an assignment in the document checker (`{"name":"p","__proto__":{…}}` stored with 200
// came back `{"name":"p"}`). It is now refused with 400 RESERVED_KEY naming where it is — in request
// bodies, WebSocket frames and kvstore calls alike — and nothing is stored. Through a real `svc start`
// server with two worker threads, and in-process (svc/testing, and kvstore() called directly).
import t, { type Test } from 'tap';
import { kvstore } from 'svc';
import { WalkerSocket } from 'svc/client';
import { encodeFrames } from '../../../transports/codec/index.ts';
import { startApp } from '../../helpers/app.ts';
import { post, startServer } from '../../kit/index.ts';

const DATA = new URL('../../fixtures/data-app.ts', import.meta.url).pathname;
const WS = new URL('../../fixtures/ws-app.ts', import.meta.url).pathname;

/** Bodies as raw JSON text: a JavaScript object literal would make `__proto__` the prototype, not a key. */
const REFUSED: [string, string][] = [
  ['{"doc":{"name":"p","__proto__":{"x":1}}}', 'body.doc.__proto__'],
  ['{"doc":{"name":"p","a":{"b":[{"__proto__":{"x":1}}]}}}', 'body.doc.a.b.0.__proto__'],
  ['{"doc":{"name":"p","\\u005f_proto__":{"x":1}}}', 'body.doc.__proto__'],
  ['{"__proto__":{"doc":{"name":"p"}},"doc":{"name":"p"}}', 'body.__proto__'],
];

async function refusesEverywhere(t: Test, url: string): Promise<void> {
  // Several times each: with two workers, requests land on either thread.
  for (let round = 0; round < 4; round++) {
    for (const [body, path] of REFUSED) {
      const res = await post(`${url}/function/putDoc`, body);
      t.equal(res.status, 400, `${body}: 400, not ${res.status} (round ${round})`);
      t.equal(res.body.error?.code, 'RESERVED_KEY');
      t.ok(String(res.body.error?.message).startsWith(`${path}:`), `names where: ${res.body.error?.message}`);
    }
  }
  t.same((await post(`${url}/function/findDocs`, { filter: { name: 'p' } })).body.data.result, [], 'nothing was stored');
  const near = await post(`${url}/function/putDoc`, '{"doc":{"name":"q","__proto_":1,"nested":{"__proto":[2]}}}');
  t.equal(near.status, 200);
  t.same((await post(`${url}/function/findDocs`, { filter: { name: 'q' } })).body.data.result, [{ name: 'q', __proto_: 1, nested: { __proto: [2] } }], 'names near it are stored as sent, across threads too');
  const filter = await post(`${url}/function/findDocs`, '{"filter":{"__proto__":{"name":"q"}}}');
  t.equal(filter.status, 400);
  t.equal(filter.body.error?.code, 'RESERVED_KEY', 'a filter too');
}

t.test('a real server with two worker threads', async (t) => {
  const server = await startServer({ entry: DATA, workers: 2 });
  t.teardown(() => server.stop());
  await refusesEverywhere(t, server.url);
});

t.test('in-process (svc/testing), and kvstore() called directly', async (t) => {
  const server = await startApp({ entry: DATA });
  t.teardown(() => server.stop());
  await refusesEverywhere(t, server.url);
  const docs = kvstore('app', 'docdb');
  await t.rejects(docs.insertOne('things', JSON.parse('{"name":"p","__proto__":{"x":1}}')), { code: 'RESERVED_KEY', status: 400, message: /doc\.__proto__/ });
  await t.rejects(docs.insertOne('things', JSON.parse('{"name":"p","deep":[{"__proto__":1}]}')), { code: 'RESERVED_KEY', message: /doc\.deep\.0\.__proto__/ });
  await t.rejects(docs.updateMany('things', {}, { $set: { 'name.__proto__': 1 } }), { code: 'RESERVED_KEY' });
  t.same(await docs.find('things', { name: 'p' }), [], 'nothing was stored');
});

t.test('a WebSocket frame holding it gets a RESERVED_KEY error frame; the connection stays open', async (t) => {
  const server = await startServer({ entry: WS, workers: 2 });
  t.teardown(() => server.stop());
  const socket = await WalkerSocket.connect(server.url, 'Echo');
  t.teardown(() => socket.close());
  await t.rejects(socket.send(JSON.parse('{"msg":"x","extra":{"__proto__":{"polluted":true}}}') as Record<string, unknown>), { code: 'RESERVED_KEY', message: /frame\.extra\.__proto__/ });
  t.match(await socket.send({ msg: 'still here' }), { reports: ['still here'] });
});

t.test('a message between threads holding it is refused at encoding, never delivered renamed', async (t) => {
  t.throws(() => encodeFrames([{ t: 0, to: { node: 'w1', path: '/user/x' }, msg: JSON.parse('{"a":{"__proto__":1}}') } as never]), { code: 'RESERVED_KEY', message: /frames\.0\.msg\.a\.__proto__/ });
  t.doesNotThrow(() => encodeFrames([{ t: 0, to: { node: 'w1', path: '/user/x' }, msg: { text: '__proto__' } } as never]), 'the name as a string value is fine');
});
