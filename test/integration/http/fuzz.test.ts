// Random and malformed requests against every endpoint in /openapi.json (built-ins included):
// no 5xx but the walker-thrown ones, always an envelope, and the server stays up.
import t from 'tap';
import { startServer, tokenFor, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 100_000);
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 40);

/** mulberry32: a small seeded generator, so a failing run can be replayed with FUZZ_SEED. */
function rng(s: number): () => number {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;

const STRINGS = ['', 'a', '0', '-1', '3.14', 'true', 'null', '{}', '[]', '\u0000', '💥', 'ﬀ', '../../etc/passwd', '%2e%2e%2f', "'; DROP TABLE anchors;--", 'x'.repeat(5000), '\uD800'];

function value(depth = 0): unknown {
  const r = rand();
  if (depth > 4 || r < 0.25) return pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 0.5, true, false, null]);
  if (r < 0.5) return pick(STRINGS);
  if (r < 0.7) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < Math.floor(rand() * 4); i++) o[pick(['msg', 'times', 'a', 'b', 'text', 'value', 'name', 'file', 'q', '__proto__', 'constructor', 'request', 'headers', 'x'])] = value(depth + 1);
  return o;
}

function body(): string | Uint8Array {
  const r = rand();
  if (r < 0.15) return Uint8Array.from({ length: Math.floor(rand() * 64) }, () => Math.floor(rand() * 256));
  if (r < 0.3) return JSON.stringify(value()).slice(0, Math.floor(rand() * 20));
  if (r < 0.35) return '['.repeat(5000) + ']'.repeat(5000);
  if (r < 0.4) return `{"a":${'['.repeat(3000)}}`;
  return JSON.stringify(value());
}

function segment(): string {
  return encodeURIComponent(pick([...STRINGS.filter((s) => s && !s.includes('\uD800')), 'abc', '42', '0'.repeat(32), 'f'.repeat(32)]));
}

let server: Server;
t.before(async () => {
  server = await startServer({ entry, workers: 2 });
});
t.teardown(() => server.stop());

t.test(`fuzz every endpoint (seed ${seed})`, async (t) => {
  const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const token = await tokenFor('fuzzer', { server });
  const endpoints = Object.entries(spec.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => [m.toUpperCase(), path] as const));
  t.ok(endpoints.length > 10, `${endpoints.length} endpoints`);
  const allowed5xx = new Set(['/walker/Boom', '/function/failing', '/walker/BadReport']);
  let requests = 0;
  const problems: string[] = [];
  for (const [method, template] of endpoints) {
    for (let i = 0; i < ROUNDS; i++) {
      const path = template.replace(/\{[^}]+\}/g, () => segment());
      const query = rand() < 0.5 ? `?${pick(['q', 'limit', 'exact', 'msg', 'x'])}=${segment()}&${segment()}=${segment()}` : '';
      const headers: Record<string, string> = {};
      if (rand() < 0.5) headers.authorization = rand() < 0.7 ? `Bearer ${token}` : `Bearer ${pick(['x', 'a.b.c', token.slice(0, -3) + 'AAA'])}`;
      if (rand() < 0.7) headers['content-type'] = pick(['application/json', 'text/plain', 'multipart/form-data; boundary=zzz', 'application/x-www-form-urlencoded']);
      const send = method === 'GET' || method === 'HEAD' ? undefined : body();
      let res: Response;
      try {
        res = await fetch(`${server.url}${path}${query}`, { method, headers, body: send });
      } catch (error) {
        problems.push(`${method} ${path}: request failed: ${(error as Error).message}`);
        continue;
      }
      requests++;
      const text = await res.text();
      const template500 = allowed5xx.has(template.replace('/{node_id}', ''));
      if (res.status >= 500 && !(template500 && res.status === 500)) problems.push(`${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
      if ((res.headers.get('content-type') ?? '').includes('json') && res.status >= 400) {
        const env = JSON.parse(text) as { ok: boolean; error: { code: string } };
        if (env.ok !== false || typeof env.error?.code !== 'string') problems.push(`${method} ${path} → ${res.status} without an error envelope`);
      }
    }
  }
  t.same(problems, [], `${requests} requests: no unexpected 5xx, no dropped connection`);
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'still up');
  t.equal(server.proc.exitCode, null, 'never crashed');
});
