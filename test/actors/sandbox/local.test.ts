// The local sandbox provider with real processes: the port pool, a dev server started, ready, fenced in
// (user, private /tmp, cgroup) and stopped without a trace, commands (output, exit code, timeout, abort),
// logs read in bytes without cutting a character, and a dev server that outlives the svc process that
// started it and is stopped by another. Isolation is asserted only as root (a visible comment otherwise).
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ORCHESTRATOR_DEFAULTS } from '../../helpers/sandbox.ts';
import { localIsolation, parseCpu, parseQuantity, SANDBOX_UID_BASE, sandboxOwner } from '../../../actors/sandbox/isolation.ts';
import { completeUtf8, LocalRunner } from '../../../actors/sandbox/local.ts';
import { logPath } from '../../../actors/sandbox/project.ts';
import type { SandboxRecord, SandboxSettings } from '../../../actors/sandbox/types.ts';

const LOCAL_TS = new URL('../../../actors/sandbox/local.ts', import.meta.url).pathname;
const ROOT = process.getuid?.() === 0;
const iso = localIsolation();
t.comment(`isolation here: ${JSON.stringify(iso)}`);
if (!ROOT) t.comment('not root: user, private /tmp and cgroup assertions are skipped');

const SERVER_JS = `const http = require('http');
const fs = require('fs');
try { fs.writeFileSync('/tmp/svc-local-' + process.env.SVC_SANDBOX_ID, 'private'); } catch {}
http.createServer((q, r) => r.end('hello from ' + process.env.SVC_SANDBOX_ID)).listen(+process.env.PORT, process.env.HOST, () => console.log('Server ready on ' + process.env.PORT));
`;

function settings(base: number, over: Partial<SandboxSettings> = {}): SandboxSettings {
  return {
    enabled: true,
    type: 'local',
    base_image: 'node:20-slim',
    memory_limit: '256Mi',
    cpu_limit: '500m',
    network_isolation: true,
    ttl_seconds: 3600,
    max_per_user: 3,
    security_context: true,
    storage_limit: '64Mi',
    container_cli: '',
    readiness_timeout_seconds: 30,
    port_base: base,
    port_count: 10,
    port_stride: 2,
    check_interval_ms: 1000,
    cleanup_interval_seconds: 60,
    max_restarts: 3,
    pids_limit: 64,
    root: '',
    ...ORCHESTRATOR_DEFAULTS,
    ...over,
  };
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** An even port base below the ephemeral range whose 20 ports are free now. */
async function freeBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + 2 * Math.floor(Math.random() * 6000);
    let ok = true;
    for (let p = base; p < base + 20 && ok; p++) ok = (await bindable(p, '127.0.0.1')) && (await bindable(p, '0.0.0.0'));
    if (ok) return base;
  }
  throw new Error('no free port range found');
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000, every = 25): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await cond()) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Pids whose process group is `pgid` (zombies excluded). */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[2]) === pgid && f[0] !== 'Z') out.push(Number(name));
    } catch {
      // Gone.
    }
  }
  return out;
}

/** Pids whose command line holds `marker`. */
function withMarker(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) out.push(Number(name));
    } catch {
      // Gone.
    }
  }
  return out;
}

function uidOf(pid: number): number {
  return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

function cgroupDir(pid: number, controller: string): string | undefined {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller));
  return line ? join('/sys/fs/cgroup', controller, line.split(':')[2] as string) : undefined;
}

