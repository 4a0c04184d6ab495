// The sv client's policy against real HTTP servers in this process (node:http): what is retried and what is
// not, the circuit, rpc_timeout, keep-alive, forwarded headers; the boundary codec; registration and hooks.
import t from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SvClient, SV_DEFAULTS, encodeBoundary, rehydrate, RemoteWalker, BoundaryError, freePortInRange, PORT_RANGE, urlVariable, moduleFile } from '../../../transports/sv/index.ts';
import { Walker, T } from 'svc';
import { Money } from '../../fixtures/sv/money.ts';

interface Provider {
  url: string;
  port: number;
  requests: { path: string; headers: IncomingMessage['headers']; body: string }[];
  connections: number;
  server: Server;
  close(): Promise<void>;
}

/** A provider that answers with `answer` (an svc envelope by default); counts requests and connections. */
async function provider(answer: (req: IncomingMessage, body: string, res: ServerResponse) => void, port = 0): Promise<Provider> {
  const requests: Provider['requests'] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      answer(req, body, res);
    });
  });
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  const p: Provider = {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    requests,
    get connections() {
      return connections;
    },
    server,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return p;
}

function ok(result: unknown): (req: IncomingMessage, body: string, res: ServerResponse) => void {
  return (_req, _body, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true, type: 'response', data: { result, reports: [] }, error: null, meta: { request_id: 'r' } }));
  };
}

function failWith(status: number, code: string): (req: IncomingMessage, body: string, res: ServerResponse) => void {
  return (_req, _body, res) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: false, type: 'response', data: null, error: { code, message: `it says ${code}` }, meta: { request_id: 'r' } }));
  };
}

/** A port nothing listens on (taken from the OS, then let go). */
async function closedPort(): Promise<number> {
  const p = await provider(ok(null));
  await p.close();
  return p.port;
}

function client(settings: Partial<typeof SV_DEFAULTS> = {}): SvClient {
  const c = new SvClient();
  c.bind({ baseDir: process.cwd(), settings: { ...SV_DEFAULTS, retryBackoffMs: 5, autoStart: false, ...settings } });
  return c;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; status: number; message: string; details: any }> {
  try {
    await p;
  } catch (error) {
    return error as { code: string; status: number; message: string; details: any };
  }
  throw new Error('the call did not fail');
}

t.test('a function call posts its arguments and resolves to the result; the envelope and headers are as an svc provider expects', async (t) => {
  const p = await provider(ok({ charged: 5 }));
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', `${p.url}/`);
  t.same(await c.callFunction('billing', 'charge', { amount: 5 }, { authorization: 'Bearer abc', traceId: 'trace-1' }), { charged: 5 });
  const req = p.requests[0]!;
  t.equal(req.path, '/function/charge');
  t.same(JSON.parse(req.body), { amount: 5 });
  t.equal(req.headers['content-type'], 'application/json');
  t.equal(req.headers['x-svc-sv'], '1');
  t.equal(req.headers.authorization, 'Bearer abc', 'the Authorization header is forwarded');
  t.equal(req.headers['x-trace-id'], 'trace-1', 'the trace id is propagated');
  // Outside any run and without options: no Authorization, no trace id made up.
  await c.callFunction('billing', 'charge', { amount: 1 });
  t.equal(p.requests[1]!.headers.authorization, undefined);
  t.equal(p.requests[1]!.headers['x-trace-id'], undefined);
});

t.test('keep-alive: sequential calls reuse their connections', async (t) => {
  const p = await provider(ok(1));
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', p.url);
  for (let i = 0; i < 20; i++) await c.callFunction('billing', 'charge', {});
  t.equal(p.requests.length, 20);
  t.ok(p.connections <= 2, `20 calls reuse their connections (${p.connections} opened)`);
});

