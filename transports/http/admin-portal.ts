/**
 * The admin portal at `/admin`: one self-contained page (no CDN) over the
 * `/admin/*` endpoints — login (and the forced password change, which the
 * server enforces anyway), a searchable users table, create, edit role and
 * status, force a password reset, delete. User data is put in the page with
 * `textContent` only.
 */
import { createHash } from 'node:crypto';
import type { HttpResponse } from './types.ts';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc admin</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f4f5f8; }
  body { margin: 0; }
  header { background: #1d2330; color: #fff; padding: 12px 24px; display: flex; justify-content: space-between; align-items: center; }
  header h1 { font-size: 18px; margin: 0; }
  main { max-width: 1100px; margin: 24px auto; padding: 0 16px; }
  .card { background: #fff; border-radius: 8px; box-shadow: 0 1px 3px #0002; padding: 20px; margin-bottom: 16px; }
  .narrow { max-width: 380px; margin: 60px auto; }
  label { display: block; font-size: 13px; margin: 10px 0 4px; color: #445; }
  input, select { width: 100%; box-sizing: border-box; padding: 8px; border: 1px solid #ccd; border-radius: 4px; font-size: 14px; }
  button { background: #3451b2; color: #fff; border: 0; border-radius: 4px; padding: 8px 14px; font-size: 14px; cursor: pointer; }
  button.secondary { background: #e6e8ef; color: #1d2330; }
  button.danger { background: #c62828; }
  button.small { padding: 4px 8px; font-size: 12px; margin-right: 4px; }
  table { width: 100%; border-collapse: collapse; font-size: 14px; }
  th, td { text-align: left; padding: 8px; border-bottom: 1px solid #eceef3; }
  th { color: #667; font-weight: 600; font-size: 12px; text-transform: uppercase; }
  .row { display: flex; gap: 8px; align-items: center; }
  .row input { flex: 1; }
  .error { color: #c62828; margin-top: 10px; min-height: 1em; }
  .notice { background: #e8f5e9; border: 1px solid #a5d6a7; padding: 10px; border-radius: 4px; margin-bottom: 12px; }
  .badge { display: inline-block; padding: 2px 6px; border-radius: 10px; font-size: 12px; background: #e6e8ef; }
  .badge.disabled { background: #ffcdd2; }
  .badge.admin { background: #c5cae9; }
  .hidden { display: none; }
  dialog { border: 0; border-radius: 8px; box-shadow: 0 4px 20px #0004; width: 360px; }
</style></head>
<body>
<header><h1>svc admin</h1><span><span id="who"></span> <button class="secondary small hidden" id="logout">Log out</button></span></header>
<main>
  <section id="login-screen" class="card narrow">
    <h2>Sign in</h2>
    <form id="login-form">
      <label for="login-username">Username</label><input id="login-username" autocomplete="username" required>
      <label for="login-password">Password</label><input id="login-password" type="password" autocomplete="current-password" required>
      <p><button type="submit">Sign in</button></p>
      <div class="error" id="login-error"></div>
    </form>
  </section>

  <section id="password-screen" class="card narrow hidden">
    <h2>Change your password</h2>
    <p>The password must be changed before the portal can be used.</p>
    <form id="password-form">
      <label for="pw-current">Current password</label><input id="pw-current" type="password" autocomplete="current-password" required>
      <label for="pw-new">New password</label><input id="pw-new" type="password" autocomplete="new-password" required>
      <p><button type="submit">Change password</button></p>
      <div class="error" id="password-error"></div>
    </form>
  </section>

  <section id="users-screen" class="hidden">
    <div class="card">
      <div id="notice" class="notice hidden"></div>
      <div class="row">
        <input id="search" placeholder="Search users by username or email">
        <button id="search-button" class="secondary">Search</button>
        <button id="new-user">New user</button>
      </div>
    </div>
    <div class="card">
      <table><thead><tr><th>Username</th><th>Email</th><th>Role</th><th>Status</th><th>Created</th><th></th></tr></thead>
      <tbody id="users"></tbody></table>
      <p id="total"></p>
      <div class="error" id="users-error"></div>
    </div>
  </section>
</main>

<dialog id="create-dialog"><form id="create-form" method="dialog">
  <h3>New user</h3>
  <label for="new-username">Username</label><input id="new-username" required>
  <label for="new-email">Email (optional)</label><input id="new-email" type="email">
  <label for="new-password">Password (empty: generate one)</label><input id="new-password" type="password" autocomplete="new-password">
  <label for="new-role">Role</label><select id="new-role"><option value="user">user</option><option value="admin">admin</option></select>
  <div class="error" id="create-error"></div>
  <p class="row"><button type="submit" id="create-submit">Create</button><button type="button" class="secondary" id="create-cancel">Cancel</button></p>
</form></dialog>

<dialog id="edit-dialog"><form id="edit-form" method="dialog">
  <h3>Edit <span id="edit-name"></span></h3>
  <label for="edit-role">Role</label><select id="edit-role"><option value="user">user</option><option value="admin">admin</option></select>
  <label for="edit-status">Status</label><select id="edit-status"><option value="active">active</option><option value="disabled">disabled</option></select>
  <div class="error" id="edit-error"></div>
  <p class="row"><button type="submit" id="edit-submit">Save</button><button type="button" class="secondary" id="edit-cancel">Cancel</button></p>
</form></dialog>

<script>
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'svc_admin_token';
  let token = sessionStorage.getItem(KEY);
  let editing = null;

  async function api(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: Object.assign({ 'content-type': 'application/json' }, token ? { authorization: 'Bearer ' + token } : {}),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json().catch(() => ({ ok: false, error: { code: 'ERROR', message: res.statusText } }));
    if (!json.ok) {
      const err = new Error(json.error ? json.error.message : 'request failed');
      err.code = json.error && json.error.code;
      err.status = res.status;
      throw err;
    }
    return json.data;
  }

  function show(screen) {
    for (const s of ['login-screen', 'password-screen', 'users-screen']) $(s).classList.toggle('hidden', s !== screen);
    $('logout').classList.toggle('hidden', screen === 'login-screen');
  }

  function notice(text) {
    $('notice').textContent = text;
    $('notice').classList.toggle('hidden', !text);
  }

  function cell(text, cls) {
    const td = document.createElement('td');
    if (cls) {
      const span = document.createElement('span');
      span.className = 'badge ' + cls;
      span.textContent = text;
      td.appendChild(span);
    } else td.textContent = text;
    return td;
  }

  function button(label, cls, onClick) {
    const b = document.createElement('button');
    b.textContent = label;
    b.className = 'small ' + cls;
    b.addEventListener('click', onClick);
    return b;
  }

  async function load() {
    $('users-error').textContent = '';
    try {
      const q = $('search').value.trim();
      const data = await api('GET', '/admin/users' + (q ? '?search=' + encodeURIComponent(q) : ''));
      const body = $('users');
      body.replaceChildren();
      for (const u of data.users) {
        const email = (u.identities.find((i) => i.type === 'email') || {}).value || '';
        const name = u.username || email || u.user_id;
        const tr = document.createElement('tr');
        tr.dataset.username = name;
        tr.append(cell(u.username || '—'), cell(email), cell(u.role, u.role === 'admin' ? 'admin' : 'role'), cell(u.status, u.status), cell(u.created_at.slice(0, 10)));
        const actions = document.createElement('td');
        if (!u.protected) {
          actions.append(
            button('Edit', 'secondary', () => openEdit(name, u)),
            button(u.status === 'active' ? 'Disable' : 'Enable', 'secondary', () => act(() => api('PUT', '/admin/users/' + encodeURIComponent(name), { status: u.status === 'active' ? 'disabled' : 'active' }), name + (u.status === 'active' ? ' disabled' : ' enabled'))),
            button('Reset password', 'secondary', () => act(() => api('POST', '/admin/users/' + encodeURIComponent(name) + '/force-password-reset'), name + ' must change their password at next login')),
            button('Delete', 'danger', () => { if (confirm('Delete ' + name + ' and their graph (every node and edge they own)? This cannot be undone.')) act(() => api('DELETE', '/admin/users/' + encodeURIComponent(name)), name + ' deleted'); }),
          );
        } else actions.textContent = 'protected';
        tr.appendChild(actions);
        body.appendChild(tr);
      }
      $('total').textContent = data.total + ' user' + (data.total === 1 ? '' : 's');
    } catch (e) {
      if (e.status === 401 || e.code === 'PASSWORD_CHANGE_REQUIRED') return signOut(e.message);
      $('users-error').textContent = e.message;
    }
  }

  async function act(call, message) {
    try {
      await call();
      notice(message);
      await load();
    } catch (e) {
      $('users-error').textContent = e.message;
    }
  }

  function openEdit(name, u) {
    editing = name;
    $('edit-name').textContent = name;
    $('edit-role').value = u.role;
    $('edit-status').value = u.status;
    $('edit-error').textContent = '';
    $('edit-dialog').showModal();
  }

  function signOut(message) {
    token = null;
    sessionStorage.removeItem(KEY);
    $('who').textContent = '';
    show('login-screen');
    $('login-error').textContent = message || '';
  }

  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('login-error').textContent = '';
    try {
      const data = await api('POST', '/admin/login', { username: $('login-username').value, password: $('login-password').value });
      token = data.token;
      sessionStorage.setItem(KEY, token);
      $('who').textContent = $('login-username').value;
      if (data.must_change_password) { show('password-screen'); return; }
      show('users-screen');
      await load();
    } catch (e) {
      $('login-error').textContent = e.message;
    }
  });

  $('password-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('password-error').textContent = '';
    try {
      const data = await api('PUT', '/user/password', { current_password: $('pw-current').value, new_password: $('pw-new').value });
      token = data.token;
      sessionStorage.setItem(KEY, token);
      show('users-screen');
      notice('Password changed.');
      await load();
    } catch (e) {
      $('password-error').textContent = e.message;
    }
  });

  $('search-button').addEventListener('click', load);
  $('search').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') load(); });
  $('new-user').addEventListener('click', () => { $('create-form').reset(); $('create-error').textContent = ''; $('create-dialog').showModal(); });
  $('create-cancel').addEventListener('click', () => $('create-dialog').close());
  $('edit-cancel').addEventListener('click', () => $('edit-dialog').close());
  $('logout').addEventListener('click', () => signOut());

  $('create-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const body = { username: $('new-username').value, role: $('new-role').value };
      if ($('new-email').value) body.email = $('new-email').value;
      if ($('new-password').value) body.password = $('new-password').value;
      const data = await api('POST', '/admin/users', body);
      $('create-dialog').close();
      notice('Created ' + data.username + (data.temporary_password ? ' — temporary password: ' + data.temporary_password : '') + ' (must change it at first login)');
      await load();
    } catch (e) {
      $('create-error').textContent = e.message;
    }
  });

  $('edit-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('PUT', '/admin/users/' + encodeURIComponent(editing), { role: $('edit-role').value, status: $('edit-status').value });
      $('edit-dialog').close();
      notice(editing + ' updated');
      await load();
    } catch (e) {
      $('edit-error').textContent = e.message;
    }
  });

  if (token) { show('users-screen'); load(); } else show('login-screen');
})();
</script>
</body></html>`;

/** Hashes of the page's own inline script and style: the CSP allows those and nothing else. */
function cspHash(tag: 'script' | 'style'): string {
  const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(PAGE);
  if (!m) throw new Error(`the admin page has no <${tag}>`);
  return `'sha256-${createHash('sha256').update(m[1] as string).digest('base64')}'`;
}

const CSP = `default-src 'none'; script-src ${cspHash('script')}; style-src ${cspHash('style')}; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export function adminPortal(): HttpResponse {
  return {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
    },
    body: PAGE,
  };
}
