// store(), kvstore() and findNodes from walkers and functions of a served app: configuration from the
// environment, the caller's view of the graph, errors reaching the client with their codes, uploads
// handed to store() as they come — in memory, and streamed to disk past max_body_bytes on a real
// socket, on both transports.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kvstore } from 'svc';
import { startApp } from '../../helpers/app.ts';
import { post } from '../../kit/index.ts';
import { register, tokenOf } from '../../helpers/identity.ts';
import { uploadFolder } from '../../../transports/http/upload-stream.ts';

const ENTRY = new URL('../../fixtures/data-app.ts', import.meta.url).pathname;

function form(fields: Record<string, string | { name: string; data: Uint8Array; type?: string }>): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string') fd.append(k, v);
    else fd.append(k, new Blob([v.data], { type: v.type ?? 'application/octet-stream' }), v.name);
  }
  return fd;
}

t.test('a served app using store() and kvstore()', async (t) => {
  const storage = mkdtempSync(join(tmpdir(), 'svc-storage-'));
  t.teardown(() => rmSync(storage, { recursive: true, force: true }));
  const server = await startApp({ entry: ENTRY, env: { SVC_STORAGE_PATH: storage } });
  t.teardown(() => server.stop());
  const url = server.url;
  await register(url, 'alice');
  await register(url, 'bob');
  const alice = { authorization: `Bearer ${await tokenOf(url, 'alice')}` };
  const bob = { authorization: `Bearer ${await tokenOf(url, 'bob')}` };

  t.test('findNodes answers the caller\'s nodes only, filtered', async (t) => {
    for (const [who, title, n] of [[alice, 'a1', 1], [alice, 'a2', 5], [bob, 'b1', 7]] as const) {
      t.equal((await post(`${url}/walker/AddNote`, { title, tag: 'x', n }, who)).status, 200);
    }
    await post(`${url}/walker/AddNote`, { title: 'a3', tag: 'y' }, alice);
    const mine = await post(`${url}/walker/FindNotes`, { tag: 'x' }, alice);
    t.equal(mine.status, 200);
    t.same(mine.body.data.reports[0], [{ title: 'a1', n: 1 }, { title: 'a2', n: 5 }], "alice sees her two, never bob's");
    t.same((await post(`${url}/walker/FindNotes`, { tag: 'x' }, bob)).body.data.reports[0], [{ title: 'b1', n: 7 }]);
    t.same((await post(`${url}/walker/FindNotes`, { tag: 'x', min: 2 }, alice)).body.data.reports[0], [{ title: 'a2', n: 5 }], 'operators apply');
  });

  t.test('found nodes are the run\'s own: changes commit with it, or roll back with it', async (t) => {
    t.equal((await post(`${url}/walker/BumpNotes`, { tag: 'x' }, alice)).body.data.reports[0], 2);
    t.same((await post(`${url}/walker/FindNotes`, { tag: 'x' }, alice)).body.data.reports[0], [{ title: 'a1', n: 2 }, { title: 'a2', n: 6 }]);
    const failed = await post(`${url}/walker/BumpNotes`, { tag: 'x', fail: true }, alice);
    t.equal(failed.status, 500);
    t.same((await post(`${url}/walker/FindNotes`, { tag: 'x' }, alice)).body.data.reports[0], [{ title: 'a1', n: 2 }, { title: 'a2', n: 6 }], 'the failed run changed nothing');
    t.same((await post(`${url}/walker/FindNotes`, { tag: 'x' }, bob)).body.data.reports[0], [{ title: 'b1', n: 7 }], "bob's untouched");
  });

  t.test('outside a run findNodes reads every node, read-only, when asked to', async (t) => {
    const { Note } = (await import(ENTRY)) as typeof import('../../fixtures/data-app.ts');
    await t.rejects(kvstore('app', 'docdb').findNodes(Note, { tag: 'x' }), { code: 'SVC_ERR_NOT_IN_RUN', message: /allRoots/ }, "every user's nodes only when asked");
    const all = await kvstore('app', 'docdb').findNodes(Note, { tag: 'x' }, '_anchors', { allRoots: true });
    t.same(all.map((n) => n.title).sort(), ['a1', 'a2', 'b1']);
    t.throws(() => {
      (all[0] as { n: number }).n = 99;
    }, { code: 'SVC_ERR_NOT_IN_RUN' });
    await t.rejects(kvstore('app', 'docdb').findNodes(Note, { tag: { $regex: 'x' } }, '_anchors', { allRoots: true }), { code: 'INVALID_QUERY' });
    await t.rejects(kvstore('app', 'docdb').findNodes(Note, {}, 'other'), { code: 'INVALID_NAME' });
  });

  t.test('documents through functions, in the embedded SQLite beside the graph', async (t) => {
    const a = await post(`${url}/function/putDoc`, { doc: { kind: 'tea', qty: 2 } });
    t.equal(a.status, 200);
    t.match(a.body.data.result, /^[0-9a-f]{24}$/);
    await post(`${url}/function/putDoc`, { doc: { kind: 'cake', qty: 5 } });
    t.same((await post(`${url}/function/findDocs`, { filter: { qty: { $gte: 3 } } })).body.data.result, [{ kind: 'cake', qty: 5 }]);
    t.ok(existsSync(join(server.dataDir, 'docdb.db')), 'docdb.db in the data folder');
    const wrong = await post(`${url}/function/wrongBackend`, {});
    t.equal(wrong.status, 501);
    t.equal(wrong.body.error.code, 'NOT_IMPLEMENTED');
  });

  t.test('uploads go to store() as they are; paths are confined', async (t) => {
    const data = randomBytes(50_000);
    const res = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'a.bin', data }, name: 'a.bin' }) });
    const body = (await res.json()) as any;
    t.equal(res.status, 200, JSON.stringify(body));
    t.same(body.data.reports[0], { path: 'uploads/a.bin', size: 50_000, streamed: false, in_memory: true });
    t.same(readFileSync(join(storage, 'uploads', 'a.bin')), data, 'on disk under SVC_STORAGE_PATH');
    const read = await post(`${url}/function/readFile`, { path: 'uploads/a.bin' });
    t.equal(read.body.data.result.sha256, createHash('sha256').update(data).digest('hex'));
    t.same((await post(`${url}/function/listFiles`, { prefix: 'uploads/' })).body.data.result, ['uploads/a.bin']);
    for (const path of ['../secret', '/etc/passwd', 'uploads/../../x', 'a\u0000b']) {
      const bad = await post(`${url}/function/readFile`, { path });
      t.equal(bad.status, 400, `${JSON.stringify(path)} refused`);
      t.equal(bad.body.error.code, 'INVALID_PATH');
    }
    const escape = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'x', data: Buffer.from('x') }, name: '../../escaped' }) });
    t.equal(escape.status, 400);
    t.equal(((await escape.json()) as any).error.code, 'INVALID_PATH');
    t.notOk(existsSync(join(storage, '..', 'escaped')), 'nothing written outside');
    const missing = await post(`${url}/function/readFile`, { path: 'uploads/none' });
    t.equal(missing.status, 404);
    t.equal(missing.body.error.code, 'FILE_NOT_FOUND');
    const tooBig = await fetch(`${url}/walker/SmallFile`, { method: 'POST', body: form({ file: { name: 'b', data: randomBytes(2000) } }) });
    t.equal(tooBig.status, 413, "over the field's own maxBytes");
    t.same(((await tooBig.json()) as any).error.details, { field: 'file', max_bytes: 1024 });
    t.equal((await fetch(`${url}/walker/SmallFile`, { method: 'POST', body: form({ file: { name: 'b', data: randomBytes(1000) } }) })).status, 200);
  });
});