const made: string[] = [];
t.teardown(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

let n = 0;
/** A sandbox folder (in `under`, else the system's temporary folder) with a project (`dev` script and files), and its record. */
function sandbox(port: number, files: Record<string, string> = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.js' } }), 'server.js': SERVER_JS }, under = tmpdir()): SandboxRecord {
  const dir = mkdtempSync(join(under, 'svc-local-sb-'));
  // As create makes it (mkdir: 0755); start narrows it.
  chmodSync(dir, 0o755);
  made.push(dir);
  mkdirSync(join(dir, 'app'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'app', name), text);
  const now = new Date().toISOString();
  const id = `sb-local-${process.pid}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
  return { sandbox_id: id, user: 'u1', project: 'p1', state: 'pending', url: '', type: 'local', created_at: now, updated_at: now, restarts: 0, host: 'here', dir, port };
}

/** Stop and release at teardown. */
function cleanup(t: Test, runner: LocalRunner, record: SandboxRecord): void {
  t.teardown(async () => {
    await runner.stop(record);
    await runner.release(record);
  });
}

t.test('quantities', async (t) => {
  t.equal(parseQuantity('512Mi'), 512 * 2 ** 20);
  t.equal(parseQuantity('2Gi'), 2 * 2 ** 30);
  t.equal(parseQuantity('500M'), 500e6);
  t.equal(parseQuantity('1.5G'), 1.5e9);
  t.equal(parseQuantity('1e3'), 1000);
  t.equal(parseQuantity('128974848'), 128974848);
  t.throws(() => parseQuantity('12 MB'), RangeError);
  t.throws(() => parseQuantity(''), RangeError);
  t.equal(parseCpu('500m'), 0.5);
  t.equal(parseCpu('2'), 2);
  t.equal(parseCpu('1.5'), 1.5);
  t.throws(() => parseCpu('half'), RangeError);
});

t.test('the port pool', async (t) => {
  const base = await freeBase();
  const runner = new LocalRunner(settings(base));
  const records = Array.from({ length: 10 }, () => sandbox(0));
  const ports: number[] = [];
  for (const r of records) ports.push((await runner.prepare(r)).port as number);
  t.same(ports, Array.from({ length: 10 }, (_, i) => base + 2 * i), 'ten sandboxes get base…base+18');
  t.same(await runner.prepare(records[0] as SandboxRecord), { port: base, url: `http://localhost:${base}` }, 'a sandbox prepared again keeps its port');
  const eleventh = sandbox(0);
  await t.rejects(runner.prepare(eleventh), { code: 'SANDBOX_NO_PORT', message: /no free port/ }, 'the eleventh: no free port');
  await runner.release({ ...(records[3] as SandboxRecord), port: base + 6 });
  t.equal((await runner.prepare(eleventh)).port, base + 6, 'a released port is reused');
  for (const [i, r] of records.entries()) await runner.release({ ...r, port: ports[i] as number });
  await runner.release({ ...eleventh, port: base + 6 });

  const held: Server = createServer();
  await new Promise<void>((r) => held.listen(base, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => held.close(() => r())));
  const claims: string[] = [];
  const hooked = new LocalRunner(settings(base), {
    claimPort: async (port, id) => (claims.push(`claim ${port} ${id}`), port !== base + 2),
    releasePort: async (port, id) => void claims.push(`release ${port} ${id}`),
  });
  const a = sandbox(0);
  t.equal((await hooked.prepare(a)).port, base + 4, 'a port another process holds is skipped, and one the store refuses');
  t.same(claims, [`claim ${base} ${a.sandbox_id}`, `release ${base} ${a.sandbox_id}`, `claim ${base + 2} ${a.sandbox_id}`, `claim ${base + 4} ${a.sandbox_id}`], 'claimed through the hook, given back when taken');
  await hooked.release({ ...a, port: base + 4 });
  t.equal(claims.at(-1), `release ${base + 4} ${a.sandbox_id}`);
});