t.test('a walker call resolves to the walker: the fields it was spawned with, reports rebuilt; nothing of the answer becomes its prototype', async (t) => {
  const p = await provider((_req, _body, res) => {
    res.setHeader('content-type', 'application/json');
    const data = { result: null, reports: [{ $class: 'Money', amount: 3, currency: 'EUR' }, { id: 'a'.repeat(32), type: 'Bill', context: { amount: 3 } }], walker: { __proto__: { isAdmin: true }, amount: 99 } };
    res.end(JSON.stringify({ ok: true, type: 'response', data, error: null, meta: { request_id: 'r' } }).replace('"walker":{', '"walker":{"__proto__":{"isAdmin":true},'));
  });
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', p.url);
  const types = new Map([['Money', Money]]);
  const invoice = (await c.spawnWalker('billing', 'Invoice', { amount: 3, note: 'x' }, undefined, { types })) as RemoteWalker & { amount: number; note: string; isAdmin?: boolean };
  t.equal(invoice.constructor.name, 'Invoice');
  t.ok(invoice instanceof RemoteWalker);
  t.equal(invoice.amount, 3, 'the fields it was spawned with');
  t.equal(invoice.note, 'x');
  t.equal(invoice.isAdmin, undefined, 'nothing the provider sends besides its reports lands on the walker');
  t.ok(invoice.reports[0] instanceof Money, 'a class instance rebuilt');
  t.equal((invoice.reports[0] as Money).double().amount, 6);
  t.same(invoice.reports[1], { id: 'a'.repeat(32), type: 'Bill', context: { amount: 3 } }, 'a node arrives in its wire form');
});

t.test('an answer too deep to rebuild, or too large, fails the call (never a crash)', async (t) => {
  const deep = `{"ok":true,"data":{"result":${'['.repeat(20000)}${']'.repeat(20000)},"reports":[]}}`;
  const p = await provider((_req, _body, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(deep);
  });
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', p.url);
  const e = await failure(c.callFunction('billing', 'deep', {}));
  t.equal(e.code, 'SV_CALL_FAILED');
  t.match(e.message, /the answer cannot be read/);
});

t.test('an error envelope: SV_CALL_FAILED (502) with the seed message and the provider status and code; never retried', async (t) => {
  const p = await provider(failWith(400, 'VALIDATION_ERROR'));
  t.teardown(() => p.close());
  const c = client({ retries: 3 });
  t.teardown(() => c.close());
  c.register('billing', p.url);
  const e = await failure(c.callFunction('billing', 'charge', {}));
  t.equal(e.code, 'SV_CALL_FAILED');
  t.equal(e.status, 502);
  t.equal(e.message, "sv-to-sv RPC 'billing.charge' failed: VALIDATION_ERROR: it says VALIDATION_ERROR");
  t.same(e.details.provider, { status: 400, code: 'VALIDATION_ERROR' });
  const w = await failure(c.spawnWalker('billing', 'Invoice', {}));
  t.match(w.message, /^sv-to-sv walker spawn 'billing\.Invoice' failed: VALIDATION_ERROR/);
  t.equal(p.requests.length, 2, 'one request each: an answer is never retried');
});

t.test('a 500 or 503 answer is not retried (the request reached the provider)', async (t) => {
  for (const status of [500, 503]) {
    const p = await provider(failWith(status, 'BOOM'));
    const c = client({ retries: 3 });
    c.register('billing', p.url);
    const e = await failure(c.callFunction('billing', 'charge', {}));
    t.equal(e.code, 'SV_CALL_FAILED', `${status}`);
    t.equal(p.requests.length, 1, `${status}: one request`);
    await c.close();
    await p.close();
  }
});

t.test('connection refused is retried (before sending: it cannot run twice), then fails with the transport error', async (t) => {
  const port = await closedPort();
  const c = client({ retries: 2 });
  t.teardown(() => c.close());
  c.register('billing', `http://127.0.0.1:${port}`);
  const e = await failure(c.callFunction('billing', 'charge', {}));
  t.equal(e.code, 'SV_CALL_FAILED');
  t.equal(e.details.attempts, 3, 'the first try and two retries');
  t.equal(e.details.transport, 'ECONNREFUSED');
  t.match(e.message, /^sv-to-sv RPC 'billing\.charge' failed: .*ECONNREFUSED/);
});

t.test('a connection reset after the request was sent is not retried', async (t) => {
  const p = await provider((req) => req.socket.destroy());
  t.teardown(() => p.close());
  const c = client({ retries: 3 });
  t.teardown(() => c.close());
  c.register('billing', p.url);
  const e = await failure(c.callFunction('billing', 'charge', { amount: 1 }));
  t.equal(e.code, 'SV_CALL_FAILED');
  t.equal(p.requests.length, 1, 'the provider saw the call once');
  t.equal(e.details.attempts, 1);
});

