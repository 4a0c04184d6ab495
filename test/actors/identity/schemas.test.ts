// One source of truth for identity input: the schema a route documents in /openapi.json is the
// one its body is validated with. In process, no server: the routes' handlers are called directly.
import t from 'tap';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { ActorSystem } from 'svc/kernel';
import { Authenticator, checkProfile, FIELD_MAX, IDENTITY_BODIES, IdentityService, JwtVerifier, Passwords, RevocationTable } from '../../../actors/identity/index.ts';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';
import { type BuiltinContext, type BuiltinRoute, identityRoutes, openApiDocument } from '../../../transports/http/index.ts';

const SECRET = 'schemas-test-secret-schemas-test-secret';
const PASSWORD = 'correct horse battery staple';

// A hasher that does no work: what is checked here is input, not hashing.
const fakeHasher = {
  run: async (job: { op: string; password: string; stored?: string }) => (job.op === 'hash' ? `$argon2id$v=19$m=19456,t=2,p=1$fake$${job.password}` : job.stored === `$argon2id$v=19$m=19456,t=2,p=1$fake$${job.password}`),
};
const allowAll = { hit: async () => ({ allowed: true, retryAfterMs: 0 }), peek: async () => ({ allowed: true, retryAfterMs: 0 }), refund: () => undefined };

const system = new ActorSystem();
const users = new MemoryUsersRepository();
t.teardown(async () => {
  await system.shutdown();
  await users.close();
});
const service = new IdentityService({
  users,
  passwords: new Passwords(fakeHasher),
  system,
  revocations: new RevocationTable(),
  limiter: allowAll,
  createRoot: async () => undefined,
  dropRoot: async () => 0,
  emailer: undefined,
  emailDisabledReason: 'no mail here',
  jwt: { secret: SECRET, algorithm: 'HS256', expDays: 1 },
  auth: {
    verify_token_ttl_seconds: 60,
    reset_token_ttl_seconds: 60,
    verify_url_template: '',
    reset_url_template: '',
    login_attempts_per_identity: 100,
    login_attempts_per_address: 100,
    login_successes_per_identity: 100,
    register_attempts_per_address: 100,
    forgot_attempts_per_identity: 100,
    rate_window_seconds: 60,
  },
  adminSessionHours: 1,
  log: () => undefined,
});
const routes = identityRoutes(service, new Authenticator(new JwtVerifier({ secret: SECRET, algorithm: 'HS256' })));

function route(method: string, path: string): BuiltinRoute {
  const found = routes.find((r) => r.method === method && r.path === path);
  if (!found) throw new Error(`no route ${method} ${path}`);
  return found;
}

/** Call a route's handler as the front would, with `body` as the parsed JSON body. */
async function call(r: BuiltinRoute, body: unknown, userId = 'nobody'): Promise<unknown> {
  const ctx = { req: { method: r.method, path: r.path, query: '', headers: {}, body: Buffer.alloc(0), remoteAddress: '203.0.113.9' }, params: { username: 'schema_admin' }, body: () => body as Record<string, unknown>, claims: { user_id: userId }, token: '', traceId: 't' } satisfies BuiltinContext;
  return r.handler(ctx);
}

t.test('each route documents, in /openapi.json, the very schema its body is checked with', async (t) => {
  const spec = openApiDocument([], { title: 'svc', version: '0' }, routes) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>> };
  const nameOf = new Map<unknown, string>(Object.entries(IDENTITY_BODIES).map(([name, check]) => [check.schema, name]));
  const used: string[] = [];
  for (const r of routes.filter((r) => r.doc?.body)) {
    const name = nameOf.get(r.doc?.body);
    t.ok(name, `${r.method} ${r.path}: doc.body is IDENTITY_BODIES.${name}.schema`);
    used.push(name as string);
    const documented = spec.paths[r.path]?.[r.method.toLowerCase()]?.requestBody?.content['application/json']?.schema;
    t.same(documented, JSON.parse(JSON.stringify(r.doc?.body)), `${r.method} ${r.path}: /openapi.json shows it`);
  }
  t.same(used.sort(), Object.keys(IDENTITY_BODIES).sort(), 'each body check documents one route');
  t.match(IDENTITY_BODIES.register.schema, { required: ['identities', 'credential'], properties: { identities: { items: { properties: { value: { maxLength: FIELD_MAX.identity } } } } } }, 'with the field limits');
  t.match(IDENTITY_BODIES.refreshToken.schema, { properties: { token: { maxLength: FIELD_MAX.jwt } } });
});

