// Verification and password reset through a real SMTP listener: the mail
// that arrived carries the token; tokens are single-use, expire, are stored
// hashed, and resending revokes the older ones. A broken emailer disables
// mail and the server keeps running.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { bearer, GOOD_PASSWORD, login, register, tokenIn, tokenOf } from '../../helpers/identity.ts';
import { smtpEnv, startSmtp, post, startServer } from '../../kit/index.ts';
import { startApp, type InProcessServer as Server } from '../../helpers/app.ts';

const APP = `
import { entry, Root, T, Walker } from 'svc';
export class Hello extends Walker {
  @entry(Root) hi() { this.report('hello'); }
}
`;
const TOML = `
[scale.auth]
verify_token_ttl_seconds = 600
reset_token_ttl_seconds = 120
verify_url_template = "https://app.example/verify?token={token}"
`;

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let server: Server;
t.before(async () => {
  smtp = await startSmtp();
  const dir = t.testdir({ 'main.ts': APP, 'svc.toml': TOML });
  server = await startApp({ entry: join(dir, 'main.ts'), env: smtpEnv(smtp.port) });
});
t.teardown(async () => {
  await server.stop();
  await smtp.close();
});

function tokenRows(): { token_hash: string; kind: string; expires_at: number; used_at: number | null }[] {
  const db = new Database(join(server.dataDir, 'users.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM one_time_tokens ORDER BY rowid').all() as never;
  } finally {
    db.close();
  }
}

const sha256 = (x: string) => createHash('sha256').update(x).digest('hex');

t.test('send-verification mails a link; verify-identity spends it once', async (t) => {
  await register(server.url, 'olivia_o', { email: 'Olivia@Example.com' });
  const token = await tokenOf(server.url, 'olivia_o');
  const sent = await post(`${server.url}/user/send-verification`, { identity: { type: 'email', value: 'olivia@example.com' } }, bearer(token));
  t.equal(sent.status, 202);
  t.same(sent.body.data, { status: 'pending_verification', email_sent: true });
  const mail = await smtp.next();
  t.same(mail.to.map((a) => a.toLowerCase()), ['olivia@example.com']);
  t.equal(mail.from, 'svc@test.local');
  t.match(mail.subject, /verify/i);
  t.match(mail.text, /https:\/\/app\.example\/verify\?token=[A-Za-z0-9_-]{43}/, 'the link of verify_url_template');
  const secret = tokenIn(mail);
  const rows = tokenRows();
  const row = rows.at(-1) as (typeof rows)[number];
  t.equal(row.token_hash, sha256(secret), 'stored as its SHA-256');
  t.notOk(JSON.stringify(rows).includes(secret), 'never in clear');
  t.ok(Math.abs(row.expires_at - (Date.now() + 600_000)) < 60_000, 'TTL from [scale.auth] verify_token_ttl_seconds');

  const ok = await post(`${server.url}/user/verify-identity`, { token: secret });
  t.equal(ok.status, 200);
  t.same(ok.body.data, { status: 'verified', identity: 'olivia@example.com' });
  const again = await post(`${server.url}/user/verify-identity`, { token: secret });
  t.equal(again.status, 400, 'single use');
  t.equal(again.body.error.code, 'INVALID_TOKEN');
  const me = await fetch(`${server.url}/user/me`, { headers: bearer(token) });
  t.match(((await me.json()) as any).data.identities, [{ type: 'username' }, { type: 'email', verified: true }]);
  const already = await post(`${server.url}/user/send-verification`, { identity: { type: 'email', value: 'OLIVIA@example.com' } }, bearer(token));
  t.equal(already.status, 200);
  t.same(already.body.data, { status: 'already_verified' });
  t.equal(smtp.mails.length, 1, 'no mail for a verified identity');
});

t.test('resending revokes the older verification token', async (t) => {
  await register(server.url, 'peter_p', { email: 'peter@example.com' });
  const token = await tokenOf(server.url, 'peter_p');
  const body = { identity: { type: 'email', value: 'peter@example.com' } };
  t.equal((await post(`${server.url}/user/send-verification`, body, bearer(token))).status, 202);
  const first = tokenIn(await smtp.next());
  t.equal((await post(`${server.url}/user/send-verification`, body, bearer(token))).status, 202);
  const second = tokenIn(await smtp.next());
  t.not(first, second);
  const old = await post(`${server.url}/user/verify-identity`, { token: first });
  t.equal(old.status, 400, 'the first link no longer works');
  t.equal(old.body.error.code, 'INVALID_TOKEN');
  t.equal((await post(`${server.url}/user/verify-identity`, { token: second })).status, 200, 'the newest does');
  const other = await post(`${server.url}/user/send-verification`, { identity: { type: 'email', value: 'olivia@example.com' } }, bearer(token));
  t.equal(other.status, 404, "someone else's email is not this account's identity");
});