t.test('a dev server: start, ready, fenced in, exec, stop', async (t) => {
  const base = await freeBase();
  const s = settings(base);
  const runner = new LocalRunner(s);
  const record = sandbox(0);
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);
  const t0 = performance.now();
  Object.assign(record, await runner.start(record));
  const pid = record.pid as number;
  t.ok(pid > 0, 'a pid');
  t.equal(await runner.alive(record), true, 'alive');
  await until('ready', () => runner.ready(record), 15_000);
  t.comment(`start → ready: ${(performance.now() - t0).toFixed(0)} ms`);
  const res = await fetch(record.url);
  t.equal(await res.text(), `hello from ${record.sandbox_id}`, 'the URL answers');
  t.match((await runner.logs(record, 0)).content, /Server ready on \d+/);
  t.same(groupMembers(pid).includes(pid), true, 'the pid leads its own process group');

  const out: string[] = [];
  const err: string[] = [];
  const code = await runner.exec(record, 'echo hi; echo err >&2; exit 3', { timeoutMs: 5000, onStdout: (c) => out.push(c.toString()), onStderr: (c) => err.push(c.toString()) });
  t.same([out.join(''), err.join(''), code], ['hi\n', 'err\n', 3], 'exec: stdout, stderr, exit code');
  let where = '';
  await runner.exec(record, 'pwd; ls; id -u', { timeoutMs: 5000, onStdout: (c) => (where += c.toString()) });
  t.match(where, /package\.json/, 'exec runs in the project folder');

  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const e0 = performance.now();
    await runner.exec(record, 'true', { timeoutMs: 5000 });
    times.push(performance.now() - e0);
  }
  times.sort((a, b) => a - b);
  t.comment(`exec round trip beside a live dev server: p50 ${times[25]?.toFixed(1)} ms, p90 ${times[45]?.toFixed(1)} ms`);

  if (ROOT && iso.user) {
    const members = groupMembers(pid);
    const uid = SANDBOX_UID_BASE + record.port;
    t.ok(members.length > 0 && members.every((p) => uidOf(p) === uid), 'the dev server runs as uid 200000 + its port');
    t.same(sandboxOwner(record), { uid, gid: uid });
    t.ok(where.endsWith(`\n${uid}\n`), 'exec runs as that uid too');
  } else t.comment('skipped: dev server user (not root or no setpriv)');
  if (ROOT && iso.privateTmp) {
    t.equal(existsSync(`/tmp/svc-local-${record.sandbox_id}`), false, "what it writes to /tmp is not in the host's /tmp");
    let seen = '';
    await runner.exec(record, `cat /tmp/svc-local-${record.sandbox_id}`, { timeoutMs: 5000, onStdout: (c) => (seen += c.toString()) });
    t.equal(seen, 'private', "a command beside it sees the dev server's /tmp");
    t.match(where, /^\/tmp\/app\n/, 'the project is /tmp/app inside');
  } else t.comment('skipped: private /tmp (not root or no unshare)');
  if (ROOT && iso.cgroup) {
    const memory = cgroupDir(pid, 'memory') as string;
    t.equal(readFileSync(join(memory, 'memory.limit_in_bytes'), 'utf8').trim(), String(parseQuantity(s.memory_limit)), "its memory limit is in its cgroup");
    t.equal(readFileSync(join(cgroupDir(pid, 'pids') as string, 'pids.max'), 'utf8').trim(), String(s.pids_limit), 'its process limit too');
    if (iso.cpu) t.equal(readFileSync(join(cgroupDir(pid, 'cpu') as string, 'cpu.cfs_quota_us'), 'utf8').trim(), '50000', 'and half a CPU');
  } else t.comment('skipped: cgroup (none writable here)');

  // A process that left the group (setsid) is still found (its cgroup, its environment).
  const marker = `77.${Date.now() % 100000}${n}1`;
  // The command waits until the process has left its group (its shell's pid file is written after setsid).
  await runner.exec(record, `setsid sh -c 'echo $$ > /tmp/escaped; exec sleep ${marker}' > /dev/null 2>&1 < /dev/null & while [ ! -s /tmp/escaped ]; do sleep 0.01; done`, { timeoutMs: 5000 });
  const escaped = withMarker(marker);
  t.equal(escaped.length, 1, 'a setsid process outlives its command');

  await runner.stop(record);
  t.equal(await connects(record.port), false, 'nothing listens on its port after stop');
  t.same(groupMembers(pid), [], 'no process left in its group');
  t.same(withMarker(marker), [], 'nor one that left the group');
  t.equal(await runner.alive(record), false, 'not alive');
  if (ROOT && iso.cgroup) t.equal(existsSync(join('/sys/fs/cgroup/memory/svc-sandboxes', record.sandbox_id)), false, 'its cgroup is removed');
  await runner.stop(record);
  t.pass('stop again: nothing to do');
});