t.test('rpc_timeout: a provider that does not answer fails the call with SV_TIMEOUT (504); the request is aborted', async (t) => {
  let aborted!: () => void;
  const gone = new Promise<void>((resolve) => (aborted = resolve));
  const p = await provider((req) => req.socket.on('close', aborted));
  t.teardown(() => p.close());
  const c = client({ rpcTimeoutMs: 5_000 });
  t.teardown(() => c.close());
  c.register('billing', p.url, { rpcTimeout: 0.2 });
  const started = Date.now();
  const e = await failure(c.callFunction('billing', 'slow', {}));
  t.equal(e.code, 'SV_TIMEOUT');
  t.equal(e.status, 504);
  t.match(e.message, /^sv-to-sv RPC 'billing\.slow' failed: no answer within rpc_timeout \(200 ms\)/);
  t.ok(Date.now() - started < 4_000, 'the per-service timeout, not the default');
  await gone;
  t.pass('the provider saw the request end');
});

t.test('rpc_timeout bounds the whole call: an answer that trickles in is cut at the deadline', async (t) => {
  const timers = new Set<NodeJS.Timeout>();
  const p = await provider((_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"ok":true,"data":{"result":"');
    const tick = setInterval(() => res.write('x'), 50);
    timers.add(tick);
    res.on('close', () => clearInterval(tick));
  });
  t.teardown(async () => {
    for (const x of timers) clearInterval(x);
    await p.close();
  });
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', p.url, { rpcTimeout: 0.3 });
  const started = Date.now();
  const e = await failure(c.callFunction('billing', 'trickle', {}));
  t.equal(e.code, 'SV_TIMEOUT');
  t.ok(Date.now() - started < 2_000, `cut at the deadline (${Date.now() - started} ms), not left to idle timeouts`);
});

t.test('the circuit: consecutive failures open it, calls then fail fast without a request; after half-open a good call closes it', async (t) => {
  const port = await closedPort();
  const c = client({ retries: 0, breakerFailures: 3, breakerHalfOpenMs: 300 });
  t.teardown(() => c.close());
  c.register('billing', `http://127.0.0.1:${port}`);
  t.equal(c.circuit('billing'), 'none');
  for (let i = 0; i < 3; i++) t.equal((await failure(c.callFunction('billing', 'charge', {}))).code, 'SV_CALL_FAILED', `failure ${i + 1}`);
  t.equal(c.circuit('billing'), 'open');
  const p = await provider(ok('back'), port);
  t.teardown(() => p.close());
  // Walkers share the function's circuit.
  const fast = await failure(c.spawnWalker('billing', 'Invoice', {}));
  t.equal(fast.code, 'SV_UNAVAILABLE');
  t.equal(fast.status, 503);
  t.equal(fast.message, "sv-to-sv walker spawn 'billing.Invoice' failed: circuit open: billing failed 3 times in a row; calls fail fast until a trial call succeeds");
  t.equal(p.requests.length, 0, 'no request while open');
  const openedAt = Date.now();
  // The half-open delay is the condition itself: wait it out once.
  await new Promise((resolve) => setTimeout(resolve, 350));
  t.ok(Date.now() - openedAt >= 300);
  t.equal(await c.callFunction('billing', 'charge', {}), 'back', 'the trial call goes through');
  t.equal(c.circuit('billing'), 'closed');
});

t.test('502/503/504 answers count against the circuit', async (t) => {
  const p = await provider(failWith(503, 'UNAVAILABLE'));
  t.teardown(() => p.close());
  const c = client({ breakerFailures: 2 });
  t.teardown(() => c.close());
  c.register('billing', p.url);
  await failure(c.callFunction('billing', 'a', {}));
  await failure(c.callFunction('billing', 'b', {}));
  t.equal((await failure(c.callFunction('billing', 'c', {}))).code, 'SV_UNAVAILABLE');
  t.equal(p.requests.length, 2);
});

t.test('the boundary: what crosses, what is refused (before any request), what is rebuilt', async (t) => {
  const p = await provider(ok(null));
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  c.register('billing', p.url);
  const value = { n: 1.5, s: 'x', b: true, nil: null, list: [1, [2, { k: 'v' }]], rec: { a: { b: 'c' } }, money: new Money(2, 'USD'), when: new Date(0), map: new Map([['k', 1]]), set: new Set([1, 2]), skip: undefined };
  t.same(encodeBoundary(value), { n: 1.5, s: 'x', b: true, nil: null, list: [1, [2, { k: 'v' }]], rec: { a: { b: 'c' } }, money: { amount: 2, currency: 'USD' }, when: '1970-01-01T00:00:00.000Z', map: { k: 1 }, set: [1, 2] });
  class Probe extends Walker {
    static has = T.Object({ q: T.String() });
    declare q: string;
  }
  const walker = Object.assign(new Probe(), { q: 'hi' });
  t.same(encodeBoundary({ w: walker }), { w: { q: 'hi' } }, 'a walker crosses as its declared fields');
  const refused: [string, unknown, RegExp][] = [
    ['function', { f: () => 1 }, /args\.f is a function/],
    ['symbol', { s: Symbol('x') }, /symbol/],
    ['bigint', { b: 1n }, /bigint/],
    ['NaN', { n: Number.NaN }, /NaN/],
    ['Infinity', { n: Infinity }, /Infinity/],
    ['promise', { p: Promise.resolve(1) }, /promise/],
    ['buffer', { b: Buffer.from('x') }, /binary data/],
    ['socket-like handle', { h: p.server }, /handle/],
    ['cycle', (() => { const o: Record<string, unknown> = {}; o.self = o; return { o }; })(), /contains itself/],
    ['a Map with an object key', { m: new Map([[{}, 1]]) }, /string keys/],
  ];
  for (const [what, args, message] of refused) {
    t.throws(() => encodeBoundary(args), message, what);
    const e = await failure(c.callFunction('billing', 'echo', args as Record<string, unknown>));
    t.equal(e.code, 'SV_BOUNDARY', `${what}: SV_BOUNDARY`);
    t.match(e.message, /^sv-to-sv RPC 'billing\.echo' failed: .*\(nothing was sent\)$/);
  }
  t.throws(() => encodeBoundary({ deep: JSON.parse('['.repeat(70) + ']'.repeat(70)) }), BoundaryError);
  t.equal(p.requests.length, 0, 'nothing refused reached the provider');
  // Receiving: known classes rebuilt recursively, unknown ones stay records, nothing else touched.
  const back = rehydrate({ a: { $class: 'Money', amount: 1, currency: 'EUR', inner: [{ $class: 'Money', amount: 2, currency: 'EUR' }] }, b: { $class: 'Nope', x: 1 }, c: [1, 'two', null] }, new Map([['Money', Money]])) as any;
  t.ok(back.a instanceof Money);
  t.ok(back.a.inner[0] instanceof Money);
  t.equal(back.a.double().amount, 2);
  t.same(back.b, { x: 1 });
  t.notOk('$class' in back.a);
  t.same(back.c, [1, 'two', null]);
  // A provider's answer cannot change prototypes.
  const hostile = rehydrate(JSON.parse('{"__proto__":{"polluted":true},"a":{"$class":"Money","__proto__":{"polluted":true},"amount":1}}'), new Map([['Money', Money]])) as any;
  t.equal(({} as any).polluted, undefined, 'no global pollution');
  t.equal(hostile.polluted, undefined, 'the record keeps its prototype');
  t.ok(Object.hasOwn(hostile, '__proto__'), '__proto__ stays a field');
  t.ok(hostile.a instanceof Money);
  t.equal(hostile.a.polluted, undefined);
});

t.test('resolution: registered, else SVC_SV_<MODULE>_URL, else auto-start (here off): SV_UNKNOWN_SERVICE', async (t) => {
  const p = await provider(ok('env'));
  t.teardown(() => p.close());
  const c = client();
  t.teardown(() => c.close());
  t.equal(urlVariable('user-search'), 'SVC_SV_USER_SEARCH_URL');
  t.throws(() => c.resolveUrl('nowhere'), /no URL for service nowhere: call sv\.register\('nowhere', url\), set SVC_SV_NOWHERE_URL/);
  const e = await failure(c.callFunction('nowhere', 'x', {}));
  t.equal(e.code, 'SV_UNKNOWN_SERVICE');
  t.match(e.message, /^sv-to-sv RPC 'nowhere\.x' failed: no URL for service nowhere/);
  process.env.SVC_SV_ENVMOD_URL = `${p.url}/`;
  t.teardown(() => delete process.env.SVC_SV_ENVMOD_URL);
  t.equal(c.resolveUrl('envmod'), p.url);
  t.equal(await c.callFunction('envmod', 'x', {}), 'env');
  c.register('envmod', 'http://127.0.0.1:1');
  t.equal(c.resolveUrl('envmod'), 'http://127.0.0.1:1', 'registered wins over the environment');
  t.ok(c.unregister('envmod'));
  t.equal(c.resolveUrl('envmod'), p.url);
  t.throws(() => c.register('../etc', p.url), /module name/);
  t.throws(() => c.register('billing', 'ftp://x'), /http/);
  t.throws(() => c.register('billing', 'http://u:p@x'), /credentials/);
  t.ok(moduleFile('billing', new URL('../../fixtures/sv/', import.meta.url).pathname)?.endsWith('billing.ts'));
  t.equal(moduleFile('nothing', process.cwd()), undefined);
});

t.test('hooks: ensureSvService is asked once for concurrent calls and must register; svServiceCall can be replaced and restored', async (t) => {
  const p = await provider(ok('started'));
  t.teardown(() => p.close());
  const c = new SvClient();
  c.bind({ baseDir: '/base', settings: { ...SV_DEFAULTS } });
  t.teardown(() => c.close());
  const asked: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const undo = c.plugin({
    async ensureSvService(module, basePath) {
      asked.push(`${module}@${basePath}`);
      await gate;
      c.register(module, p.url);
    },
  });
  const calls = Array.from({ length: 5 }, () => c.callFunction('lazy', 'f', {}));
  release();
  t.same(await Promise.all(calls), Array(5).fill('started'));
  t.same(asked, ['lazy@/base'], 'one ensure for five concurrent calls');
  const forgetful = c.plugin({ ensureSvService: async () => undefined });
  const e = await failure(c.callFunction('other', 'f', {}));
  t.match(e.message, /ended without sv\.register\('other', url\)/);
  forgetful();
  undo();
  const restore = c.plugin({ svServiceCall: async (module, fn) => `${module}.${fn} by plugin` });
  t.equal(await c.hooks.svServiceCall('m', 'f', {}), 'm.f by plugin');
  restore();
  t.equal(c.hooks.svServiceCall, c.defaults.svServiceCall);
  t.throws(() => c.plugin({ nope: () => 1 } as never), /unknown hook/);
});

t.test('test clients stand in for a provider (no socket)', async (t) => {
  const c = client();
  t.teardown(() => c.close());
  const seen: { url: string; headers?: Record<string, string> }[] = [];
  c.registerTestClient('billing', {
    async inject(req) {
      seen.push(req);
      return { status: 200, json: () => ({ ok: true, data: { result: 'injected', reports: [] } }) };
    },
  });
  t.equal(await c.callFunction('billing', 'charge', { amount: 1 }, { traceId: 't' }), 'injected');
  t.equal(seen[0]!.url, '/function/charge');
  t.equal(seen[0]!.headers?.['x-trace-id'], 't');
  t.ok(c.unregisterTestClient('billing'));
  c.registerTestClient('a', { inject: async () => ({ status: 200, json: () => ({ ok: true, data: { result: 1 } }) }) });
  c.clearTestClients();
  t.equal((await failure(c.callFunction('a', 'f', {}))).code, 'SV_UNKNOWN_SERVICE');
  t.throws(() => c.registerTestClient('x', {} as never), /inject/);
});

t.test('auto-start ports are free ports in 18000-18999', async (t) => {
  const port = await freePortInRange();
  t.ok(port >= PORT_RANGE.from && port <= PORT_RANGE.to);
  t.not(await freePortInRange(undefined, new Set([port])), port);
});