t.test('an expired token is refused (seeded past its TTL)', async (t) => {
  const db = new Database(join(server.dataDir, 'users.db'));
  const userId = (db.prepare("SELECT user_id FROM identities WHERE value_normalized = 'peter_p'").get() as { user_id: string }).user_id;
  const secret = 'E'.repeat(43);
  db.prepare('INSERT INTO one_time_tokens (token_hash, user_id, kind, identity, expires_at) VALUES (?, ?, ?, ?, ?)').run(sha256(secret), userId, 'reset', 'peter@example.com', Date.now() - 1);
  db.close();
  const res = await post(`${server.url}/user/reset-password`, { token: secret, new_password: 'a fresh new secret' });
  t.equal(res.status, 400);
  t.equal(res.body.error.code, 'INVALID_TOKEN');
  t.equal((await login(server.url, 'peter_p')).status, 200, 'the password did not change');
});

t.test('forgot-password: always 200; mail only for a verified recovery email; reset once', async (t) => {
  const answer = async (value: string) => post(`${server.url}/user/forgot-password`, { identity: { type: 'email', value } });
  const unknown = await answer('nobody@example.com');
  await register(server.url, 'quinn_q', { email: 'quinn@example.com' });
  const unverified = await answer('quinn@example.com');
  const verified = await answer('PETER@example.com');
  for (const r of [unknown, unverified, verified]) {
    t.equal(r.status, 200);
    t.same(r.body.data, unknown.body.data, 'the same answer whoever asks');
  }
  const mail = await smtp.next();
  t.same(mail.to, ['peter@example.com'], 'only the verified recovery email got a mail');
  t.match(mail.subject, /reset/i);
  const secret = tokenIn(mail);
  const row = tokenRows().find((r) => r.token_hash === sha256(secret));
  t.ok(row && Math.abs(row.expires_at - (Date.now() + 120_000)) < 60_000, 'TTL from reset_token_ttl_seconds');

  const before = await tokenOf(server.url, 'peter_p');
  const weak = await post(`${server.url}/user/reset-password`, { token: secret, new_password: 'password123' });
  t.equal(weak.status, 400, 'the policy applies');
  t.equal(weak.body.error.details[0].field, 'new_password');
  const done = await post(`${server.url}/user/reset-password`, { token: secret, new_password: 'a fresh new secret' });
  t.equal(done.status, 200, 'a refused password did not spend the token');
  t.match(done.body.data, { status: 'password_reset', message: String });
  t.equal((await post(`${server.url}/user/reset-password`, { token: secret, new_password: 'another new secret' })).body.error.code, 'INVALID_TOKEN', 'single use');
  t.equal((await fetch(`${server.url}/user/me`, { headers: bearer(before) })).status, 401, 'tokens from before the reset are void');
  t.equal((await login(server.url, 'peter_p')).status, 401, 'the old password is refused');
  t.equal((await login(server.url, 'peter_p', 'a fresh new secret')).status, 200, 'the new one works');
  t.equal((await post(`${server.url}/user/reset-password`, { token: 'x', new_password: 'another new secret' })).status, 400);
  t.equal((await post(`${server.url}/user/reset-password`, { new_password: 'another new secret' })).status, 400);
  t.equal(smtp.mails.length, 4, 'no other mail went out');
});

t.test('a second reset request revokes the first link', async (t) => {
  await post(`${server.url}/user/forgot-password`, { identity: { type: 'email', value: 'peter@example.com' } });
  const first = tokenIn(await smtp.next());
  await post(`${server.url}/user/forgot-password`, { identity: { type: 'email', value: 'peter@example.com' } });
  const second = tokenIn(await smtp.next());
  t.equal((await post(`${server.url}/user/reset-password`, { token: first, new_password: 'yet another secret' })).status, 400);
  t.equal((await post(`${server.url}/user/reset-password`, { token: second, new_password: 'yet another secret' })).status, 200);
});

