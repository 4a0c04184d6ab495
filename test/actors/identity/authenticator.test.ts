// identity.authenticate(token) → caller, and bearer() — the one token check every transport uses.
import t from 'tap';
import { Authenticator, bearer, JwtVerifier, RevocationTable, rootIdFor } from '../../../actors/identity/index.ts';

const SECRET = 'authenticator-test-secret-0123456789abcdef';

function setup(): { auth: Authenticator; jwt: JwtVerifier; revocations: RevocationTable; clock: { now: number } } {
  const clock = { now: Date.UTC(2030, 0, 1) };
  const revocations = new RevocationTable();
  const jwt = new JwtVerifier({ secret: SECRET, algorithm: 'HS256', revocations, now: () => clock.now });
  return { auth: new Authenticator(jwt), jwt, revocations, clock };
}

t.test('a good token: its caller (user, root, role), claims, and whether the password must change', async (t) => {
  const { auth, jwt } = setup();
  const who = auth.authenticate(jwt.sign({ user_id: 'u-1', role: 'admin' }));
  t.same(who.caller, { userId: 'u-1', rootId: rootIdFor('u-1'), role: 'admin' });
  t.equal(who.userId, 'u-1');
  t.equal(who.claims.user_id, 'u-1');
  t.equal(who.mustChangePassword, false);
  const plain = auth.authenticate(jwt.sign({ user_id: 'u-2', pwd_change: true }));
  t.same(plain.caller, { userId: 'u-2', rootId: rootIdFor('u-2') }, 'no role claim, no role');
  t.equal(plain.mustChangePassword, true);
});

t.test('the caller and its root id are computed once per verified token', async (t) => {
  const { auth, jwt } = setup();
  const token = jwt.sign({ user_id: 'u-1' });
  const first = auth.authenticate(token);
  const again = auth.authenticate(token);
  t.equal(again, first, 'the same answer, from the cache');
  t.equal(again.caller, first.caller, 'the caller (and its rootId hash) is not rebuilt');
  t.ok(Object.isFrozen(first.caller), 'shared, so frozen');
  const other = auth.authenticate(jwt.sign({ user_id: 'u-1', role: 'x' }));
  t.not(other, first, 'another token of the same user has its own entry');
});

t.test('forged, malformed and expired tokens are refused with UNAUTHORIZED (401)', async (t) => {
  const { auth, jwt, clock } = setup();
  const forger = new JwtVerifier({ secret: 'another-secret-another-secret-0123456789', algorithm: 'HS256', now: () => clock.now });
  t.throws(() => auth.authenticate(forger.sign({ user_id: 'u-1' })), { code: 'UNAUTHORIZED', status: 401, message: /signature/ });
  const good = jwt.sign({ user_id: 'u-1' });
  const [h, , s] = good.split('.');
  const swapped = `${h}.${Buffer.from(JSON.stringify({ user_id: 'admin', role: 'admin', exp: 9e9 })).toString('base64url')}.${s}`;
  t.throws(() => auth.authenticate(swapped), { code: 'UNAUTHORIZED' }, 'claims changed under a good signature');
  t.throws(() => auth.authenticate('not-a-jwt'), { code: 'UNAUTHORIZED', message: /malformed/ });
  t.throws(() => auth.authenticate(''), { code: 'UNAUTHORIZED' });

  const short = jwt.sign({ user_id: 'u-1' }, 1 / 24);
  t.equal(auth.authenticate(short).userId, 'u-1', 'good for an hour (and now cached)');
  clock.now += 3_600_001;
  t.throws(() => auth.authenticate(short), { code: 'UNAUTHORIZED', message: /expired/ }, 'expiry applies to a cached token');
});

t.test('a revocation applies to a token already verified and cached', async (t) => {
  const { auth, jwt, revocations, clock } = setup();
  const token = jwt.sign({ user_id: 'u-1', iat_ms: clock.now });
  t.equal(auth.authenticate(token).userId, 'u-1');
  revocations.set('u-1', clock.now + 1);
  t.throws(() => auth.authenticate(token), { code: 'UNAUTHORIZED', message: /revoked/ });
  t.throws(() => auth.authenticate(token), { code: 'UNAUTHORIZED', message: /revoked/ }, 'and stays revoked');
  clock.now += 10;
  const fresh = jwt.sign({ user_id: 'u-1', iat_ms: clock.now });
  t.equal(auth.authenticate(fresh).userId, 'u-1', 'a token issued after the revocation works');
});

t.test('bearer(): the token of an "Authorization: Bearer <token>" header', async (t) => {
  t.equal(bearer('Bearer abc.def.ghi'), 'abc.def.ghi');
  t.equal(bearer('bearer abc'), 'abc', 'the scheme in any case');
  t.equal(bearer('BEARER   abc  '), 'abc', 'spaces around the token');
  t.equal(bearer('Bearer\tabc'), 'abc');
  t.equal(bearer(undefined), undefined, 'no header');
  t.equal(bearer(''), undefined);
  t.equal(bearer('Bearer'), undefined, 'no token');
  t.equal(bearer('Bearer '), undefined);
  t.equal(bearer('Bearer a b'), undefined, 'two words');
  t.equal(bearer('Basic dXNlcjpwYXNz'), undefined, 'another scheme');
  t.equal(bearer('abc.def.ghi'), undefined, 'a bare token is not a bearer header');
  t.equal(bearer(' Bearer abc'), undefined, 'nothing before the scheme');
});
