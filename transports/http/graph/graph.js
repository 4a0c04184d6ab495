// The graph visualizer: GET /graph/data drawn on a canvas with a force layout.
// Data reaches the page through textContent only; the token lives in localStorage.svc_token.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const canvas = $('canvas');
  const ctx = canvas.getContext('2d');
  const TOKEN_KEY = 'svc_token';

  /** The graph so far: nodes by id (with positions), edges by id. */
  const state = {
    nodes: new Map(),
    edges: new Map(),
    frontier: new Set(),
    source: null,
    selected: null,
    matches: new Set(),
    view: { x: 0, y: 0, k: 1 },
    alpha: 0,
    loading: false,
  };

  const token = () => localStorage.getItem(TOKEN_KEY);

  // ---- colours -------------------------------------------------------------------------
  const colours = new Map();
  function colourOf(type) {
    let c = colours.get(type);
    if (!c) {
      let h = 0;
      for (let i = 0; i < type.length; i++) h = (h * 31 + type.charCodeAt(i)) >>> 0;
      c = type === 'Root' ? '#1d2433' : `hsl(${h % 360}, 62%, 48%)`;
      colours.set(type, c);
    }
    return c;
  }

  // ---- data ------------------------------------------------------------------------------
  async function request(url, options = {}) {
    const headers = { ...(options.headers || {}) };
    const t = token();
    if (t) headers.authorization = `Bearer ${t}`;
    const res = await fetch(url, { ...options, headers });
    const body = await res.json().catch(() => null);
    if (res.status === 401 && t) {
      localStorage.removeItem(TOKEN_KEY);
      showWho();
      throw new Error('your token is no longer accepted: sign in again (the public graph is shown meanwhile)');
    }
    if (!res.ok || !body || body.ok !== true) throw new Error((body && body.error && body.error.message) || `HTTP ${res.status}`);
    return body.data;
  }

  function dataUrl(source) {
    const q = new URLSearchParams({ depth: String(clamp(Number($('depth').value), 0, 100, 3)), limit: String(clamp(Number($('limit').value), 1, 10000, 1000)), detailed: 'true' });
    if (source) q.set('source', source);
    return `/graph/data?${q}`;
  }

  function clamp(v, lo, hi, fallback) {
    return Number.isFinite(v) ? Math.min(hi, Math.max(lo, Math.round(v))) : fallback;
  }

  /**
   * Add a traversal's nodes and edges. New nodes start on a radial tree around
   * the node the traversal started from (each subtree gets an angle in
   * proportion to its leaves), which the force layout then relaxes.
   */
  function merge(data, around) {
    const parent = new Map();
    const children = new Map();
    for (const e of data.edges) {
      if (e.target === data.source || parent.has(e.target)) continue;
      parent.set(e.target, e.source);
      if (!children.has(e.source)) children.set(e.source, []);
      children.get(e.source).push(e.target);
    }
    const leaves = new Map();
    const count = (id, seen) => {
      if (seen.has(id)) return 0;
      seen.add(id);
      let n = 0;
      for (const c of children.get(id) || []) n += count(c, seen);
      leaves.set(id, Math.max(1, n));
      return Math.max(1, n);
    };
    count(data.source, new Set());
    const placed = new Map();
    const base = around || { x: 0, y: 0 };
    const place = (id, depth, from, to) => {
      const angle = (from + to) / 2;
      const r = depth * 70;
      placed.set(id, { x: base.x + r * Math.cos(angle), y: base.y + r * Math.sin(angle) });
      const kids = children.get(id) || [];
      const total = kids.reduce((a, c) => a + (leaves.get(c) || 1), 0) || 1;
      let at = from;
      for (const c of kids) {
        if (placed.has(c)) continue;
        const span = ((to - from) * (leaves.get(c) || 1)) / total;
        place(c, depth + 1, at, at + span);
        at += span;
      }
    };
    place(data.source, around ? 1 : 0, 0, 2 * Math.PI);
    let added = 0;
    data.nodes.forEach((n, i) => {
      const known = state.nodes.get(n.id);
      if (known) {
        known.context = n.context || known.context;
        return;
      }
      const p = placed.get(n.id) || { x: base.x + 30 * Math.cos(i), y: base.y + 30 * Math.sin(i) };
      state.nodes.set(n.id, { id: n.id, type: n.type, context: n.context || {}, x: p.x + Math.random() - 0.5, y: p.y + Math.random() - 0.5, vx: 0, vy: 0 });
      added++;
    });
    for (const e of data.edges) if (!state.edges.has(e.id)) state.edges.set(e.id, e);
    const frontier = new Set(data.frontier || []);
    for (const id of frontier) state.frontier.add(id);
    // Nodes whose edges this traversal followed are no longer on the frontier.
    if (data.depth > 0) for (const n of data.nodes) if (!frontier.has(n.id)) state.frontier.delete(n.id);
    return added;
  }

  async function load() {
    if (state.loading) return;
    state.loading = true;
    setStatus('Loading…');
    try {
      let data;
      let notice = '';
      try {
        data = await request(dataUrl());
      } catch (error) {
        // A token the server no longer takes: the public graph instead, and say so.
        if (token() !== null || !/sign in again/.test(error.message)) throw error;
        notice = error.message;
        data = await request(dataUrl());
      }
      state.nodes.clear();
      state.edges.clear();
      state.frontier.clear();
      state.selected = null;
      state.source = data.source;
      merge(data);
      fit();
      showDetails(null);
      afterLoad(data, undefined, notice);
    } catch (error) {
      setStatus(error.message, true);
    } finally {
      state.loading = false;
    }
  }

  /** Follow the edges of frontier nodes (paging through a graph larger than one answer). */
  async function more(ids) {
    if (state.loading) return;
    state.loading = true;
    setStatus('Loading more…');
    try {
      let added = 0;
      let last = null;
      for (const id of ids.slice(0, 20)) {
        const from = state.nodes.get(id);
        last = await request(dataUrl(id));
        added += merge(last, from);
        state.frontier.delete(id);
        for (const f of last.frontier || []) if (f !== id) state.frontier.add(f);
      }
      afterLoad(last, added);
    } catch (error) {
      setStatus(error.message, true);
    } finally {
      state.loading = false;
    }
  }

  function afterLoad(data, added, notice) {
    const n = state.nodes.size;
    const e = state.edges.size;
    const more = state.frontier.size;
    const summary = `${n} node${n === 1 ? '' : 's'}, ${e} edge${e === 1 ? '' : 's'}${added !== undefined ? ` (${added} new)` : ''}${data && data.truncated ? ' — cut at the limit' : ''}${more ? ` — ${more} not expanded` : ''}`;
    setStatus(notice ? `${notice}. ${summary}` : summary, Boolean(notice));
    $('more').hidden = more === 0;
    legend();
    search();
    state.alpha = 1;
    kick();
  }

  /** Everything in view (zoomed out as far as needed, never in past 1.5×). */
  function fit() {
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (const n of state.nodes.values()) {
      minX = Math.min(minX, n.x);
      minY = Math.min(minY, n.y);
      maxX = Math.max(maxX, n.x);
      maxY = Math.max(maxY, n.y);
    }
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    if (!Number.isFinite(minX)) {
      state.view = { x: w / 2, y: h / 2, k: 1 };
      return;
    }
    const k = Math.min(1.5, (w - 40) / Math.max(1, maxX - minX), (h - 40) / Math.max(1, maxY - minY));
    state.view = { k, x: w / 2 - ((minX + maxX) / 2) * k, y: h / 2 - ((minY + maxY) / 2) * k };
  }

  function setStatus(text, error) {
    const s = $('status');
    s.textContent = text;
    s.className = error ? 'error' : 'muted';
  }

  function legend() {
    const counts = new Map();
    for (const n of state.nodes.values()) counts.set(n.type, (counts.get(n.type) || 0) + 1);
    const ul = $('legend');
    ul.textContent = '';
    for (const [type, count] of [...counts].sort((a, b) => b[1] - a[1])) {
      const li = document.createElement('li');
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = colourOf(type);
      const label = document.createElement('span');
      label.textContent = `${type} (${count})`;
      li.append(sw, label);
      ul.append(li);
    }
  }

  // ---- details and search ----------------------------------------------------------------
  function showDetails(node) {
    state.selected = node ? node.id : null;
    $('details').hidden = !node;
    if (!node) return draw();
    $('details-type').textContent = node.type;
    $('details-id').textContent = node.id;
    const body = $('details-fields').querySelector('tbody');
    body.textContent = '';
    const entries = Object.entries(node.context || {});
    if (entries.length === 0) {
      const tr = document.createElement('tr');
      const td = document.createElement('td');
      td.colSpan = 2;
      td.textContent = 'no fields';
      tr.append(td);
      body.append(tr);
    }
    for (const [k, v] of entries) {
      const tr = document.createElement('tr');
      const key = document.createElement('td');
      key.textContent = k;
      const value = document.createElement('td');
      value.textContent = typeof v === 'string' ? v : JSON.stringify(v);
      tr.append(key, value);
      body.append(tr);
    }
    $('expand').hidden = !state.frontier.has(node.id);
    draw();
  }

  function search() {
    const q = $('search').value.trim().toLowerCase();
    state.matches.clear();
    if (q) {
      for (const n of state.nodes.values()) {
        const text = `${n.id} ${n.type} ${JSON.stringify(n.context)}`.toLowerCase();
        if (text.includes(q)) state.matches.add(n.id);
      }
    }
    $('found').textContent = q ? `${state.matches.size} found` : '';
    draw();
  }

  function focusFirstMatch() {
    const [first] = state.matches;
    const node = first && state.nodes.get(first);
    if (!node) return;
    state.view.x = canvas.clientWidth / 2 - node.x * state.view.k;
    state.view.y = canvas.clientHeight / 2 - node.y * state.view.k;
    showDetails(node);
  }

  // ---- layout ----------------------------------------------------------------------------
  let ticking = false;
  function kick() {
    if (ticking) return;
    ticking = true;
    requestAnimationFrame(step);
  }

  function step() {
    for (let i = 0; i < 3 && state.alpha > 0.01; i++) tick();
    draw();
    if (state.alpha > 0.01) requestAnimationFrame(step);
    else ticking = false;
  }

  /** One layout step: repulsion between nearby nodes (a grid, not every pair), springs along edges, a pull to the centre. */
  function tick() {
    const nodes = [...state.nodes.values()];
    const alpha = state.alpha;
    const cell = 80;
    const grid = new Map();
    for (const n of nodes) {
      const key = `${Math.floor(n.x / cell)},${Math.floor(n.y / cell)}`;
      let list = grid.get(key);
      if (!list) grid.set(key, (list = []));
      list.push(n);
    }
    for (const n of nodes) {
      const cx = Math.floor(n.x / cell);
      const cy = Math.floor(n.y / cell);
      for (let dx = -1; dx <= 1; dx++) {
        for (let dy = -1; dy <= 1; dy++) {
          const list = grid.get(`${cx + dx},${cy + dy}`);
          if (!list) continue;
          for (const m of list) {
            if (m === n) continue;
            let x = n.x - m.x;
            let y = n.y - m.y;
            let d2 = x * x + y * y;
            if (d2 < 0.01) {
              x = Math.random() - 0.5;
              y = Math.random() - 0.5;
              d2 = 0.5;
            }
            if (d2 > cell * cell) continue;
            const f = (900 / d2) * alpha;
            n.vx += x * f * 0.05;
            n.vy += y * f * 0.05;
          }
        }
      }
    }
    for (const e of state.edges.values()) {
      const a = state.nodes.get(e.source);
      const b = state.nodes.get(e.target);
      if (!a || !b) continue;
      const x = b.x - a.x;
      const y = b.y - a.y;
      const d = Math.sqrt(x * x + y * y) || 1;
      const f = ((d - 50) / d) * 0.05 * alpha;
      a.vx += x * f;
      a.vy += y * f;
      b.vx -= x * f;
      b.vy -= y * f;
    }
    for (const n of nodes) {
      n.vx -= n.x * 0.0005 * alpha;
      n.vy -= n.y * 0.0005 * alpha;
      n.vx *= 0.6;
      n.vy *= 0.6;
      n.x += Math.max(-40, Math.min(40, n.vx));
      n.y += Math.max(-40, Math.min(40, n.vy));
    }
    state.alpha *= 0.985;
  }

  // ---- drawing ---------------------------------------------------------------------------
  function resize() {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.floor(canvas.clientWidth * ratio));
    canvas.height = Math.max(1, Math.floor(canvas.clientHeight * ratio));
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    draw();
  }

  const radius = (n) => (n.id === state.source ? 9 : 6);

  function draw() {
    const { x: tx, y: ty, k } = state.view;
    ctx.save();
    ctx.clearRect(0, 0, canvas.clientWidth, canvas.clientHeight);
    ctx.translate(tx, ty);
    ctx.scale(k, k);
    ctx.lineWidth = 1 / k;
    ctx.strokeStyle = 'rgba(91, 101, 118, 0.45)';
    ctx.fillStyle = 'rgba(91, 101, 118, 0.6)';
    for (const e of state.edges.values()) {
      const a = state.nodes.get(e.source);
      const b = state.nodes.get(e.target);
      if (!a || !b) continue;
      ctx.beginPath();
      ctx.moveTo(a.x, a.y);
      ctx.lineTo(b.x, b.y);
      ctx.stroke();
      // An arrow head at the target's edge.
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const d = Math.sqrt(dx * dx + dy * dy) || 1;
      const ex = b.x - (dx / d) * (radius(b) + 1);
      const ey = b.y - (dy / d) * (radius(b) + 1);
      ctx.beginPath();
      ctx.moveTo(ex, ey);
      ctx.lineTo(ex - (dx / d) * 6 + (dy / d) * 3, ey - (dy / d) * 6 - (dx / d) * 3);
      ctx.lineTo(ex - (dx / d) * 6 - (dy / d) * 3, ey - (dy / d) * 6 + (dx / d) * 3);
      ctx.closePath();
      ctx.fill();
    }
    for (const n of state.nodes.values()) {
      ctx.beginPath();
      ctx.arc(n.x, n.y, radius(n), 0, 2 * Math.PI);
      ctx.fillStyle = colourOf(n.type);
      ctx.fill();
      if (n.id === state.selected || state.matches.has(n.id)) {
        ctx.lineWidth = 3 / k;
        ctx.strokeStyle = n.id === state.selected ? '#f0a000' : '#e2336b';
        ctx.stroke();
        ctx.lineWidth = 1 / k;
      }
      if (state.frontier.has(n.id)) {
        ctx.beginPath();
        ctx.arc(n.x, n.y, radius(n) + 3, 0, 2 * Math.PI);
        ctx.strokeStyle = 'rgba(47, 95, 208, 0.5)';
        ctx.stroke();
      }
    }
    if (k > 0.8 && state.nodes.size <= 400) {
      ctx.fillStyle = '#1d2433';
      ctx.font = `${11 / k}px system-ui, sans-serif`;
      for (const n of state.nodes.values()) ctx.fillText(n.type, n.x + radius(n) + 2, n.y + 4 / k);
    }
    ctx.restore();
  }

  // ---- pointer ---------------------------------------------------------------------------
  const toGraph = (px, py) => ({ x: (px - state.view.x) / state.view.k, y: (py - state.view.y) / state.view.k });

  function nodeAt(px, py) {
    const p = toGraph(px, py);
    let best = null;
    let bestD = Infinity;
    for (const n of state.nodes.values()) {
      const d = (n.x - p.x) ** 2 + (n.y - p.y) ** 2;
      const r = radius(n) + 4 / state.view.k;
      if (d <= r * r && d < bestD) {
        best = n;
        bestD = d;
      }
    }
    return best;
  }

  let drag = null;
  canvas.addEventListener('pointerdown', (ev) => {
    drag = { x: ev.offsetX, y: ev.offsetY, vx: state.view.x, vy: state.view.y, moved: false };
    canvas.setPointerCapture(ev.pointerId);
    canvas.classList.add('dragging');
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    const dx = ev.offsetX - drag.x;
    const dy = ev.offsetY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    state.view.x = drag.vx + dx;
    state.view.y = drag.vy + dy;
    draw();
  });
  canvas.addEventListener('pointerup', (ev) => {
    canvas.classList.remove('dragging');
    const was = drag;
    drag = null;
    if (was && !was.moved) showDetails(nodeAt(ev.offsetX, ev.offsetY));
  });
  canvas.addEventListener(
    'wheel',
    (ev) => {
      ev.preventDefault();
      const k = Math.min(8, Math.max(0.05, state.view.k * Math.exp(-ev.deltaY * 0.0015)));
      const p = toGraph(ev.offsetX, ev.offsetY);
      state.view.k = k;
      state.view.x = ev.offsetX - p.x * k;
      state.view.y = ev.offsetY - p.y * k;
      draw();
    },
    { passive: false },
  );

  // ---- signing in ------------------------------------------------------------------------
  function showWho() {
    const signedIn = token() !== null;
    $('who').textContent = signedIn ? 'your graph' : 'public graph';
    $('signin-open').hidden = signedIn;
    $('signout').hidden = !signedIn;
  }

  $('signin-open').addEventListener('click', () => {
    $('signin-error').textContent = '';
    $('signin').showModal();
  });
  $('signin-cancel').addEventListener('click', () => $('signin').close());
  $('signout').addEventListener('click', () => {
    localStorage.removeItem(TOKEN_KEY);
    showWho();
    load();
  });
  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const pasted = $('token').value.trim();
    try {
      if (pasted) {
        localStorage.setItem(TOKEN_KEY, pasted.replace(/^Bearer\s+/i, ''));
      } else {
        const value = $('username').value.trim();
        const res = await fetch('/user/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ identity: { type: value.includes('@') ? 'email' : 'username', value }, credential: { type: 'password', password: $('password').value } }),
        });
        const body = await res.json().catch(() => null);
        if (!res.ok || !body || !body.ok) throw new Error((body && body.error && body.error.message) || `HTTP ${res.status}`);
        localStorage.setItem(TOKEN_KEY, body.data.token);
      }
      $('password').value = '';
      $('signin').close();
      showWho();
      load();
    } catch (error) {
      $('signin-error').textContent = error.message;
    }
  });

  // ---- controls --------------------------------------------------------------------------
  $('controls').addEventListener('submit', (ev) => {
    ev.preventDefault();
    load();
  });
  $('more').addEventListener('click', () => more([...state.frontier]));
  $('expand').addEventListener('click', () => state.selected && more([state.selected]));
  $('search').addEventListener('input', search);
  $('search').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') focusFirstMatch();
  });
  window.addEventListener('resize', resize);

  // For tests and the curious: where a node is on screen, and what is loaded.
  window.svcGraph = {
    get nodes() {
      return state.nodes.size;
    },
    get edges() {
      return state.edges.size;
    },
    get loading() {
      return state.loading;
    },
    get settled() {
      return !state.loading && state.alpha <= 0.01;
    },
    ids: () => [...state.nodes.keys()],
    screenPosition(id) {
      const n = state.nodes.get(id);
      if (!n) return null;
      const r = canvas.getBoundingClientRect();
      return { x: r.left + state.view.x + n.x * state.view.k, y: r.top + state.view.y + n.y * state.view.k };
    },
    focus(id) {
      const n = state.nodes.get(id);
      if (!n) return false;
      state.view.x = canvas.clientWidth / 2 - n.x * state.view.k;
      state.view.y = canvas.clientHeight / 2 - n.y * state.view.k;
      draw();
      return true;
    },
  };

  showWho();
  resize();
  load();
})();
