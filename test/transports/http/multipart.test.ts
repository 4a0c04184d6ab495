// The two multipart parsers (uWebSockets.js's getParts, busboy) behind one
// framing check: every body gets the same answer from both — the same parts,
// or the same 400 — whichever transport reads it.
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import { busboyParts, MAX_PARTS, type MultipartSource, nativeParser, type Part, partsOf, readPartsAhead } from '../../../transports/http/multipart.ts';
import { type Front, type HttpRequest, listenUws, loadUws } from '../../../transports/http/index.ts';

const getParts = (createRequire(import.meta.url)('uWebSockets.js') as typeof import('uWebSockets.js')).getParts;
const native = nativeParser(getParts);

const part = (name: string, value: string, extra = '') => `--zzz\r\ncontent-disposition: form-data; name="${name}"${extra}\r\n\r\n${value}\r\n`;
const file = (name: string, filename: string, value: string | Buffer, type = 'application/octet-stream') =>
  Buffer.concat([Buffer.from(`--zzz\r\ncontent-disposition: form-data; name="${name}"; filename="${filename}"\r\ncontent-type: ${type}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n')]);
const body = (...pieces: (string | Buffer)[]) => Buffer.concat(pieces.map((p) => Buffer.from(p)));

/** Name, filename and data of each part, from both parsers; or the error code both answered. */
async function both(t: Test, bytes: Buffer, boundary = 'zzz'): Promise<Part[] | string> {
  const copy = Buffer.from(bytes);
  const read = async (parse: () => Part[] | Promise<Part[]>) => {
    try {
      return await parse();
    } catch (error) {
      return (error as { body?: { code?: string } }).body?.code ?? `not an HttpError: ${String(error)}`;
    }
  };
  const a = await read(() => native(bytes, boundary));
  t.ok(bytes.equals(copy), 'getParts left the body as it was');
  const b = await read(() => busboyParts(bytes, boundary));
  const shape = (r: Part[] | string) => (typeof r === 'string' ? r : r.map((p) => [p.name, p.filename, p.data.toString('hex')]));
  t.same(shape(a), shape(b), 'getParts and busboy agree');
  return a;
}

t.test('fields and a file', async (t) => {
  const bytes = body(part('note', 'a note'), file('upload', 'été.txt', 'hello\r\nworld', 'text/plain'), part('copies', '3'), '--zzz--\r\n');
  const parts = (await both(t, bytes)) as Part[];
  t.same(
    parts.map((p) => [p.name, p.filename, p.contentType, p.data.toString()]),
    [
      ['note', undefined, undefined, 'a note'],
      ['upload', 'été.txt', 'text/plain', 'hello\r\nworld'],
      ['copies', undefined, undefined, '3'],
    ],
  );
});

t.test('several files, binary data kept byte for byte', async (t) => {
  const bin = Buffer.from([0, 255, 13, 10, 45, 45, 122, 13, 0]);
  const big = Buffer.alloc(300_000, 7);
  const parts = (await both(t, body(file('a', 'a.bin', bin), file('b', 'b.bin', big), file('c', 'empty.bin', ''), '--zzz--'))) as Part[];
  t.same(parts.map((p) => p.name), ['a', 'b', 'c']);
  t.ok(parts[0]?.data.equals(bin));
  t.ok(parts[1]?.data.equals(big));
  t.equal(parts[2]?.data.length, 0);
});

t.test('what both read alike', async (t) => {
  t.same(await both(t, Buffer.from('--zzz--\r\n')), [], 'no parts at all');
  t.equal(((await both(t, body('a preamble\r\n', part('a', '1'), '--zzz--\r\nan epilogue\r\n--zzz\r\n'))) as Part[]).length, 1, 'preamble and epilogue are left out');
  t.equal(((await both(t, body(part('b', '1', '; filename="n"').replace('name="b"; filename="n"', 'filename="n"; name="b"'), '--zzz--'))) as Part[])[0]?.name, 'b', 'name is not read out of filename=');
  t.equal(((await both(t, body('--a b\r\ncontent-disposition: form-data; name="x"\r\n\r\n1\r\n--a b--'), 'a b')) as Part[])[0]?.name, 'x', 'a boundary with a space (quoted in the content type)');
  t.equal(((await both(t, body(part('a', ''), '--zzz--'))) as Part[])[0]?.data.length, 0, 'an empty value');
});

t.test('malformed bodies are a 400 from both', async (t) => {
  const cases: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['another boundary', body(part('a', '1').replaceAll('zzz', 'yyy'), '--yyy--')],
    ['no closing delimiter', body(part('a', '1'))],
    ['cut short in a part', body(part('a', '1'), '--zzz\r\ncontent-disposition: form-data; name="b"\r\n\r\nhal')],
    ['a part without a name', body('--zzz\r\ncontent-disposition: form-data\r\n\r\n1\r\n--zzz--')],
    ['a part without Content-Disposition', body('--zzz\r\ncontent-type: text/plain\r\n\r\n1\r\n--zzz--')],
    ['a header without its blank line', body(part('a', '1'), '--zzz\r\ncontent-disposition: form-data; name="b"\r\n2\r\n', part('c', '3'), '--zzz--')],
    ['bare LF line ends', Buffer.from('--zzz\ncontent-disposition: form-data; name="a"\n\n1\n--zzz--\n')],
    ['the boundary inside a part', body(part('a', 'x--zzz y'), '--zzz--')],
    ['a delimiter followed by junk', body(part('a', '1'), '--zzzX\r\n', '--zzz--')],
    ['a preamble running into the first delimiter', body('preamble', part('a', '1'), '--zzz--')],
    [`more than ${MAX_PARTS} parts`, body(...Array.from({ length: MAX_PARTS + 1 }, (_, i) => part(`f${i}`, String(i))), '--zzz--')],
  ];
  for (const [name, bytes] of cases) t.equal(await both(t, bytes), 'VALIDATION_ERROR', name);
  t.equal(((await both(t, body(...Array.from({ length: MAX_PARTS }, (_, i) => part(`f${i}`, String(i))), '--zzz--'))) as Part[]).length, MAX_PARTS, `${MAX_PARTS} parts are fine`);
});

t.test('a body busboy never finishes reading is a 400, not a hang', async (t) => {
  // A file part without data, then a delimiter followed by a broken header: busboy 1.6.0 neither ends nor fails.
  const bytes = body('--zzz\r\ncontent-disposition: form-data; name="f"; filename="x"\r\n\r\n--zzz\r\n--zzx\n\r\n--zzz--\r\n');
  const started = Date.now();
  t.equal(await both(t, bytes), 'VALIDATION_ERROR');
  t.ok(Date.now() - started < 5_000, 'answered within the stall limit');
});

t.test('transports read parts ahead; requests handed over directly use getParts', async (t) => {
  const bytes = body(part('a', '1'), '--zzz--');
  const request = (b: Buffer): HttpRequest & MultipartSource => ({ method: 'POST', path: '/', query: '', headers: { 'content-type': 'multipart/form-data; boundary=zzz' }, body: b, remoteAddress: '' });
  const direct = request(bytes);
  t.equal(partsOf(direct, 'zzz')[0]?.name, 'a', 'nothing attached: getParts');

  const lazy = request(bytes);
  t.equal(readPartsAhead(lazy, native), undefined, 'with getParts nothing to wait for');
  t.equal(partsOf(lazy, 'zzz')[0]?.name, 'a');

  const ahead = request(bytes);
  const reading = readPartsAhead(ahead);
  t.ok(reading instanceof Promise, 'busboy reads now');
  await reading;
  t.equal(partsOf(ahead, 'zzz')[0]?.name, 'a');

  const broken = request(body(part('a', '1')));
  await readPartsAhead(broken);
  let thrown: unknown;
  try {
    partsOf(broken, 'zzz');
  } catch (error) {
    thrown = error;
  }
  t.match(thrown, { status: 400, body: { code: 'VALIDATION_ERROR' } }, 'the 400 is thrown when the front collects the fields');

  const plain = { ...request(bytes), headers: { 'content-type': 'application/json' } };
  t.equal(readPartsAhead(plain), undefined, 'not multipart: nothing to do');
  t.equal(plain.parts, undefined);
});

const uws = loadUws();
t.test('a uWebSockets.js build without getParts reads parts with busboy', { skip: uws instanceof Error ? 'uWebSockets.js cannot load here' : false }, async (t) => {
  if (uws instanceof Error) return;
  // The front as the server sees it: it answers with the parts it is handed.
  const front = {
    headerNames: 'all',
    addressPaths: new Set<string>(),
    uploadPlan: () => undefined,
    async handle(req: HttpRequest & MultipartSource) {
      const names = (req.parts?.() ?? []).map((p) => `${p.name}=${p.data.toString()}`); // read ahead, not by getParts here
      return { status: 200, headers: { 'content-type': 'text/plain' }, body: names.join('&') };
    },
  } as unknown as Front;
  const server = await listenUws({ ...uws, getParts: undefined } as unknown as typeof uws, front, { host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 });
  t.teardown(() => server.close());
  const res = await fetch(`http://127.0.0.1:${server.port}/`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=zzz' }, body: body(part('a', '1'), part('b', '2'), '--zzz--') });
  t.equal(await res.text(), 'a=1&b=2');
});
