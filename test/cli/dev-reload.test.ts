// `svc start --dev` reloads the entry on change, on the same port.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, transport } from '../helpers/server.ts';

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