t.test('commands: timeout, abort, background processes, no dev server', async (t) => {
  const base = await freeBase();
  const runner = new LocalRunner(settings(base));
  const record = sandbox(0);
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);

  const marker = `5.${Date.now() % 100000}${n}2`;
  const t0 = performance.now();
  await t.rejects(runner.exec(record, `sleep ${marker}`, { timeoutMs: 1000 }), { code: 'SANDBOX_TIMEOUT' }, 'sleep 5 with a 1 s timeout');
  const took = performance.now() - t0;
  t.ok(took >= 1000 && took < 1500, `rejected within ~1.5 s (${took.toFixed(0)} ms)`);
  t.same(withMarker(marker), [], 'no sleep process remains');

  const abort = new AbortController();
  const marker2 = `6.${Date.now() % 100000}${n}3`;
  setTimeout(() => abort.abort(), 200);
  await t.rejects(runner.exec(record, `sleep ${marker2}`, { timeoutMs: 10_000, signal: abort.signal }), { name: 'AbortError' }, 'aborted: rejects with the reason');
  t.same(withMarker(marker2), [], 'and its process is gone');
  await t.rejects(runner.exec(record, 'true', { timeoutMs: 1000, signal: AbortSignal.abort() }), { name: 'AbortError' }, 'aborted before it starts');

  const marker3 = `7.${Date.now() % 100000}${n}4`;
  const b0 = performance.now();
  t.equal(await runner.exec(record, `sleep ${marker3} & echo started`, { timeoutMs: 5000 }), 0);
  t.ok(performance.now() - b0 < 1000, 'a command that leaves a background process returns when its shell exits');
  t.same(withMarker(marker3), [], 'what it left in its group is killed');

  const times: number[] = [];
  let id = '';
  for (let i = 0; i < 20; i++) {
    const e0 = performance.now();
    await runner.exec(record, 'id -u', { timeoutMs: 5000, onStdout: (c) => (id = c.toString()) });
    times.push(performance.now() - e0);
  }
  times.sort((a, b) => a - b);
  t.comment(`exec round trip with no dev server (full chain: cgroup, new mount namespace and tmpfs, user): p50 ${times[10]?.toFixed(1)} ms`);
  if (ROOT && iso.user) t.equal(id, `${SANDBOX_UID_BASE + record.port}\n`, 'runs as uid 200000 + its port without a dev server too');
});

t.test('a memory hog is killed at its cgroup limit', { skip: ROOT && iso.cgroup ? false : 'no writable cgroup (or not root)' }, async (t) => {
  const base = await freeBase();
  const runner = new LocalRunner(settings(base, { memory_limit: '96Mi' }));
  const record = sandbox(0);
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);
  const code = await runner.exec(record, `node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20).fill(1))"`, { timeoutMs: 20_000 });
  t.equal(code, 137, 'killed (SIGKILL by the OOM killer)');
});

t.test('a dev server that exits before it is ready', async (t) => {
  const base = await freeBase();
  const runner = new LocalRunner(settings(base));
  const record = sandbox(0, { 'package.json': JSON.stringify({ scripts: { dev: 'echo starting; exit 1' } }) });
  Object.assign(record, await runner.prepare(record));
  t.equal(record.port, base);
  Object.assign(record, await runner.start(record));
  await until('the dev server to exit', async () => !(await runner.alive(record)));
  t.equal(await runner.ready(record), false, 'never ready');
  t.match((await runner.logs(record, 0)).content, /starting/);
  await runner.stop(record);
  await runner.release(record);
  const next = sandbox(0);
  t.equal((await runner.prepare(next)).port, base, 'its port is free again after release');
  await runner.release({ ...next, port: base });
  await runner.release(record);
  t.pass('release again: nothing to do');
});

