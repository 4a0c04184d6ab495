// `svc start --dev` reloads the entry on change, on the same port.
import t from 'tap';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, transport } from '../kit/index.ts';

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
  writeFileSync(join(dir, 'app.ts'), app('v4'));
  await server.waitFor(/svc: reloaded/, 2);
  t.equal(await version(server.url), 'v4', 'fixed: the next good version is served');
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
  writeFileSync(join(dir, 'app.ts'), app('v5'));
  await server.waitFor(/svc: reloaded/, 2);
  await server.waitFor(/svc: the endpoints changed \(2\):/);
  t.equal(await version(server.url), 'v5');
});

t.test('--dev keeps reloading when an editor saves by writing a new file and renaming it over the old one', async (t) => {
  const dir = t.testdir({ 'app.ts': app('r1') });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 1 });
  t.teardown(() => server.stop());
  const save = (text: string) => {
    writeFileSync(join(dir, '.app.ts.swp'), text);
    renameSync(join(dir, '.app.ts.swp'), join(dir, 'app.ts'));
  };
  for (const [i, v] of ['r2', 'r3', 'r4'].entries()) {
    save(app(v));
    await server.waitFor(/svc: reloaded/, i + 1);
    t.equal(await version(server.url), v, `save ${i + 1} by rename`);
  }
  appendFileSync(join(dir, 'app.ts'), '// appended\n');
  await server.waitFor(/svc: reloaded/, 4);
  t.pass('and an append to the renamed file');
});
