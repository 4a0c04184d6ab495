// sandboxes() outside a runtime (a script's view), local provider, real processes: create → running, files and their
// refused paths, commands (buffered and streamed), logs, supervision (a crash restarted, a kill from outside → error),
// max_per_user under racing creates, stop / destroy leaving nothing, the TTL cleanup.
import t from 'tap';
import { mkdtempSync, existsSync, symlinkSync, readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';

const home = mkdtempSync(join(tmpdir(), 'svc-sbx-api-'));
const portBase = 43000 + 2 * Math.floor(Math.random() * 3000);
Object.assign(process.env, {
  SVC_DATA_DIR: join(home, 'data'),
  SVC_SANDBOX_PORT_BASE: String(portBase),
  SVC_SANDBOX_CHECK_INTERVAL_MS: '100',
  SVC_SANDBOX_MAX_PER_USER: '3',
  SVC_SANDBOX_READINESS_TIMEOUT_SECONDS: '20',
});
process.chdir(home);
const { sandboxes, SvcError } = await import('svc');
const { currentSandboxes, cleanupSandboxes } = await import('../../../actors/sandbox/index.ts');

const box = sandboxes();

const SERVER = `
const http = require('node:http');
const s = http.createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); setTimeout(() => process.exit(1), 10); return; }
  res.end('hello from ' + process.env.SVC_SANDBOX_PROJECT);
});
s.listen(Number(process.env.PORT), process.env.HOST, () => console.log('Server ready on ' + process.env.PORT));
`;
const project = (extra: Record<string, string> = {}) => ({ 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER, ...extra });

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const running = (id: string) => until(`${id} running`, async () => {
  const s = await box.get(id);
  if (s.state === 'error') throw new Error(`${id} failed: ${s.error}`);
  return s.state === 'running' && s;
});
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => (c.destroy(), resolve(true)));
    c.once('error', () => resolve(false));
  });
