// Multipart uploads through a real server, on the transport under test
// (SVC_TRANSPORT: uWebSockets.js reads parts with getParts, node:http with
// busboy): files and fields reach the walker alike, malformed bodies are a
// 400 envelope, bodies past max_body_bytes a 413 — never a 500.
import { createHash } from 'node:crypto';
import t from 'tap';
import { startServer, transport, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/uploads-app.ts', import.meta.url).pathname;
const MAX_BODY = 64 * 1024;
let server: Server;

t.before(async () => {
  server = await startServer({ entry, env: { SVC_MAX_BODY_BYTES: String(MAX_BODY) } });
});
t.teardown(() => server.stop());
t.comment(`transport: ${transport()}`);

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');

async function upload(body: FormData | Buffer | string, contentType?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}/walker/Files`, { method: 'POST', body, headers: contentType ? { 'content-type': contentType } : {} });
  return { status: res.status, json: await res.json() };
}

t.test('a file field beside text fields', async (t) => {
  const form = new FormData();
  form.append('note', 'a note');
  form.append('first', new Blob(['hello upload'], { type: 'text/plain' }), 'greeting.txt');
  form.append('copies', '3');
  const { status, json } = await upload(form);
  t.equal(status, 200);
  t.same(json.data.reports, [{ first: { filename: 'greeting.txt', mimetype: 'text/plain', size: 12, sha256: sha256('hello upload') }, second: null, note: 'a note', copies: 3 }]);
});

t.test('several files, binary, byte for byte', async (t) => {
  const a = new Uint8Array(40_000).map((_, i) => (i * 7) % 256);
  const b = new Uint8Array([0, 255, 13, 10, 45, 45, 0]);
  const form = new FormData();
  form.append('first', new Blob([a], { type: 'application/octet-stream' }), 'a.bin');
  form.append('second', new Blob([b], { type: 'image/png' }), 'été.png');
  const { status, json } = await upload(form);
  t.equal(status, 200);
  t.same(json.data.reports[0], {
    first: { filename: 'a.bin', mimetype: 'application/octet-stream', size: a.length, sha256: sha256(a) },
    second: { filename: 'été.png', mimetype: 'image/png', size: b.length, sha256: sha256(b) },
    note: '',
    copies: 1,
  });
});

t.test('an empty file', async (t) => {
  const form = new FormData();
  form.append('first', new Blob([]), 'empty.txt');
  const { status, json } = await upload(form);
  t.equal(status, 200);
  t.match(json.data.reports[0].first, { filename: 'empty.txt', size: 0, sha256: sha256('') });
});

t.test('malformed bodies are a 400 envelope', async (t) => {
  const part = (name: string, value: string) => `--zzz\r\ncontent-disposition: form-data; name="${name}"; filename="f.txt"\r\n\r\n${value}\r\n`;
  const cases: [string, string, string][] = [
    ['the body uses another boundary', 'multipart/form-data; boundary=zzz', part('first', 'x').replaceAll('zzz', 'yyy') + '--yyy--\r\n'],
    ['no boundary in the content type', 'multipart/form-data', part('first', 'x') + '--zzz--\r\n'],
    ['an empty boundary', 'multipart/form-data; boundary=', part('first', 'x') + '--zzz--\r\n'],
    ['no closing delimiter', 'multipart/form-data; boundary=zzz', part('first', 'x')],
    ['cut short inside a part', 'multipart/form-data; boundary=zzz', `--zzz\r\ncontent-disposition: form-data; name="first"; filename="f.txt"\r\n\r\nhal`],
    ['a part without a name', 'multipart/form-data; boundary=zzz', '--zzz\r\ncontent-disposition: form-data; filename="f.txt"\r\n\r\nx\r\n--zzz--\r\n'],
    ['a header without its blank line', 'multipart/form-data; boundary=zzz', '--zzz\r\ncontent-disposition: form-data; name="first"\r\nx\r\n--zzz--\r\n'],
    ['the boundary inside a part', 'multipart/form-data; boundary=zzz', part('first', 'a--zzz b') + '--zzz--\r\n'],
    ['garbage', 'multipart/form-data; boundary=zzz', 'not multipart at all'],
  ];
  for (const [name, type, body] of cases) {
    const { status, json } = await upload(body, type);
    t.equal(status, 400, name);
    t.match(json, { ok: false, error: { code: 'VALIDATION_ERROR' } }, `${name}: the envelope`);
  }
  const missingFile = await upload('--zzz\r\ncontent-disposition: form-data; name="note"\r\n\r\nx\r\n--zzz--\r\n', 'multipart/form-data; boundary=zzz');
  t.equal(missingFile.status, 400, 'a well-formed body without the required file');
});

t.test('a part past max_body_bytes is a 413; just under it passes', async (t) => {
  // Encoded first and sent in one write, as a client that learns of the 413 only after sending would.
  const encoded = async (size: number) => {
    const form = new FormData();
    form.append('first', new Blob([new Uint8Array(size).fill(120)]), 'big.bin');
    const request = new Request('http://encoder.invalid/', { method: 'POST', body: form });
    return [Buffer.from(await request.arrayBuffer()), request.headers.get('content-type') as string] as const;
  };
  const over = await upload(...(await encoded(MAX_BODY + 1)));
  t.equal(over.status, 413);
  t.match(over.json, { ok: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  const under = await upload(...(await encoded(MAX_BODY - 1024)));
  t.equal(under.status, 200);
  t.match(under.json.data.reports[0].first, { size: MAX_BODY - 1024, sha256: sha256(new Uint8Array(MAX_BODY - 1024).fill(120)) });
});

t.test('a quoted boundary and an upper-case content type are read', async (t) => {
  const body = '--a b\r\ncontent-disposition: form-data; name="first"; filename="q.txt"\r\ncontent-type: text/plain\r\n\r\nquoted\r\n--a b--\r\n';
  const { status, json } = await upload(body, 'Multipart/Form-Data; charset=utf-8; boundary="a b"');
  t.equal(status, 200);
  t.match(json.data.reports[0].first, { filename: 'q.txt', size: 6, sha256: sha256('quoted') });
});
