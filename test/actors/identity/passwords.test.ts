// Password hashing: argon2id at OWASP parameters; bcrypt and legacy SHA-256
// hashes verify and are rehashed to argon2id at the next login (seeded into
// a real users.db, logged in through a real server); the policy.
import bcrypt from 'bcryptjs';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { argon2NeedsRehash, checkPassword, Passwords, ThreadHasher, userRecord } from '../../../actors/identity/index.ts';
import { SqliteUsersRepository } from '../../../stores/sqlite/index.ts';
import { login } from '../../helpers/identity.ts';
import { startApp } from '../../helpers/app.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;

t.test('argon2id with m=19456 KiB, t=2, p=1; a salt per hash', async (t) => {
  const p = Passwords.local(2);
  t.teardown(() => p.close());
  const a = await p.hash('some long password');
  const b = await p.hash('some long password');
  t.match(a, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  t.not(a, b, 'salted');
  t.same(await p.verify(a, 'some long password'), { ok: true, rehash: false });
  t.same(await p.verify(a, 'some long passwore'), { ok: false, rehash: false });
  const { hash } = await import('@node-rs/argon2');
  const old = await hash('some long password', { memoryCost: 4096, timeCost: 1, parallelism: 1 });
  t.same(await p.verify(old, 'some long password'), { ok: true, rehash: true }, 'weaker argon2 parameters are upgraded');
  const argon2i = await hash('some long password', { algorithm: 1, memoryCost: 19456, timeCost: 2, parallelism: 1 });
  t.same(await p.verify(argon2i, 'some long password'), { ok: true, rehash: true }, 'argon2i is upgraded to argon2id');
  t.notOk(argon2NeedsRehash(a));
  t.same(await p.verify('garbage', 'x'), { ok: false, rehash: false }, 'an unknown hash format never verifies');
});

t.test('bcrypt and SHA-256 (bare or salted) verify and ask for a rehash', async (t) => {
  const p = Passwords.local(1);
  t.teardown(() => p.close());
  const bc = bcrypt.hashSync('legacy password one', 10);
  t.same(await p.verify(bc, 'legacy password one'), { ok: true, rehash: true });
  t.same(await p.verify(bc, 'legacy password two'), { ok: false, rehash: false });
  const bare = createHash('sha256').update('legacy password one').digest('hex');
  t.same(await p.verify(bare, 'legacy password one'), { ok: true, rehash: true });
  t.same(await p.verify(bare.toUpperCase(), 'legacy password one'), { ok: true, rehash: true });
  t.same(await p.verify(bare, 'legacy password two'), { ok: false, rehash: false });
  const salted = `sha256$pepper$${createHash('sha256').update('pepperlegacy password one').digest('hex')}`;
  t.same(await p.verify(salted, 'legacy password one'), { ok: true, rehash: true });
  t.same(await p.verify(salted, 'legacy password two'), { ok: false, rehash: false });
});

t.test('the password policy', async (t) => {
  const refused: [unknown, string[], RegExp][] = [
    ['', [], /non-empty/],
    [12345678, [], /non-empty string/],
    ['seven77', [], /at least 8/],
    ['x'.repeat(257), [], /at most 256/],
    ['PassWord123', [], /common/],
    ['qwertyuiop', [], /common/],
    ['margaret', ['Margaret'], /username or email/],
    ['my-name-is-margaret', ['margaret'], /username or email/],
    ['xxmargaretxx', ['margaret@example.com'], /username or email/],
  ];
  for (const [pw, ids, why] of refused) t.throws(() => checkPassword(pw, ids), { code: 'VALIDATION_ERROR', message: why }, String(pw).slice(0, 20));
  t.equal(checkPassword('correct horse battery', ['bob']), 'correct horse battery', 'a short identity (<4) does not block a password containing it');
  t.equal(checkPassword('eight ch'), 'eight ch');
  t.equal(checkPassword('x'.repeat(256)), 'x'.repeat(256));
});

t.test('legacy hashes in users.db log in and are rehashed to argon2id', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-legacy-'));
  const users = SqliteUsersRepository.open(join(dataDir, 'users.db'));
  const seed = (name: string, hash: string) =>
    users.create(
      userRecord({
        user_id: `legacy-${name}`,
        role: 'user',
        password_hash: hash,
        identities: [{ type: 'username', value_raw: name, value_normalized: name, verified: true, is_recovery: false }],
      }),
    );
  await seed('from_bcrypt', bcrypt.hashSync('old bcrypt secret', 10));
  await seed('from_sha', createHash('sha256').update('old sha secret').digest('hex'));
  await users.close();

  const server = await startApp({ entry, env: { SVC_DATA_DIR: dataDir } });
  t.teardown(() => server.stop());
  const hashOf = (name: string) => {
    const db = new Database(join(dataDir, 'users.db'), { readonly: true });
    try {
      return (db.prepare('SELECT password_hash FROM users WHERE user_id = ?').get(`legacy-${name}`) as { password_hash: string }).password_hash;
    } finally {
      db.close();
    }
  };
  for (const [name, password, before] of [
    ['from_bcrypt', 'old bcrypt secret', /^\$2[ab]\$/],
    ['from_sha', 'old sha secret', /^[0-9a-f]{64}$/],
  ] as const) {
    t.equal((await login(server.url, name, 'not the password')).status, 401, `${name}: a wrong password fails`);
    t.match(hashOf(name), before, `${name}: a failed login changes nothing`);
    t.equal((await login(server.url, name, password)).status, 200, `${name}: logs in`);
    t.match(hashOf(name), /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, `${name}: now argon2id`);
    t.equal((await login(server.url, name, password)).status, 200, `${name}: and still logs in`);
  }
  t.match(server.output(), /password rehashed to argon2id/);
});

t.test('a hashing pool whose threads cannot load argon2 fails its jobs with the reason instead of hanging', async (t) => {
  const broken = new ThreadHasher({ threads: 2, argon2Module: join(tmpdir(), 'no-such-argon2-binding.js') });
  t.teardown(() => broken.close());
  await t.rejects(broken.run({ op: 'hash', password: 'whatever it is' }), /password hashing is unavailable: .*no-such-argon2-binding/);
  await t.rejects(broken.run({ op: 'hash', password: 'again' }), /password hashing is unavailable/, 'and at once afterwards');
  t.equal(broken.size, 0);
});