/** Pids whose command line holds `text`. */
function processesWith(text: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
/** Processes of process group `pgid` still running (a finished one waiting for PID 1 to reap it does not count). */
function liveInGroup(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
const record = async (id: string) => (await currentSandboxes().env.records.get(id))!;
const code = (e: unknown) => (e as { code?: string }).code;

t.teardown(async () => {
  for (const s of await box.list().catch(() => [])) await box.destroy(s.sandbox_id).catch(() => undefined);
});

t.test('create answers at once, then runs; the preview URL serves; get answers the same record, updated', async (t) => {
  const made = await box.create({ user: 'ada', project: 'blog', files: project() });
  t.ok(['pending', 'starting'].includes(made.state), `answered ${made.state} at once`);
  t.match(made.sandbox_id, /^sbx-[0-9a-f]{16}$/);
  // The first free port of the range: this machine's ephemeral ports overlap it, so another process may hold the first.
  const port = Number(new URL(made.url).port);
  t.match(made.url, /^http:\/\/localhost:\d+$/);
  t.ok(port >= portBase && port < portBase + 20 && (port - portBase) % 2 === 0, `a port of the range from ${portBase}, stride 2: ${port}`);
  const ready = await running(made.sandbox_id);
  t.equal(ready.sandbox_id, made.sandbox_id);
  t.equal(ready.created_at, made.created_at);
  const res = await fetch(made.url.replace('localhost', '127.0.0.1'));
  t.equal(await res.text(), 'hello from blog');
  t.same((await box.list('ada')).map((s) => s.sandbox_id), [made.sandbox_id], 'the user lists it');
  t.same(await box.list('bob'), [], 'another user does not');
  await box.destroy(made.sandbox_id);
});

t.test('files: listed sorted and without skipped folders; read, written, deleted; escaping paths refused, nothing outside touched', async (t) => {
  const made = await box.create({ user: 'ada', project: 'files', files: project({ 'src/b.ts': 'b', 'src/a.ts': 'a', 'node_modules/x/i.js': '', '.git/HEAD': 'x', 'dist/o.js': '', '.svc/s': '', '__pycache__/c': '' }) });
  await running(made.sandbox_id);
  const id = made.sandbox_id;
  t.same((await box.listFiles(id)).files, ['package.json', 'server.cjs', 'src/a.ts', 'src/b.ts']);
  await box.writeFile(id, 'src/deep/new.txt', 'héllo');
  t.equal(await box.readFile(id, 'src/deep/new.txt'), 'héllo');
  await box.deleteFile(id, 'src/a.ts');
  t.same((await box.listFiles(id)).files, ['package.json', 'server.cjs', 'src/b.ts', 'src/deep/new.txt']);
  await t.rejects(box.readFile(id, 'nope.txt'), { code: 'SANDBOX_FILE_NOT_FOUND' });

  const outside = mkdtempSync(join(tmpdir(), 'svc-sbx-outside-'));
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  const dir = join((await record(id)).dir, 'app');
  symlinkSync(outside, join(dir, 'out'));
  symlinkSync(join(outside, 'secret.txt'), join(dir, 'secret-link'));
  for (const path of ['../x', '../../etc/passwd', '/etc/passwd', 'a;b', 'a|b', 'a&b', 'a`id`', 'out/secret.txt', 'out/new.txt', 'secret-link', 'src/../../x']) {
    await t.rejects(box.readFile(id, path), { code: 'SANDBOX_BAD_PATH' }, `read ${path} refused`);
    await t.rejects(box.writeFile(id, path, 'pwned'), { code: 'SANDBOX_BAD_PATH' }, `write ${path} refused`);
    if (path !== 'secret-link') await t.rejects(box.deleteFile(id, path), { code: 'SANDBOX_BAD_PATH' }, `delete ${path} refused`);
  }
  await box.deleteFile(id, 'secret-link');
  t.ok(existsSync(join(outside, 'secret.txt')), 'deleting a link removes the link, not what it points to');
  // A FIFO the project made is refused at once, not waited on.
  t.equal((await box.execCommand(id, 'mkfifo pipe')).exit_code, 0);
  await t.rejects(box.readFile(id, 'pipe'), { code: 'SANDBOX_INVALID' });
  await t.rejects(box.writeFile(id, 'pipe', 'x'), { code: 'SANDBOX_INVALID' });
  await box.writeFile(id, 'routes/$id.tsx', 'route');
  t.equal(await box.readFile(id, 'routes/$id.tsx'), 'route');
  await t.rejects(box.writeFile(id, 'package.json/x', 'x'), { code: 'SANDBOX_BAD_PATH' });
  await t.rejects(box.writeFile(id, 'big.bin', new Uint8Array(17 * 1024 * 1024)), { code: 'SANDBOX_INVALID' });
  t.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret', 'the file outside is untouched');
  t.notOk(existsSync(join(outside, 'new.txt')), 'nothing was written outside');
  t.notOk(existsSync(join(dir, '..', 'x')), 'nothing was written beside the project');
  await box.destroy(id);
});

t.test('commands: output and exit code, a timeout kills, the stream yields as it comes and a cancel kills', async (t) => {
  const made = await box.create({ user: 'ada', project: 'cmd', files: project() });
  const id = made.sandbox_id;
  await running(id);
  t.same(await box.execCommand(id, 'echo hi; echo err >&2; exit 3'), { stdout: 'hi\n', stderr: 'err\n', exit_code: 3 });
  t.same((await box.execCommand(id, 'pwd; cat package.json')).exit_code, 0);
  const marker = `svc-timeout-${process.pid}`;
  const began = Date.now();
  await t.rejects(box.execCommand(id, `sleep 5; echo ${marker}`, { timeout: 1 }), { code: 'SANDBOX_TIMEOUT' });
  t.ok(Date.now() - began < 2500, `failed after ${Date.now() - began} ms`);
  t.same(processesWith(marker), [], 'no process of the command is left');

  const chunks: string[] = [];
  for await (const c of box.streamCommand(id, 'echo one; sleep 0.2; echo two; exit 4')) chunks.push(c.type === 'exit' ? `exit ${c.exit_code}` : `${c.type}:${c.data}`);
  t.same(chunks, ['stdout:one\n', 'stdout:two\n', 'exit 4']);

  const started = Date.now();
  for await (const c of box.streamCommand(id, 'echo first; sleep 30')) {
    t.same(c, { type: 'stdout', data: 'first\n' });
    break;
  }
  t.ok(Date.now() - started < 5000, 'leaving the loop ended the command');
  await t.rejects(box.execCommand(id, 'true', { timeout: -1 }), { code: 'SANDBOX_INVALID' });
  await t.rejects(box.execCommand(id, 'true', { timeout: 1e9 }), { code: 'SANDBOX_INVALID' });
  t.equal((await box.execCommand(id, 'true', { timeout: 86_400 })).exit_code, 0, 'a day is a timeout');
  await box.stop(id);
  await t.rejects(box.execCommand(id, 'true'), { code: 'SANDBOX_NOT_RUNNING' });
  await box.destroy(id);
});

t.test('logs: byte offsets across multi-byte text', async (t) => {
  const made = await box.create({
    user: 'ada',
    project: 'logs',
    files: { 'package.json': JSON.stringify({ scripts: { dev: 'node -e "console.log(\'héllo wörld ✓\'); require(\'./server.cjs\')"' } }), 'server.cjs': SERVER },
  });
  const id = made.sandbox_id;
  await running(id);
  const all = await box.logs(id);
  t.match(all.content, /^héllo wörld ✓\nServer ready on \d+\n$/);
  t.equal(all.offset, Buffer.byteLength(all.content), 'the offset counts bytes');
  // Read it again from every offset: each read ends on a whole character, and the pieces make the whole.
  const bytes = Buffer.from(all.content);
  const first = await box.logs(id, 2); // inside "é" (bytes 1–2)
  t.equal(first.content, bytes.subarray(3).toString(), 'from the middle of a character: the rest of it is skipped');
  t.equal(first.offset, all.offset);
  let pieces = '';
  for (let at = 0; at < all.offset; ) {
    const piece = await box.logs(id, at);
    pieces += piece.content;
    at = piece.offset;
  }
  t.equal(pieces, all.content, 'successive reads make the whole');
  const past = await box.logs(id, all.offset + 100);
  t.equal(past.content, '');
  await t.rejects(box.logs(id, -1), { code: 'SANDBOX_INVALID' });
  await box.destroy(id);
});

t.test('supervision: a crash after ready is restarted; a kill from outside is error, its port back in the pool', async (t) => {
  const made = await box.create({ user: 'ada', project: 'crash', files: project() });
  const id = made.sandbox_id;
  await running(id);
  const firstPid = (await record(id)).pid!;
  await fetch(`${made.url.replace('localhost', '127.0.0.1')}/crash`).then((r) => r.text());
  const again = await until('restarted', async () => {
    const s = await box.get(id);
    return s.restarts === 1 && s.state === 'running' && s;
  });
  t.equal(again.restarts, 1);
  t.not((await record(id)).pid, firstPid, 'a new dev server');

  const pid = (await record(id)).pid!;
  process.kill(-pid, 'SIGKILL');
  const failed = await until('error after a kill', async () => {
    const s = await box.get(id);
    return s.state === 'error' && s;
  });
  t.match(failed.error, /killed|exited/);
  t.notOk(await listening(Number(new URL(made.url).port)), 'nothing listens on its port');
  const next = await box.create({ user: 'ada', project: 'next', files: project() });
  t.equal(next.url, made.url, 'its port is given to the next sandbox');
  await box.destroy(next.sandbox_id);
  await box.destroy(id);
});

t.test('a dev server that exits before it is ready is error, and its port is free again', async (t) => {
  const made = await box.create({ user: 'ada', project: 'early', files: { 'package.json': JSON.stringify({ scripts: { dev: 'echo starting; exit 2' } }) } });
  const failed = await until('error', async () => {
    const s = await box.get(made.sandbox_id);
    return s.state === 'error' && s;
  });
  t.match(failed.error, /exited before it was ready/);
  const next = await box.create({ user: 'ada', project: 'next', files: project() });
  t.equal(next.url, made.url, 'the port is reused');
  await box.destroy(next.sandbox_id);
  await box.destroy(made.sandbox_id);
});

t.test('max_per_user holds under racing creates; stopped sandboxes do not count', async (t) => {
  const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => box.create({ user: 'racer', project: `p${i}`, files: project() })));
  const made = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ sandbox_id: string }>).value);
  const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
  t.equal(made.length, 3, 'three made');
  t.equal(refused.length, 3);
  for (const e of refused) t.equal(code(e), 'SANDBOX_LIMIT');
  t.ok(refused[0] instanceof SvcError);
  await box.stop(made[0]!.sandbox_id);
  const fourth = await box.create({ user: 'racer', project: 'p9', files: project() });
  t.ok(fourth.sandbox_id);
  for (const m of [...made, fourth]) await box.destroy(m.sandbox_id);
});

