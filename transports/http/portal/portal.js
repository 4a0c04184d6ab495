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

  /** A form's submit: its error line cleared, then `action`; a failure's message on that line. */
  function onSubmit(form, errorLine, action) {
    $(form).addEventListener('submit', async (ev) => {
      ev.preventDefault();
      $(errorLine).textContent = '';
      try {
        await action();
      } catch (e) {
        $(errorLine).textContent = e.message;
      }
    });
  }

  onSubmit('login-form', 'login-error', async () => {
    const data = await api('POST', '/admin/login', { username: $('login-username').value, password: $('login-password').value });
    token = data.token;
    sessionStorage.setItem(KEY, token);
    $('who').textContent = $('login-username').value;
    if (data.must_change_password) { show('password-screen'); return; }
    show('users-screen');
    await load();
  });

  onSubmit('password-form', 'password-error', async () => {
    const data = await api('PUT', '/user/password', { current_password: $('pw-current').value, new_password: $('pw-new').value });
    token = data.token;
    sessionStorage.setItem(KEY, token);
    show('users-screen');
    notice('Password changed.');
    await load();
  });

  $('search-button').addEventListener('click', load);
  $('search').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') load(); });
  $('new-user').addEventListener('click', () => { $('create-form').reset(); $('create-error').textContent = ''; $('create-dialog').showModal(); });
  $('create-cancel').addEventListener('click', () => $('create-dialog').close());
  $('edit-cancel').addEventListener('click', () => $('edit-dialog').close());
  $('logout').addEventListener('click', () => signOut());

  onSubmit('create-form', 'create-error', async () => {
    const body = { username: $('new-username').value, role: $('new-role').value };
    if ($('new-email').value) body.email = $('new-email').value;
    if ($('new-password').value) body.password = $('new-password').value;
    const data = await api('POST', '/admin/users', body);
    $('create-dialog').close();
    notice('Created ' + data.username + (data.temporary_password ? ' — temporary password: ' + data.temporary_password : '') + ' (must change it at first login)');
    await load();
  });

  onSubmit('edit-form', 'edit-error', async () => {
    await api('PUT', '/admin/users/' + encodeURIComponent(editing), { role: $('edit-role').value, status: $('edit-status').value });
    $('edit-dialog').close();
    notice(editing + ' updated');
    await load();
  });

  if (token) { show('users-screen'); load(); } else show('login-screen');
})();