t.test('logs: offsets in bytes, characters never cut', async (t) => {
  const base = await freeBase();
  const runner = new LocalRunner(settings(base));
  const text = 'héllo wörld ✓ 𝄞 end\n';
  const record = sandbox(0, { 'package.json': JSON.stringify({ scripts: { dev: `node -e "process.stdout.write('${text.trimEnd()}\\n')"` } }) });
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);
  Object.assign(record, await runner.start(record));
  await until('the text in the log', async () => (await runner.logs(record, 0)).content === text);
  const bytes = Buffer.from(text);
  const whole = await runner.logs(record, 0);
  t.same(whole, { content: text, offset: bytes.length }, 'offset is in bytes');
  t.same(await runner.logs(record, bytes.length), { content: '', offset: bytes.length }, 'at the end: nothing new');
  t.same(await runner.logs(record, bytes.length + 10), { content: '', offset: bytes.length + 10 }, 'past the end: nothing');
  t.same(await runner.logs(record, 7), { content: text.slice(6), offset: bytes.length }, 'from a byte offset after "héllo "');

  // Written a byte at a time: every read ends on a whole character, and the reads add up to the text.
  const other = sandbox(0);
  let offset = 0;
  let got = '';
  for (let i = 0; i < bytes.length; i++) {
    appendFileSync(logPath(other), bytes.subarray(i, i + 1));
    const r = await runner.logs(other, offset);
    t.notMatch(r.content, /\uFFFD/, `read ${i} holds no broken character`);
    got += r.content;
    offset = r.offset;
  }
  t.equal(got, text, 'successive reads add up to the text');
  t.equal(offset, bytes.length);
  t.same(await runner.logs(sandbox(0), 0), { content: '', offset: 0 }, 'no log yet: nothing');

  t.equal(completeUtf8(Buffer.from([0x61, 0xe2, 0x9c])), 1, 'a 3-byte character cut after 2 bytes');
  t.equal(completeUtf8(Buffer.from([0x61, 0xf0, 0x9d, 0x84])), 1, 'a 4-byte one cut after 3');
  t.equal(completeUtf8(Buffer.from('✓')), 3, 'whole');
  t.equal(completeUtf8(Buffer.from([0x80, 0x80, 0x80, 0x80])), 4, 'not UTF-8: nothing held back');

  // A read capped at 1 MiB that would end inside a character.
  const big = sandbox(0);
  writeFileSync(logPath(big), Buffer.concat([Buffer.alloc(1024 * 1024 - 1, 'a'), Buffer.from('✓ tail')]));
  const first = await runner.logs(big, 0);
  t.equal(first.offset, 1024 * 1024 - 1, 'the cap moves back to the start of the character');
  t.equal((await runner.logs(big, first.offset)).content, '✓ tail');
});