t.test('stop leaves nothing running; destroy removes everything; bad requests are refused', async (t) => {
  const made = await box.create({ user: 'ada', project: 'stop', files: project() });
  const id = made.sandbox_id;
  await running(id);
  const { pid, dir } = await record(id);
  const stopped = await box.stop(id);
  t.equal(stopped.state, 'stopped');
  t.notOk(await listening(Number(new URL(made.url).port)), 'nothing listens');
  t.same(liveInGroup(pid!), [], 'no process is left running in its group');
  t.same((await box.listFiles(id)).files, ['package.json', 'server.cjs'], 'its files stay until destroy');
  t.same(await box.destroy(id), { destroyed: true });
  t.notOk(existsSync(dir), 'its folder is gone');
  await t.rejects(box.get(id), { code: 'SANDBOX_NOT_FOUND' });
  await t.rejects(box.create({ user: '', project: 'x' }), { code: 'SANDBOX_INVALID' });
  await t.rejects(box.create({ user: 'a', project: 'x', files: { '../evil': 'x' } }), { code: 'SANDBOX_BAD_PATH' });
  await t.rejects(box.get('sbx-nope'), { code: 'SANDBOX_NOT_FOUND' });
  t.same(await box.list('ada'), [], 'nothing of ada is left');
});

t.test('a folder is copied in; the TTL cleanup removes expired sandboxes and stray folders', async (t) => {
  const src = join(home, 'template');
  mkdirSync(join(src, 'lib'), { recursive: true });
  for (const [k, v] of Object.entries(project({ 'lib/x.js': 'x' }))) writeFileSync(join(src, k), v);
  const made = await box.create({ user: 'ttl', project: 'folder', files: src });
  await running(made.sandbox_id);
  t.same((await box.listFiles(made.sandbox_id)).files, ['lib/x.js', 'package.json', 'server.cjs']);
  await t.rejects(box.create({ user: 'ttl', project: 'data', files: process.env.SVC_DATA_DIR! }), { code: 'SANDBOX_INVALID' }, "svc's data folder is not copied in");
  await t.rejects(box.create({ user: 'ttl', project: 'data', files: home }), { code: 'SANDBOX_INVALID' }, 'nor a folder holding it');
  const b = currentSandboxes();
  const early = await cleanupSandboxes(b);
  t.same(early.removed, [], 'nothing is due yet');
  const { pid } = await record(made.sandbox_id);
  const report = await cleanupSandboxes(b, Date.now() + b.env.settings.ttl_seconds * 1000 + 1000);
  t.same(report.removed, [made.sandbox_id]);
  await t.rejects(box.get(made.sandbox_id), { code: 'SANDBOX_NOT_FOUND' });
  t.same(liveInGroup(pid!), [], 'its processes are gone');
});
