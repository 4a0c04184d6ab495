// The admin portal at /admin in headless Chromium: sign in, the forced
// password change, the users table with search, create, edit, disable,
// force a password reset, delete. A screenshot of each screen lands in
// .tap/screenshots/; every action is checked against the API afterwards.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';
import { login, register } from '../../helpers/identity.ts';
import { post, startServer, type Server } from '../../kit/index.ts';

// Page-side names for the functions that run in the browser (this file compiles without the DOM lib).
declare const document: any;
declare const sessionStorage: any;
type HTMLElement = { dataset: Record<string, string> };

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
const shots = new URL('../../../.tap/screenshots/', import.meta.url).pathname;

t.test('the admin portal, screen by screen', { skip: chromiumAvailable() ? false : 'Debian chromium is not installed (.ci/run installs it)' }, async (t) => {
  mkdirSync(shots, { recursive: true });
  const server: Server = await startServer({ entry, env: { ADMIN_USERNAME: 'chief', ADMIN_DEFAULT_PASSWORD: 'initial portal secret' } });
  t.teardown(() => server.stop());
  for (const name of ['anna_a', 'andy_a', 'bert_b']) await register(server.url, name, { email: `${name}@example.com` });

  const browser = await launch();
  t.teardown(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const problems: string[] = [];
  const outside: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(server.url) && !r.url().startsWith('data:')) outside.push(r.url());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // 4xx answers the test provokes show as 'Failed to load resource'; anything else (a CSP refusal) is a problem.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  const shot = (name: string) => page.screenshot({ path: join(shots, `admin-${name}.png`) });
  const rows = () => page.$$eval('#users tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.username));
  const row = (name: string) => page.locator(`#users tr[data-username="${name}"]`);

  const res = await page.goto(`${server.url}/admin`);
  t.equal(res?.status(), 200);
  t.match(res?.headers()['content-security-policy'], /script-src 'sha256-/, 'a CSP that allows only this page’s own script');
  await page.waitForSelector('#login-screen:not(.hidden)');
  await shot('1-login');

  await page.fill('#login-username', 'chief');
  await page.fill('#login-password', 'not the password');
  await page.click('#login-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('login-error')?.textContent !== '');
  t.match(await page.textContent('#login-error'), /wrong identity or password/);
  await shot('2-login-error');

  await page.fill('#login-password', 'initial portal secret');
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#password-screen:not(.hidden)');
  await shot('3-forced-password-change');
  const blocked = await page.evaluate(async () => {
    const r = await fetch('/admin/users', { headers: { authorization: `Bearer ${sessionStorage.getItem('svc_admin_token')}` } });
    return [r.status, ((await r.json()) as { error: { code: string } }).error.code];
  });
  t.same(blocked, [403, 'PASSWORD_CHANGE_REQUIRED'], 'the server, not the page, holds the admin back');

  await page.fill('#pw-current', 'initial portal secret');
  await page.fill('#pw-new', 'password123');
  await page.click('#password-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('password-error')?.textContent !== '');
  t.match(await page.textContent('#password-error'), /common/, 'the policy shows on the page');
  await page.fill('#pw-new', 'the real portal secret');
  await page.click('#password-form button[type=submit]');
  await page.waitForSelector('#users-screen:not(.hidden) #users tr');
  t.same((await rows()).sort(), ['__guest__', 'andy_a', 'anna_a', 'bert_b', 'chief']);
  t.match(await page.textContent('#total'), /5 users/);
  t.equal(await row('chief').locator('button').count(), 0, 'protected accounts have no actions');
  await shot('4-users');

  await page.fill('#search', 'an');
  await page.click('#search-button');
  await page.waitForFunction(() => document.querySelectorAll('#users tr').length === 2);
  t.same((await rows()).sort(), ['andy_a', 'anna_a']);
  await shot('5-search');
  await page.fill('#search', '');
  await page.press('#search', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('#users tr').length === 5);

  await page.click('#new-user');
  await page.fill('#new-username', 'cora_c');
  await page.fill('#new-email', 'cora@example.com');
  await shot('6-create');
  await page.click('#create-submit');
  await page.waitForSelector('#users tr[data-username="cora_c"]');
  const notice = (await page.textContent('#notice')) as string;
  const temporary = /temporary password: (\S+)/.exec(notice)?.[1] as string;
  t.ok(temporary, 'the temporary password is shown once');
  await shot('7-created');
  const cora = await login(server.url, 'cora_c', temporary);
  t.equal(cora.status, 200, 'the new user logs in with it');
  t.equal(cora.body.data.must_change_password, true, 'and must change it');

  await page.click('#new-user');
  await page.fill('#new-username', 'anna_a');
  await page.click('#create-submit');
  await page.waitForFunction(() => document.getElementById('create-error')?.textContent !== '');
  t.match(await page.textContent('#create-error'), /already used/, 'a taken name is refused in the dialog');
  await page.click('#create-cancel');

  await row('bert_b').getByRole('button', { name: 'Edit' }).click();
  await page.selectOption('#edit-role', 'admin');
  await shot('8-edit');
  await page.click('#edit-submit');
  await page.waitForFunction(() => document.querySelector('#users tr[data-username="bert_b"] td:nth-child(3)')?.textContent === 'admin');
  t.equal((await post(`${server.url}/admin/login`, { username: 'bert_b', password: 'correct horse battery staple' })).status, 200, 'bert is an admin now');

  await row('andy_a').getByRole('button', { name: 'Disable' }).click();
  await page.waitForFunction(() => document.querySelector('#users tr[data-username="andy_a"] td:nth-child(4)')?.textContent === 'disabled');
  await shot('9-disabled');
  t.equal((await login(server.url, 'andy_a')).body.error?.code, 'INVALID_CREDENTIALS', 'andy cannot log in');

  await row('anna_a').getByRole('button', { name: 'Reset password' }).click();
  await page.waitForFunction(() => /must change their password/.test(document.getElementById('notice')?.textContent ?? ''));
  await shot('10-force-reset');
  t.equal((await login(server.url, 'anna_a')).body.data.must_change_password, true, 'anna must change her password');

  page.once('dialog', (d) => void d.accept());
  await row('cora_c').getByRole('button', { name: 'Delete' }).click();
  await page.waitForFunction(() => !document.querySelector('#users tr[data-username="cora_c"]'));
  await shot('11-deleted');
  t.equal((await login(server.url, 'cora_c', temporary)).status, 401, 'cora is gone');

  await page.reload();
  await page.waitForSelector('#users-screen:not(.hidden) #users tr');
  t.pass('a reload keeps the session');
  await page.click('#logout');
  await page.waitForSelector('#login-screen:not(.hidden)');
  t.equal(await page.evaluate(() => sessionStorage.getItem('svc_admin_token')), null, 'logging out forgets the token');
  t.same(problems, [], 'no script errors, no CSP violations');
  t.same(outside, [], 'nothing fetched from elsewhere');
});
