// A server started with `npx svc start …` drains and exits when npx is killed with SIGKILL (which no
// handler sees): before, it was reparented and kept serving, holding the port and the data folder's
// lock. Run for real: npx (npm exec → sh -c → node bin/svc.mjs), kill -9 of the npx process, then
// the server process is gone within the bound, its port answers nothing and another process can take
// its data folder. A server not started by npm is not watched.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launcherChain, startedByNpm, watchLauncher } from '../../cli/launcher.ts';
import { TEST_SECRET, transport } from '../kit/index.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const ENTRY = new URL('../fixtures/todo-app.ts', import.meta.url).pathname;

/** The state letter of a process (`R`, `S`, `Z`…), or undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Every descendant of `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [child, up] of parent) if (up === p) out.push(child), walk(child);
  };
  walk(pid);
  return out;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Whether another process can take the serving lock of the store at `path` (the server let go of it). */
function lockFree(path: string): Promise<boolean> {
  const script = `import { lockDataFolder } from ${JSON.stringify(join(ROOT, 'runtime/main/data-lock.ts'))};
try { lockDataFolder(${JSON.stringify(path)}); process.stdout.write('got'); } catch (e) { process.stdout.write(e.constructor.name); }`;
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.on('exit', () => resolve(out === 'got'));
  });
}

t.test('npx svc start, then kill -9 of npx: the server drains and exits, freeing its port and its data folder', { skip: existsSync('/proc/self/stat') ? false : 'needs /proc' }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-npx-'));
  const npx = spawn('npx', ['svc', 'start', ENTRY, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: dataDir, JWT_SECRET: TEST_SECRET, SVC_TRANSPORT: transport(), SVC_ACCESS_LOG: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const lines: ((line: string) => void)[] = [];
  for (const stream of [npx.stdout, npx.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      out += `${line}\n`;
      for (const fn of [...lines]) fn(line);
    });
  }
  const seen = (re: RegExp): Promise<string> =>
    new Promise((resolve) => {
      const hit = out.split('\n').find((l) => re.test(l));
      if (hit) return resolve(hit);
      const fn = (line: string): void => {
        if (!re.test(line)) return;
        lines.splice(lines.indexOf(fn), 1);
        resolve(line);
      };
      lines.push(fn);
    });
  const ready = await Promise.race([
    seen(/^Server ready at /),
    new Promise<never>((_, reject) => npx.once('exit', (code) => reject(new Error(`npx exited (${code}) before the server was ready:\n${out}`)))),
  ]);
  const url = (/(http:\/\/\S+)/.exec(ready) as RegExpExecArray)[1] as string;
  const npxPid = npx.pid as number;
  const servers = descendants(npxPid).filter((pid) => /bin\/svc(\.mjs)? start/.test(cmdline(pid)) && /node/.test(cmdline(pid)));
  t.equal(servers.length, 1, `one server process under npx (${descendants(npxPid).map((p) => `${p}: ${cmdline(p)}`).join('; ')})`);
  const server = servers[0] as number;
  t.teardown(() => {
    if (stateOf(server) && stateOf(server) !== 'Z') process.kill(server, 'SIGKILL');
  });
  t.match(out, new RegExp(`started by npm: drains when npm \\(pid ${npxPid}\\) is gone`), 'the start log says what it watches');
  t.equal((await fetch(`${url}/healthz`)).status, 200, 'serving');
  t.equal(await lockFree(join(dataDir, 'anchor_store.db')), false, 'holding its data folder');

  npx.kill('SIGKILL');
  const killed = Date.now();
  // Gone (or a zombie nobody reaps: PID 1 in a container may not) within the bound.
  for (;;) {
    const state = stateOf(server);
    if (state === undefined || state === 'Z') break;
    if (Date.now() - killed > 15_000) throw new Error(`the server (pid ${server}) still runs 15 s after npx was killed:\n${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const took = Date.now() - killed;
  t.ok(took < 15_000, `the server exited ${took} ms after npx was killed`);
  t.match(out, /its launcher \(npm, pid \d+\) is gone: draining/, 'it drained, as on SIGTERM');
  await t.rejects(fetch(`${url}/healthz`), 'the port is released');
  t.equal(await lockFree(join(dataDir, 'anchor_store.db')), true, 'the data folder lock is released');
});

t.test('only a server started by npm is watched', async (t) => {
  t.equal(startedByNpm({ npm_command: 'exec' }), true, 'npx / npm exec');
  t.equal(startedByNpm({ npm_lifecycle_event: 'start' }), true, 'npm start');
  t.equal(startedByNpm({}), false, 'node bin/svc.mjs from a shell, systemd or a container');
  t.equal(watchLauncher(() => t.fail('never'), { env: {} }), undefined, 'nothing watched without npm');
  t.equal(watchLauncher(() => t.fail('never'), { env: { npm_command: 'exec' }, enabled: false }), undefined, 'nor when turned off (watch_launcher = false)');
  // This test runs under npx tap (or npm test): its own chain ends at npm.
  if (startedByNpm() && existsSync('/proc/self/stat')) {
    const chain = launcherChain();
    t.ok(chain && chain.length >= 1, `this test's launcher chain: ${JSON.stringify(chain)}`);
    t.match(cmdline(chain?.at(-1) ?? 0), /npm|npx/);
  }
});

t.test('npx svc start, npx killed while the server is still starting: it drains as soon as it is up', { skip: existsSync('/proc/self/stat') ? false : 'needs /proc' }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-npx-early-'));
  const npx = spawn('npx', ['svc', 'start', ENTRY, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: dataDir, JWT_SECRET: TEST_SECRET, SVC_TRANSPORT: transport(), SVC_ACCESS_LOG: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  for (const stream of [npx.stdout, npx.stderr]) stream.on('data', (d: Buffer) => (out += d));
  const npxPid = npx.pid as number;
  // The moment the server process exists (long before it serves), npx goes.
  let server: number | undefined;
  const started = Date.now();
  while (server === undefined) {
    server = descendants(npxPid).find((pid) => /bin\/svc(\.mjs)? start/.test(cmdline(pid)) && /node/.test(cmdline(pid)));
    if (Date.now() - started > 60_000) throw new Error(`no server process under npx after 60 s:\n${out}`);
    if (server === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  npx.kill('SIGKILL');
  const killed = Date.now();
  t.teardown(() => {
    if (stateOf(server as number) && stateOf(server as number) !== 'Z') process.kill(server as number, 'SIGKILL');
  });
  for (;;) {
    const state = stateOf(server);
    if (state === undefined || state === 'Z') break;
    if (Date.now() - killed > 60_000) throw new Error(`the server (pid ${server}) still runs 60 s after npx was killed during its start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.pass(`the server exited ${Date.now() - killed} ms after npx was killed during its start`);
  t.equal(await lockFree(join(dataDir, 'anchor_store.db')), true, 'the data folder lock is released');
});
