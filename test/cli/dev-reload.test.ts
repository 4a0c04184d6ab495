// `svc start --dev` reloads the entry on change, on the same port: in place (the workers take the new code, connections
// stay open) unless the endpoints change (new workers then).
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Latch, startServer, transport } from '../kit/index.ts';

// Several reloads, each starting worker threads: slow on a loaded two-core machine.
t.setTimeout(300_000);

const app = (version: string) => `import { entry, Root, Walker } from 'svc';
export class Version extends Walker {
  static access = 'pub' as const;
  @entry(Root) v() { this.report('${version}'); }
}
`;

async function version(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/walker/Version`, { method: 'POST' });
    return ((await res.json()) as { data: { reports: string[] } }).data.reports[0];
  } catch {
    return undefined; // connection refused while node:http hands the port over
  }
}

/** The reloads printed so far. */
const reloads = (server: { output(): string }): number => server.output().match(/svc: reloaded/g)?.length ?? 0;

/**
 * Saves, then waits for a reload after it and for `want` to answer. One save can be seen as more than one change
 * (a truncate, then the write: on a loaded machine more than the debounce apart), so a reload may come first that
 * saw the previous text; a count of reloads alone then passes too soon.
 */
async function saved(server: { url: string; output(): string; waitFor(re: RegExp, count?: number): Promise<string> }, save: () => void, want: string): Promise<string | undefined> {
  let n = reloads(server);
  save();
  let got: string | undefined;
  do await server.waitFor(/svc: reloaded/, ++n);
  while ((got = await version(server.url)) !== want && n < 20);
  return got;
}

t.test('editing the entry file reloads it without changing the port', async (t) => {
  const dir = t.testdir({ 'app.ts': app('v1') });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 2 });
  t.teardown(() => server.stop());
  t.equal(await version(server.url), 'v1');

  let polling = true;
  const seen: (string | undefined)[] = [];
  const poller = (async () => {
    while (polling) seen.push(await version(server.url));
  })();
  writeFileSync(join(dir, 'app.ts'), app('v2'));
  await server.waitFor(/svc: reloaded/);
  t.equal(await version(server.url), 'v2', 'the new code answers on the same port');
  polling = false;
  await poller;
  t.ok(seen.length > 0);
  // A keep-alive connection the old worker closes can race a request on it; clients retry those.
  t.comment(`during the reload: ${seen.filter((v) => v !== undefined).length} answered, ${seen.filter((v) => v === undefined).length} connection errors (${transport()})`);
  t.ok(seen.filter((v) => v !== undefined).length >= seen.length / 2, 'requests kept being answered during the reload');

  writeFileSync(join(dir, 'app.ts'), `${app('v3')}\nexport const broken = (;\n`);
  await server.waitFor(/reload failed, still serving the previous version/);
  t.equal(await version(server.url), 'v2', 'a broken edit keeps the last good version serving');
  t.equal(await saved(server, () => writeFileSync(join(dir, 'app.ts'), app('v4')), 'v4'), 'v4', 'fixed: the next good version is served');
});

t.test('--dev prints the endpoint table, again when a reload changes it; a class declared wrongly keeps the old version', async (t) => {
  const dir = t.testdir({ 'app.ts': app('v1') });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 1 });
  t.teardown(() => server.stop());
  t.match(server.output(), /POST \/walker\/Version\s+walker Version/, 'the table at start');
  writeFileSync(join(dir, 'app.ts'), `${app('v2')}export class Added extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) a() { this.report('added'); }\n}\n`);
  await server.waitFor(/svc: the endpoints changed \(4\):/);
  await server.waitFor(/POST \/walker\/Added\s+walker Added/);
  t.equal(await version(server.url), 'v2');
  writeFileSync(join(dir, 'app.ts'), `import { Node, T } from 'svc';\n${app('v3')}export class Note extends Node {\n  static has = T.Object({ text: T.String({ default: '' }) });\n  text = '';\n}\n`);
  await server.waitFor(/reload failed, still serving the previous version/);
  await server.waitFor(/Note\.text is a class field/);
  t.equal(await version(server.url), 'v2', 'still the last good version');
  writeFileSync(join(dir, 'app.ts'), `${app('v4')}`.replace("import { entry, Root, Walker } from 'svc';", "import { entry, Root, Walker } from 'svc';\nexport const oops = (globalThis as any).nothing.here;"));
  await server.waitFor(/app\.ts:2:\d+: TypeError/);
  t.equal(await version(server.url), 'v2', 'a throw at load keeps it too, and names the line');
  t.equal(await saved(server, () => writeFileSync(join(dir, 'app.ts'), app('v5')), 'v5'), 'v5');
  await server.waitFor(/svc: the endpoints changed \(2\):/);
});

t.test('--dev keeps reloading when an editor saves by writing a new file and renaming it over the old one', async (t) => {
  const dir = t.testdir({ 'app.ts': app('r1') });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 1 });
  t.teardown(() => server.stop());
  const save = (text: string) => {
    writeFileSync(join(dir, '.app.ts.swp'), text);
    renameSync(join(dir, '.app.ts.swp'), join(dir, 'app.ts'));
  };
  for (const [i, v] of ['r2', 'r3', 'r4'].entries()) t.equal(await saved(server, () => save(app(v)), v), v, `save ${i + 1} by rename`);
  const before = reloads(server);
  appendFileSync(join(dir, 'app.ts'), '// appended\n');
  await server.waitFor(/svc: reloaded/, before + 1);
  t.pass('and an append to the renamed file');
});

// ---- a save taken in place: connections stay open

const socketApp = (version: string) => `import { APIProtocol, entry, restspec, Root, T, Walker } from 'svc';
${app(version).replace("import { entry, Root, Walker } from 'svc';\n", '')}
export class Echo extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({ text: T.String() });
  @entry(Root) go() { this.report('${version}:' + this.text); }
}
`;

/** esbuild's service processes among the children of `pid` (app-load.test.ts checks a start without --dev has none). */
function esbuildChildren(pid: number): string[] {
  const lines = execFileSync('ps', ['-eo', 'ppid=,pid=,args='], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => l.trim().split(/\s+/)[0] === String(pid) && /esbuild/.test(l) && /--service/.test(l));
}

t.test('a save is taken in place: a WebSocket and a keep-alive connection opened before it stay open and run the new code', async (t) => {
  const dir = t.testdir({ 'app.ts': socketApp('k1') });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 2 });
  t.teardown(() => server.stop());

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const keptAlive = () =>
    new Promise<{ version: string; reused: boolean }>((resolve, reject) => {
      const req = http.request(`${server.url}/walker/Version`, { method: 'POST', agent }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += String(c)));
        res.on('end', () => resolve({ version: (JSON.parse(body) as { data: { reports: string[] } }).data.reports[0] as string, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end();
    });
  t.same(await keptAlive(), { version: 'k1', reused: false });

  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/ws/Echo`);
  const replies: string[] = [];
  const replied = new Latch();
  let closed = false;
  ws.on('message', (data) => (replies.push(String(data)), replied.hit()));
  ws.on('close', () => (closed = true));
  await once(ws, 'open');
  ws.send(JSON.stringify({ text: 'a', id: '1' }));
  await replied.wait(1);
  t.match(replies[0], /"reports":\["k1:a"\]/);

  writeFileSync(join(dir, 'app.ts'), socketApp('k2'));
  await server.waitFor(/svc: reloaded .*\(in place\)/);
  t.same(await keptAlive(), { version: 'k2', reused: true }, 'the keep-alive connection made before the save answers with the new code');
  ws.send(JSON.stringify({ text: 'b', id: '2' }));
  await replied.wait(2);
  t.match(replies[1], /"reports":\["k2:b"\]/, 'so does the WebSocket opened before it');
  t.equal(closed, false, 'which stayed open');
  t.equal(ws.readyState, WebSocket.OPEN);

  // A throw at load: no worker takes it; the same connections still answer, with the last good version.
  writeFileSync(join(dir, 'app.ts'), `${socketApp('k3')}\nthrow new Error('not this one');\n`);
  await server.waitFor(/reload failed, still serving the previous version/);
  await server.waitFor(/app\.ts:\d+:\d+: not this one/);
  t.same(await keptAlive(), { version: 'k2', reused: true }, 'a broken edit keeps serving the last good version');
  ws.send(JSON.stringify({ text: 'c', id: '3' }));
  await replied.wait(3);
  t.match(replies[2], /"reports":\["k2:c"\]/);
  ws.close(1000);
  await once(ws, 'close');
  t.ok(/svc: reloaded .*\(in place\)/.test(server.output()) && !/starting new workers/.test(server.output()), 'no worker was restarted');
  t.ok(esbuildChildren(server.proc.pid as number).length > 0, '--dev keeps the build service for the next save (the probe app-load.test.ts uses for a start without --dev sees it)');
});