for (const transport of ['uws', 'node'] as const) {
  t.test(`uploads past max_body_bytes stream to disk (${transport}, a real socket)`, async (t) => {
    t.setTimeout(120_000);
    const storage = mkdtempSync(join(tmpdir(), 'svc-storage-'));
    t.teardown(() => rmSync(storage, { recursive: true, force: true }));
    const server = await startApp({ entry: ENTRY, listen: true, transport, env: { SVC_STORAGE_PATH: storage, SVC_MAX_BODY_BYTES: String(1024 * 1024) } });
    t.teardown(() => server.stop());
    const url = server.url;

    const data = randomBytes(20 * 1024 * 1024);
    const res = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'big.bin', data }, name: 'big.bin' }) });
    const body = (await res.json()) as any;
    t.equal(res.status, 200, JSON.stringify(body));
    t.same(body.data.reports[0], { path: 'uploads/big.bin', size: data.length, streamed: true, in_memory: false }, 'handed over by path');
    t.equal(createHash('sha256').update(readFileSync(join(storage, 'uploads', 'big.bin'))).digest('hex'), createHash('sha256').update(data).digest('hex'), 'stored byte for byte');
    t.same(readdirSync(uploadFolder()), [], 'the temporary file is gone once answered');

    const over = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'huge.bin', data: new Uint8Array(65 * 1024 * 1024) }, name: 'huge.bin' }) }).catch((e: Error) => e);
    if (over instanceof Error) t.pass(`refused while sending (${over.message})`);
    else {
      t.equal(over.status, 413);
      t.equal(((await over.json()) as any).error.code, 'PAYLOAD_TOO_LARGE');
    }
    t.notOk(existsSync(join(storage, 'uploads', 'huge.bin')), 'nothing stored');
    // The connection may still be draining: the refused upload's file goes once the request is over.
    await server.app.waitFor?.(/./, 0);
    // Parts besides the streamed ones stay within max_body_bytes: a big file in another field, a big text field.
    const junk = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'a', data: randomBytes(500) }, name: 'a', junk: { name: 'j', data: randomBytes(2 * 1024 * 1024) } }) }).catch((e: Error) => e);
    if (junk instanceof Error) t.pass(`refused while sending (${junk.message})`);
    else t.equal(junk.status, 413, 'a big file in an undeclared field: 413, and the server lives on');
    const text = await fetch(`${url}/walker/SaveFile`, { method: 'POST', body: form({ file: { name: 'a', data: randomBytes(500) }, name: 'x'.repeat(1024 * 1024 + 10) }) }).catch((e: Error) => e);
    if (text instanceof Error) t.pass(`refused while sending (${text.message})`);
    else {
      t.equal(text.status, 413, 'a text field over max_body_bytes is a 413, not a missing field');
      t.same(((await text.json()) as any).error.details, { field: 'name', max_bytes: 1024 * 1024 });
    }
    const anonymous = await fetch(`${url}/walker/PrivateSave`, { method: 'POST', body: form({ file: { name: 'p', data: randomBytes(4 * 1024 * 1024) } }) }).catch((e: Error) => e);
    if (anonymous instanceof Error) t.pass(`refused while sending (${anonymous.message})`);
    else {
      t.equal(anonymous.status, 401, 'a private streamed route without a token: 401 at once, not 413');
      t.equal(((await anonymous.json()) as any).error.code, 'UNAUTHORIZED');
    }
    const forged = await fetch(`${url}/walker/PrivateSave`, { method: 'POST', headers: { authorization: 'Bearer not.a.token' }, body: form({ file: { name: 'p', data: randomBytes(1000) } }) });
    t.equal(forged.status, 401, 'a forged token: 401');
    for (const contentType of ['multipart/form-data; boundary="q\\"x"', 'multipart/form-data; boundary=', 'multipart/form-data']) {
      const odd = await fetch(`${url}/walker/SaveFile`, { method: 'POST', headers: { 'content-type': contentType }, body: '0123456789' });
      t.ok(odd.status >= 400 && odd.status < 500, `${contentType}: ${odd.status}, never a crash`);
    }
    t.equal((await fetch(`${url}/health`)).status, 200, 'still serving');
    const small = await fetch(`${url}/walker/SmallFile`, { method: 'POST', body: form({ file: { name: 'b', data: randomBytes(2000) } }) });
    t.equal(small.status, 413, 'a field without a large limit stays within its own (buffered path)');
    const json = await fetch(`${url}/function/readFile`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: 'x'.repeat(2 * 1024 * 1024) }) });
    t.equal(json.status, 413, 'other routes keep max_body_bytes');
  });
}