t.test('a broken emailer config: logged, email disabled (503), the server runs', async (t) => {
  const configs: [Record<string, string>, RegExp][] = [
    [{ EMAILER_PROVIDER: 'carrier-pigeon' }, /unknown emailer provider/],
    [{ EMAILER_PROVIDER: './no-such-emailer.mjs:Mailer' }, /failed to load/],
  ];
  for (const [env, reason] of configs) {
    const broken = await startApp({ entry: new URL('../../fixtures/todo-app.ts', import.meta.url).pathname, env });
    t.teardown(() => broken.stop());
    await broken.waitFor(/email disabled/);
    t.match(broken.output(), reason);
    await register(broken.url, 'rita_r', { email: 'rita@example.com' });
    const token = await tokenOf(broken.url, 'rita_r');
    const res = await post(`${broken.url}/user/send-verification`, { identity: { type: 'email', value: 'rita@example.com' } }, bearer(token));
    t.equal(res.status, 503, String(env.EMAILER_PROVIDER));
    t.equal(res.body.error.code, 'EMAIL_DISABLED');
    t.equal((await post(`${broken.url}/user/forgot-password`, { identity: { type: 'email', value: 'rita@example.com' } })).status, 200);
    t.equal((await post(`${broken.url}/walker/CreateTodo`, { title: 'still serving' })).status, 200, 'the rest of the server works');
  }
});

t.test('an SMTP server that is down: 202 with email_sent false, logged', async (t) => {
  const gone = await startSmtp();
  await gone.close();
  const down = await startApp({ entry: new URL('../../fixtures/todo-app.ts', import.meta.url).pathname, env: smtpEnv(gone.port) });
  t.teardown(() => down.stop());
  await register(down.url, 'sam_s', { email: 'sam@example.com' });
  const token = await tokenOf(down.url, 'sam_s');
  const res = await post(`${down.url}/user/send-verification`, { identity: { type: 'email', value: 'sam@example.com' } }, bearer(token));
  t.equal(res.status, 202);
  t.same(res.body.data, { status: 'pending_verification', email_sent: false });
  await down.waitFor(/verification mail failed/);
});

t.test('a pkg/module:Class emailer from the project', async (t) => {
  const outbox = join(t.testdirName, 'outbox.jsonl');
  const dir = t.testdir({
    'main.ts': APP,
    'file-emailer.mjs': `
import { appendFileSync } from 'node:fs';
export class FileEmailer {
  constructor(config) { this.from = config.from_address; }
  isReady() { return true; }
  async sendEmail(to, subject, text) { appendFileSync(process.env.OUTBOX, JSON.stringify({ to, subject, text, from: this.from }) + '\\n'); return true; }
}
`,
  });
  const custom = await startServer({ entry: '', noEntry: true, cwd: dir, env: { EMAILER_PROVIDER: './file-emailer.mjs:FileEmailer', EMAILER_FROM_ADDRESS: 'me@project.test', OUTBOX: outbox } });
  t.teardown(() => custom.stop());
  await register(custom.url, 'tina_t', { email: 'tina@example.com' });
  const token = await tokenOf(custom.url, 'tina_t');
  const res = await post(`${custom.url}/user/send-verification`, { identity: { type: 'email', value: 'tina@example.com' } }, bearer(token));
  t.same(res.body.data, { status: 'pending_verification', email_sent: true });
  const sent = readFileSync(outbox, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  t.match(sent, [{ to: 'tina@example.com', from: 'me@project.test', subject: /verify/i, text: /[A-Za-z0-9_-]{43}/ }]);
  t.equal((await login(custom.url, 'tina_t', GOOD_PASSWORD)).status, 200);
});

t.test('an emailer registered by the app under a short name', async (t) => {
  const outbox = join(t.testdirName, 'outbox.jsonl');
  const dir = t.testdir({
    'main.ts': `${APP}
import { appendFileSync } from 'node:fs';
import { registerEmailer } from 'svc';
registerEmailer('outbox', (config) => ({
  isReady: () => true,
  sendEmail: async (to, subject) => (appendFileSync(process.env.OUTBOX as string, JSON.stringify({ to, subject, host: config.smtp.host }) + '\\n'), true),
}));
`,
  });
  const custom = await startServer({ entry: '', noEntry: true, cwd: dir, env: { EMAILER_PROVIDER: 'outbox', OUTBOX: outbox } });
  t.teardown(() => custom.stop());
  await register(custom.url, 'uwe_u', { email: 'uwe@example.com' });
  const res = await post(`${custom.url}/user/forgot-password`, { identity: { type: 'email', value: 'uwe@example.com' } });
  t.equal(res.status, 200, 'unverified: no mail');
  const token = await tokenOf(custom.url, 'uwe_u');
  const sent = await post(`${custom.url}/user/send-verification`, { identity: { type: 'email', value: 'uwe@example.com' } }, bearer(token));
  t.same(sent.body.data, { status: 'pending_verification', email_sent: true });
  t.match(readFileSync(outbox, 'utf8').trim().split('\n').map((l) => JSON.parse(l)), [{ to: 'uwe@example.com', subject: /verify/i, host: 'localhost' }]);
});