t.test('a dev server outlives the svc process that started it, and another stops it', async (t) => {
  const base = await freeBase();
  const record = sandbox(base);
  const s = settings(base);
  const code = `
    import { LocalRunner } from ${JSON.stringify(LOCAL_TS)};
    const runner = new LocalRunner(${JSON.stringify(s)});
    const started = await runner.start(${JSON.stringify(record)});
    console.log(JSON.stringify(started));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0] as string);
    });
    child.once('exit', (c) => reject(new Error(`the svc stand-in exited (${c})`)));
  });
  Object.assign(record, JSON.parse(line));
  const runner = new LocalRunner(s);
  cleanup(t, runner, record);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  await until('ready', () => runner.ready(record), 15_000);
  t.equal(await runner.alive(record), true, 'alive after the process that started it was killed');
  t.ok(await connects(base), 'its port answers');
  t.ok((await runner.orphans(new Set())).includes(record.sandbox_id), 'an orphan when no record names it');
  t.notOk((await runner.orphans(new Set([record.sandbox_id]))).includes(record.sandbox_id), 'not when one does');
  t.equal(await runner.alive({ ...record, sandbox_id: 'someone-else' }), false, 'a pid is the sandbox only when its environment says so');
  await runner.removeOrphan(record.sandbox_id);
  t.equal(await runner.alive(record), false, 'removed as an orphan: gone');
  t.same(groupMembers(record.pid as number), [], 'its group is empty');
  t.equal(await connects(base), false, 'and its port closed');
});

// --- Regressions of the adversarial review (each failed before its fix). ---

/** A server that answers and says it is ready (CommonJS, so a project's package.json type does not matter). */
const SERVER_CJS = `require('http').createServer((q, r) => r.end('ok')).listen(+process.env.PORT, process.env.HOST, () => console.log('Server ready'));\n`;

/** A folder on the host outside /tmp (a sandbox's private /tmp would hide one in /tmp), removed at teardown. */
function hostDir(t: Test, mode: number): string {
  const dir = mkdtempSync(join('/var/tmp', 'svc-local-host-'));
  chmodSync(dir, mode);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A started, ready sandbox of `runner` (stopped and released at teardown). */
async function running(t: Test, runner: LocalRunner, files: Record<string, string> = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER_CJS }, under?: string): Promise<SandboxRecord> {
  const record = sandbox(0, files, under);
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);
  Object.assign(record, await runner.start(record));
  await until('ready', () => runner.ready(record), 15_000);
  return record;
}

async function run(runner: LocalRunner, record: SandboxRecord, command: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runner.exec(record, command, { timeoutMs: 10_000, onStdout: (c) => (out += c.toString()), onStderr: (c) => (err += c.toString()) });
  return { code, out, err };
}

const FENCED = ROOT && Boolean(iso.user) && iso.privateTmp;

t.test('exec never joins a mount namespace the dev server made for itself (root escalation)', { skip: FENCED ? false : 'needs root, setpriv and a private /tmp' }, async (t) => {
  const runner = new LocalRunner(settings(await freeBase()));
  const outside = hostDir(t, 0o700);
  const marker = join(outside, 'pwned');
  // The dev server moves itself (same pid) into a user and mount namespace of its own and puts its script over setpriv.
  const record = await running(t, runner, {
    'package.json': JSON.stringify({ scripts: { dev: 'exec unshare -Urm sh ./inner.sh' } }),
    'inner.sh': 'chmod 755 evil.sh; mount --bind ./evil.sh /usr/bin/setpriv; mount --bind ./evil.sh /usr/bin/nsenter; exec node server.cjs\n',
    'evil.sh': `#!/bin/sh\nid > ${marker}\necho evil ran\n`,
    'server.cjs': SERVER_CJS,
  });
  const res = await run(runner, record, 'id -u; echo done');
  t.equal(existsSync(marker), false, 'the planted script never ran as root');
  t.notMatch(res.out, /evil ran/, 'nor at all');
  t.same([res.code, res.out], [0, `${200000 + record.port}\ndone\n`], 'the command ran, as the sandbox user, in a fresh namespace');

  // A record whose namespace is not the one the dev server is in now: no join either.
  const plain = await running(t, runner);
  await run(runner, plain, 'echo here > /tmp/beside');
  t.equal((await run(runner, plain, 'cat /tmp/beside')).out, 'here\n', 'a command joins the recorded namespace: it sees the /tmp of the one before');
  t.ok(plain.mnt_ns !== undefined && plain.mnt_ns > 0, 'start recorded the mount namespace');
  const status = (await run(runner, plain, 'grep -E "^(Uid|Groups|CapEff|NoNewPrivs):" /proc/self/status; ls -l /proc/$$/fd')).out;
  const uid = 200000 + plain.port;
  t.match(status, new RegExp(`Uid:\\s+${uid}\\s+${uid}\\s+${uid}\\s+${uid}\\n`), 'a joined command runs as the sandbox user');
  t.match(status, /Groups:\s*\nCapEff:\s+0+\nNoNewPrivs:\s+1\n/, 'no groups, no capabilities, no new privileges');
  t.notMatch(status, /mnt:\[/, "the command's shell holds no namespace fd");
  t.equal((await run(runner, { ...plain, mnt_ns: 1 }, 'cat /tmp/beside 2>/dev/null || echo fresh')).out, 'fresh\n', 'another recorded namespace: a fresh one, not the live one');
  t.equal((await run(runner, { ...plain, mnt_ns: undefined }, 'cat /tmp/beside 2>/dev/null || echo fresh')).out, 'fresh\n', 'none recorded: a fresh one');
});

