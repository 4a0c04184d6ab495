// `svc token` as a user meets it in the first hour: the entry is found as `svc start` finds it,
// a name nobody has is refused (never a new, empty account), and a refusal writes nothing.
import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { post, runSvc, startServer } from '../kit/index.ts';

// Each case starts a real `svc` process (the independent ones side by side): on a busy two-core machine that takes a while.
t.setTimeout(300_000);

const svc = (args: string[], cwd: string, env: Record<string, string> = {}) => runSvc(args, { cwd, env, clean: true });

const APP = `import { entry, Root, Walker } from 'svc';
export class Me extends Walker {
  @entry(Root) me() { this.report({ user: this.caller.userId, role: this.caller.role }); }
}
`;


/** The claims of a JWT (not verified: the server does that). */
function claims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.trim().split('.')[1] as string, 'base64url').toString('utf8')) as Record<string, unknown>;
}

t.test('no entry and no main.ts: the line svc start prints, exit 1, no token and nothing written', async (t) => {
  const dir = t.testdir({});
  const tokens = [['robot-1'], ['--username', 'alice']];
  const [start, ...runs] = await Promise.all([svc(['start'], dir), ...tokens.map((args) => svc(['token', ...args], dir))]);
  t.equal(start?.code, 1);
  const line = /^svc: no entry file given and no main\.ts in the current folder \(nor an app\.ts; svc \w+ /;
  t.match(start?.stderr, line, 'what svc start says');
  for (const [i, r] of runs.entries()) {
    t.equal(r.code, 1, `svc token ${tokens[i]?.join(' ')}: exit 1`);
    t.match(r.stderr, line, 'the same line');
    t.equal(r.stdout, '', 'no token');
  }
  t.same(readdirSync(dir), [], 'nothing written: no .svc/, no secret, no users store');
});

t.test('an entry that does not exist, or is no module: the same words as svc start', async (t) => {
  const dir = t.testdir({ 'notes.txt': 'not a module\n' });
  const entries = ['nope.ts', 'notes.txt'];
  const runs = await Promise.all(entries.map((entry) => Promise.all([svc(['start', entry], dir), svc(['token', 'robot-1', entry], dir)])));
  for (const [i, [start, token]] of runs.entries()) {
    t.equal(start.code, 1);
    t.equal(token.code, 1);
    t.equal(token.stderr, start.stderr, `${entries[i]}: ${start.stderr.trim()}`);
    t.equal(token.stdout, '');
  }
  t.equal(runs[0]?.[1].stderr, 'svc: entry file not found: nope.ts\n');
  t.same(readdirSync(dir), ['notes.txt'], 'nothing written');
});

t.test('a username or an email nobody has is refused with exit 1, and nothing is written', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  const names = [['--username', 'alice'], ['--username', 'alice@example.com'], ['alice@example.com']];
  const [none, both, ...runs] = await Promise.all([svc(['token'], dir), svc(['token', 'robot-1', 'main.ts', '--username', 'alice'], dir), ...names.map((args) => svc(['token', ...args], dir))]);
  for (const [i, r] of runs.entries()) {
    t.equal(r.code, 1, `svc token ${names[i]?.join(' ')}`);
    t.match(r.stderr, /^svc: no user has the (username or )?email alice(@example\.com)? in \.svc\/data\/users\.db: register them first/);
    t.equal(r.stdout, '', 'no token');
  }
  t.same(readdirSync(dir), ['main.ts'], 'no .svc/: no secret, no users store');
  if (!none || !both) throw new Error('unreachable');
  t.equal(none.code, 1);
  t.match(none.stderr, /^svc: a user id or --username <name> is needed/);
  t.equal(both.code, 1);
  t.match(both.stderr, /^svc: give a user id or --username, not both/);
});

t.test('an id nobody has is refused (nothing written); --create makes it a service account, as documented', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  const refused = await svc(['token', 'ci-bot'], dir);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^svc: no user has the id, username or email ci-bot in \.svc\/data\/users\.db: .*add --create to make a service account/);
  t.equal(refused.stdout, '', 'no token');
  t.same(readdirSync(dir), ['main.ts'], 'nothing written: no secret, no users store');
  const nameCreate = await svc(['token', '--username', 'alice', '--create'], dir);
  t.equal(nameCreate.code, 1, 'a name never makes an account, even with --create');
  const r = await svc(['token', 'ci-bot', '--create'], dir);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^svc: created the service account ci-bot \(role user\) in \.svc\/data\/users\.db; it has no password and cannot log in/);
  t.match(claims(r.stdout), { user_id: 'ci-bot', role: 'user' });
  t.ok(existsSync(join(dir, '.svc', 'jwt_secret')), 'the development secret the server will use');
  const again = await svc(['token', 'ci-bot'], dir);
  t.equal(again.code, 0, 'once made, no --create needed');
  t.equal(again.stderr, '', 'the second time it exists');
  const other = await svc(['token', 'ci-bot-2'], dir);
  t.equal(other.code, 1, 'with a users store too: an unknown id is refused');
  t.match(other.stderr, /no user has the id, username or email ci-bot-2/);
});

t.test('register alice, then svc token --username alice (her email, or the name as the argument) is her token', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  // The server of this folder as a user starts it: the development secret in .svc/, the data in .svc/data.
  const server = await startServer({ entry: '', noEntry: true, cwd: dir, env: { JWT_SECRET: '', SVC_DATA_DIR: join(dir, '.svc', 'data') } });
  t.teardown(() => server.stop());
  const registered = await post(`${server.url}/user/register`, {
    identities: [
      { type: 'username', value: 'alice' },
      { type: 'email', value: 'alice@example.com' },
    ],
    credential: { type: 'password', password: 'a long passphrase' },
  });
  t.equal(registered.status, 201, JSON.stringify(registered.body));
  const userId = registered.body.data.user_id as string;
  const ways = [['--username', 'alice'], ['--username', 'ALICE@example.com'], ['alice'], ['alice@example.com'], [userId], ['--username', 'alice', 'main.ts']];
  const [bob, ...runs] = await Promise.all([svc(['token', '--username', 'bob'], dir), ...ways.map((args) => svc(['token', ...args], dir))]);
  for (const [i, r] of runs.entries()) {
    t.equal(r.code, 0, `svc token ${ways[i]?.join(' ')}: ${r.stderr}`);
    t.equal(r.stderr, '', 'no account created');
    t.equal(claims(r.stdout).user_id, userId, 'alice’s id');
  }
  const res = await fetch(`${server.url}/walker/Me`, { method: 'POST', headers: { authorization: `Bearer ${runs[0]?.stdout.trim()}` } });
  t.match(await res.json(), { ok: true, data: { reports: [{ user: userId, role: 'user' }] } }, 'the server takes it as alice');
  if (!bob) throw new Error('unreachable');
  t.equal(bob.code, 1, 'a name nobody has, with a users store: still refused');
  t.match(bob.stderr, /^svc: no user has the username or email bob in \.svc\/data\/users\.db/);
});