/** Bodies near a good one: each field missing, of another type, empty, or one past its limit. */
function variants(good: Record<string, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [];
  const walk = (value: unknown, path: string[], set: (v: unknown) => unknown) => {
    const label = path.join('.');
    if (path.length > 0) {
      out.push([`${label} missing`, set(undefined)], [`${label} a number`, set(3)], [`${label} null`, set(null)], [`${label} an array`, set([])]);
    }
    if (typeof value === 'string') out.push([`${label} empty`, set('')], [`${label} too long`, set('x'.repeat(FIELD_MAX.jwt + 1))]);
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)], (x) => set(value.map((y, j) => (j === i ? x : y)))));
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        walk(v, [...path, k], (x) => {
          const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
          if (x === undefined) delete copy[k];
          else copy[k] = x;
          return set(copy);
        });
      }
    }
  };
  walk(good, [], (x) => x);
  return out;
}

t.test('a body the documented schema refuses is refused by the route with VALIDATION_ERROR (never coerced)', async (t) => {
  const { user_id: userId } = await service.register({ identities: [{ type: 'username', value: 'schema_user' }, { type: 'email', value: 'schema@example.com' }], credential: { type: 'password', password: PASSWORD } });
  await service.createUser({ username: 'schema_admin', password: PASSWORD, role: 'admin' });
  const goods: [string, string, Record<string, unknown>][] = [
    ['POST', '/user/register', { identities: [{ type: 'username', value: 'fresh_one' }], credential: { type: 'password', password: PASSWORD }, profile: { bio: 'hi', age: 3, beta: true } }],
    ['POST', '/user/login', { identity: { type: 'username', value: 'schema_user' }, credential: { type: 'password', password: PASSWORD } }],
    ['POST', '/admin/login', { username: 'schema_admin', password: PASSWORD }],
    ['POST', '/user/refresh-token', { token: 'a.b.c' }],
    ['PUT', '/user/password', { current_password: PASSWORD, new_password: 'another good passphrase' }],
    ['POST', '/user/add-identity', { identity: { type: 'email', value: 'second@example.com' }, is_recovery: true }],
    ['POST', '/user/forgot-password', { identity: { type: 'email', value: 'schema@example.com' } }],
    ['POST', '/user/reset-password', { token: 'some-token', new_password: PASSWORD }],
    ['POST', '/user/verify-identity', { token: 'some-token' }],
    ['POST', '/admin/users', { username: 'made_by_admin', email: 'made@example.com', role: 'user', password: PASSWORD, profile: { team: 'blue' } }],
    ['PUT', '/admin/users/{username}', { role: 'admin', status: 'active', profile: { team: 'red' } }],
  ];
  let refused = 0;
  for (const [method, path, good] of goods) {
    const r = route(method, path);
    const schema = r.doc?.body as unknown as TSchema;
    t.ok(Value.Check(schema, good), `${path}: the good body fits its schema`);
    for (const [what, body] of variants(good)) {
      if (Value.Check(schema, body)) continue;
      refused++;
      const error = await call(r, body, userId).then(
        () => undefined,
        (e: { code?: string; status?: number; details?: { field: string }[] }) => e,
      );
      t.match(error, { code: 'VALIDATION_ERROR', status: 400, details: [{ field: String }] }, `${method} ${path}, ${what}: 400 VALIDATION_ERROR`);
    }
  }
  t.ok(refused > 60, `${refused} refused bodies`);
});