t.test('sandboxes neither read, write nor signal each other', { skip: FENCED ? false : 'needs root, setpriv and a private /tmp' }, async (t) => {
  const runner = new LocalRunner(settings(await freeBase()));
  const a = await running(t, runner);
  // B's folder is where A could reach it by its host path (not in /tmp, which A's private /tmp hides), in a root folder as create makes it.
  const root = join(hostDir(t, 0o755), 'sandboxes');
  mkdirSync(root, { mode: 0o755 });
  const b = await running(t, runner, { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER_CJS, 'secret.txt': 'b-secret' }, root);
  const bPid = b.pid as number;
  t.not(a.port, b.port);
  t.same([uidOf(a.pid as number), uidOf(bPid)], [200000 + a.port, 200000 + b.port], 'each runs as a uid of its own: 200000 + its port');
  t.equal((await run(runner, b, 'cat secret.txt')).out, 'b-secret', 'a sandbox reads its own files');
  const read = await run(runner, a, `cat /proc/${bPid}/cwd/secret.txt`);
  t.not(read.code, 0, "another's files cannot be read through /proc");
  t.notMatch(read.out, /b-secret/);
  t.not((await run(runner, a, `cat ${join(b.dir, 'app', 'secret.txt')}`)).code, 0, 'nor by their host path');
  t.not((await run(runner, a, `echo pwned > /proc/${bPid}/cwd/server.cjs`)).code, 0, 'nor written');
  t.equal(readFileSync(join(b.dir, 'app', 'server.cjs'), 'utf8'), SERVER_CJS);
  t.not((await run(runner, a, `kill -0 ${bPid}`)).code, 0, 'nor signalled');
  t.equal(await runner.alive(b), true);
  t.same(runner.ownerOf(b), { uid: 200000 + b.port, gid: 200000 + b.port }, 'its files belong to it');
  const mode = (p: string): number => statSync(p).mode & 0o7777;
  t.same([mode(b.dir), statSync(b.dir).uid], [0o700, 0], "its folder is root's, 0700");
  t.same([mode(join(b.dir, 'app')), statSync(join(b.dir, 'app')).uid], [0o700, 200000 + b.port], 'its project folder is its own, 0700');
  t.equal(mode(root), 0o711, 'the sandboxes folder lists nothing to others');
  t.equal(mode(tmpdir()) & 0o1777, 0o1777, 'a world-writable folder holding sandboxes (here the temporary one) is left as it is');
});

