// A serving thread takes a new version of the app in place (`svc start --dev`, runtime/serve.ts): the next request
// runs the new walkers, nodes resident in memory take the new classes (an ability on them still fires), the open
// connection stays; a version whose endpoints or schemas differ is refused (new workers then). In this thread, no pool.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorSystem } from 'svc/kernel';
import { entry, Node, Root, T, Walker } from '../../index.ts';
import { createRuntime, dataPaths, loadConfig, type ServeBoot } from '../../runtime/index.ts';
import { freePort } from '../../runtime/main/ports.ts';
import { TEST_SECRET } from '../kit/index.ts';

/** One version of an app: the same names and schemas, other code. */
function version(v: string, extraField = false) {
  class Note extends Node {
    static has = extraField ? T.Object({ text: T.String({ default: '' }), more: T.String({ default: '' }) }) : T.Object({ text: T.String({ default: '' }) });
    declare text: string;
    describe(): string {
      return `${v}:${this.text}`;
    }
  }
  class Write extends Walker {
    static access = 'pub' as const;
    @entry(Root) async go(here: Root) {
      await here.connect(new Note({ text: 'kept' }));
      this.report('written');
    }
  }
  class Read extends Walker {
    static access = 'pub' as const;
    @entry(Root) async go(here: Root) {
      this.visit(await here.out(Note));
    }
    @entry(Note) seen(here: Note) {
      this.report(here.describe());
    }
  }
  return { Note, Write, Read };
}

t.test('a new version is taken in place; resident nodes take the new class; a changed schema is refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-swap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { config } = loadConfig({ dir, env: { SVC_DATA_DIR: join(dir, 'data') }, flags: { 'scale.server.host': '127.0.0.1' } });
  const { storePath, usersPath } = dataPaths(dir, config);
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const port = await freePort('127.0.0.1', 0);
  const boot: ServeBoot = {
    faux: false,
    moduleName: 'swap-app',
    title: 'swap test',
    projectRoot: dir,
    config,
    jwtSecret: TEST_SECRET,
    dev: true,
    transport: 'node',
    port,
    listeners: ['local'],
    listenNow: true,
    storePath,
    usersPath,
    version: '0.0.0',
  };
  const rt = createRuntime({ system, boot, app: version('v1'), logDestination: { write: () => undefined } });
  await rt.start();
  t.teardown(() => rt.close());

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const call = (walker: string) =>
    new Promise<{ reports: unknown[]; reused: boolean }>((resolve, reject) => {
      const req = http.request(`http://127.0.0.1:${port}/walker/${walker}`, { method: 'POST', agent }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += String(c)));
        res.on('end', () => resolve({ reports: (JSON.parse(body) as { data: { reports: unknown[] } }).data.reports, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end();
    });

  t.same((await call('Write')).reports, ['written']);
  t.same((await call('Read')).reports, ['v1:kept'], 'the node, resident in its partition now');

  t.equal(await rt.swap(version('v2')), undefined, 'taken in place');
  t.same(await call('Read'), { reports: ['v2:kept'], reused: true }, 'the resident node runs the new class, and the ability on it fires (same connection)');

  t.match(await rt.swap(version('v3', true)), /changed/, 'a node schema changed: not in place');
  t.same((await call('Read')).reports, ['v2:kept'], 'still the last version taken');
  t.throws(() => rt.swap({ ...version('v4'), Bad: class Bad extends Node {
    static has = T.Object({ text: T.String({ default: '' }) });
    text = '';
  } }), /class field/, 'a class declared wrongly throws: nothing taken');
  t.same((await call('Read')).reports, ['v2:kept']);
});