t.test('the first wrong field is named as the routes always named it', async (t) => {
  const cred = { type: 'password', password: PASSWORD };
  const register = route('POST', '/user/register');
  const cases: [unknown, string][] = [
    [{ credential: cred }, 'identities'],
    [{ identities: [], credential: cred }, 'identities'],
    [{ identities: [{ type: 'sso', value: 'x' }], credential: cred }, 'identities[0].type'],
    [{ identities: [{ type: 'username', value: 3 }], credential: cred }, 'identities[0].value'],
    [{ identities: [{ type: 'username', value: 'ab' }], credential: cred }, 'identities[0].value'],
    [{ identities: [{ type: 'username', value: 'x'.repeat(FIELD_MAX.identity + 1) }], credential: cred }, 'identities[0].value'],
    [{ identities: [{ type: 'username', value: 'bobby' }] }, 'credential'],
    [{ identities: [{ type: 'username', value: 'bobby' }], credential: { type: 'otp', password: PASSWORD } }, 'credential.type'],
    [{ identities: [{ type: 'username', value: 'bobby' }], credential: { type: 'password', password: 12345678 } }, 'credential.password'],
    [{ identities: [{ type: 'username', value: 'bobby' }], credential: cred, profile: { bio: 'x'.repeat(1025) } }, 'profile.bio'],
    [{ identities: [{ type: 'username', value: 'bobby' }], credential: cred, profile: { nested: { a: 1 } } }, 'profile.nested'],
    [{ identities: [{ type: 'username', value: 'bobby' }], credential: cred, profile: { sso: 'forged' } }, 'profile.sso'],
    // Two wrong fields: the first in the documented order.
    [{ identities: [{ type: 'sso' }], credential: 3 }, 'identities[0].type'],
  ];
  for (const [body, field] of cases) {
    await t.rejects(call(register, body), { code: 'VALIDATION_ERROR', status: 400, details: [{ field }] }, `${JSON.stringify(body).slice(0, 80)} → ${field}`);
  }
  const login = route('POST', '/user/login');
  await t.rejects(call(login, { identity: { type: 'username', value: 'schema_user' }, credential: { type: 'password', password: 'p'.repeat(FIELD_MAX.password + 1) } }), { code: 'VALIDATION_ERROR', details: [{ field: 'credential.password', message: `must be at most ${FIELD_MAX.password} characters` }] });
  await t.rejects(call(login, { identity: { type: 'username', value: 'schema_user' }, credential: { type: 'password', password: 'wrong password' } }), { code: 'INVALID_CREDENTIALS' }, 'a well-formed body goes on to the password check');
  await t.rejects(call(route('POST', '/user/refresh-token'), { token: '   ' }), { code: 'VALIDATION_ERROR', details: [{ field: 'token' }] }, 'spaces are no token');
});

t.test('what the schema does not describe keeps its old behaviour', async (t) => {
  const ok = (await call(route('POST', '/user/register'), { identities: [{ type: 'email', value: ' Extra@Example.COM ' }], credential: { type: 'password', password: PASSWORD }, unknown_field: 1, profile: null })) as { status: number };
  t.equal(ok.status, 201, 'unknown fields are ignored, a null profile is none, an email is trimmed');
  t.ok(await users.byIdentity('extra@example.com'), 'and stored normalised');
  t.same(checkProfile(undefined), {});
  t.throws(() => checkProfile({ '1bad': 1 }), { code: 'VALIDATION_ERROR', details: [{ field: 'profile.1bad' }] });
  t.throws(() => checkProfile(Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'x'.repeat(1000)]))), { code: 'VALIDATION_ERROR', details: [{ field: 'profile' }] }, 'at most 8192 bytes');
});