t.test("svc's folders and /dev/shm are hidden from the sandbox", { skip: FENCED ? false : 'needs root, setpriv and a private /tmp' }, async (t) => {
  // Like <project>/.svc/data: readable by anyone on the host, and the sandboxes' folders inside it.
  const project = hostDir(t, 0o755);
  const data = join(project, '.svc', 'data');
  mkdirSync(join(data, 'sandboxes'), { recursive: true, mode: 0o755 });
  writeFileSync(join(data, 'docdb.db'), 'svc data', { mode: 0o644 });
  writeFileSync(join(project, 'svc.toml'), 'secret = 1', { mode: 0o644 });
  const shm = `/dev/shm/svc-local-${process.pid}-${Date.now()}`;
  writeFileSync(shm, 'host shm', { mode: 0o666 });
  t.teardown(() => rmSync(shm, { force: true }));
  const runner = new LocalRunner(settings(await freeBase()), { hide: [data, project, '/nonexistent/svc-folder'] });
  const record = await running(t, runner, undefined, join(data, 'sandboxes'));
  t.equal(await (await fetch(record.url)).text(), 'ok', 'the dev server runs from a folder inside the hidden ones');
  const seen = (r: SandboxRecord) => run(runner, r, `cat ${data}/docdb.db ${project}/svc.toml ${shm}; ls -A ${project} /dev/shm; echo end`);
  const beside = await seen(record);
  t.notMatch(beside.out, /svc data|secret|host shm|svc-local|\.svc/, 'a command beside the dev server sees none of them');
  t.match(beside.out, /end\n$/);
  const fresh = await seen({ ...record, mnt_ns: undefined });
  t.notMatch(fresh.out, /svc data|secret|host shm|svc-local|\.svc/, 'nor one in a namespace of its own');
  const mine = `${shm}-mine`;
  t.teardown(() => rmSync(mine, { force: true }));
  t.equal((await run(runner, record, `echo mine > ${mine} && cat ${mine}`)).out, 'mine\n', '/dev/shm is a fresh one the sandbox writes');
  t.equal(existsSync(mine), false, "and not the host's");
  t.notMatch((await run(runner, record, `unshare -Urm sh -c 'umount ${project}; cat ${data}/docdb.db'`)).out, /svc data/, 'the hiding cannot be undone from a namespace of its own');
  t.equal((await run(runner, record, 'cat server.cjs')).out, SERVER_CJS, 'the project is still at /tmp/app');
});

t.test('ports claimed on one thread are released from another', async (t) => {
  const base = await freeBase();
  // The shared store: one claim per port, whichever thread asks.
  const store = new Map<number, string>();
  const hooks = {
    claimPort: async (port: number, id: string) => (store.has(port) ? false : (store.set(port, id), true)),
    releasePort: async (port: number, id: string) => void (store.get(port) === id && store.delete(port)),
  };
  const http = new LocalRunner(settings(base), hooks);
  const supervisor = new LocalRunner(settings(base), hooks);
  for (let i = 0; i < 30; i++) {
    const record = sandbox(0);
    const { port } = await http.prepare(record);
    await supervisor.release({ ...record, port: port as number });
  }
  t.equal(store.size, 0, 'nothing left claimed');
  const record = sandbox(0);
  t.equal((await http.prepare(record)).port, base, 'the first port is free again');
  t.equal((await supervisor.prepare(sandbox(0))).port, base + 2, 'a claim in the store is seen by the other thread');
});

t.test('a dev server killed from outside is said to be killed (137 → SIGKILL)', async (t) => {
  const runner = new LocalRunner(settings(await freeBase()));
  // Not a lone command: the shell stays, and exits 128 + 9 when its child is killed.
  const record = await running(t, runner, { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs; exit $?' } }), 'server.cjs': SERVER_CJS });
  const node = groupMembers(record.pid as number).filter((p) => p !== record.pid && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('server.cjs'));
  t.equal(node.length, 1, 'the node child of the shell');
  process.kill(node[0] as number, 'SIGKILL');
  await until('the dev server to exit', async () => !(await runner.alive(record)));
  t.same(await runner.exitOf(record), { signal: 'SIGKILL' });
});

t.test('an exec timeout above what a timer holds does not fire at once', async (t) => {
  const runner = new LocalRunner(settings(await freeBase()));
  const record = sandbox(0);
  Object.assign(record, await runner.prepare(record));
  cleanup(t, runner, record);
  t.equal(await runner.exec(record, 'sleep 0.3', { timeoutMs: 2 ** 32 }), 0, '2^32 ms: the command finishes');
  t.equal(await runner.exec(record, 'sleep 0.3', { timeoutMs: Number.MAX_SAFE_INTEGER }), 0, 'and with the largest safe number');
});
