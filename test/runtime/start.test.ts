// The main thread of `svc start` as a list of runtime modules: which modules each kind of start composes, checked
// when composed (a list whose needs and provides do not meet would throw here, before anything starts).
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeRuntime, createStartRuntime, loadStart, type StartOptions, startModules } from '../../runtime/index.ts';

function options(t: Test, toml = '', extra: Partial<StartOptions> = {}): StartOptions {
  const dir = mkdtempSync(join(tmpdir(), 'svc-start-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'main.ts'), 'export const nothing = 1;\n');
  if (toml) writeFileSync(join(dir, 'svc.toml'), toml);
  return { ...loadStart({ entry: join(dir, 'main.ts'), dev: false, faux: false }), ...extra };
}

const names = (o: StartOptions) => startModules(o).map((m) => m.name);

t.test('svc start composes its main thread from modules, checked at composition', async (t) => {
  const serving = options(t);
  t.same(names(serving), ['config', 'app', 'data', 'hasher', 'stores', 'port', 'starter', 'pool', 'report', 'signals']);
  t.ok(createStartRuntime(serving), 'composed: every module finds what it needs before it');
  t.same(names({ ...serving, dev: true }), ['config', 'app', 'data', 'hasher', 'stores', 'port', 'starter', 'pool', 'report', 'reload', 'signals']);
  t.same(names({ ...serving, faux: true }), ['config', 'app']);

  const member = options(t, '[scale.database]\nkv_url = "redis://127.0.0.1:6399"\n');
  t.same(names(member), ['config', 'app', 'data', 'hasher', 'stores', 'port', 'starter', 'member', 'pool', 'report', 'join', 'signals']);
  t.ok(createStartRuntime(member));

  const gateway = options(t, '[scale.microservices]\nenabled = true\n');
  t.same(names(gateway), ['config', 'gateway', 'signals']);
  t.ok(createStartRuntime(gateway));
});

t.test('a main-thread list out of order is refused before anything starts', async (t) => {
  const modules = startModules(options(t));
  const pool = modules.findIndex((m) => m.name === 'pool');
  const [moved] = modules.splice(pool, 1);
  modules.unshift(moved!);
  t.throws(() => composeRuntime(modules), { code: 'SVC_ERR_RUNTIME', message: /runtime module pool needs serving, provided by config, which comes after it/ });
  t.throws(() => composeRuntime(startModules(options(t)).filter((m) => m.name !== 'hasher')), { message: 'runtime module stores needs hasher, which no module in the list provides' });
});
