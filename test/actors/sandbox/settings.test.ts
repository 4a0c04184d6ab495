// [scale.sandbox] checks, sandboxes turned off, path checks as text, and the store's claims under races (in-process).
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorSystem } from 'svc/kernel';
import { SCHEMA } from '../../../runtime/config.ts';
import { bindSandboxes, checkPath, disabledEnv, sandboxes, sandboxSettingsProblems, SandboxRecords, type SandboxSettings } from '../../../actors/sandbox/index.ts';
import { kvstore } from '../../../actors/data/index.ts';
import '../../../stores/index.ts';

const defaults = Object.fromEntries(Object.entries(SCHEMA['scale.sandbox']).map(([k, v]) => [k, v.default])) as unknown as SandboxSettings;

t.test('the defaults pass; what cannot be used is named', async (t) => {
  t.same(sandboxSettingsProblems(defaults), []);
  t.equal(defaults.enabled, true, 'on by default');
  t.equal(defaults.type, 'local');
  t.equal(defaults.port_base, 5180);
  t.equal(defaults.port_count, 10);
  t.equal(defaults.port_stride, 2);
  t.equal(defaults.readiness_timeout_seconds, 120);
  t.equal(defaults.cleanup_interval_seconds, 60);
  t.equal(defaults.max_per_user, 3);
  t.match(sandboxSettingsProblems({ ...defaults, memory_limit: 'lots' }).join(), /memory_limit/);
  t.match(sandboxSettingsProblems({ ...defaults, storage_limit: '10' }).join(), /storage_limit/);
  t.match(sandboxSettingsProblems({ ...defaults, cpu_limit: '0' }).join(), /cpu_limit/);
  t.same(sandboxSettingsProblems({ ...defaults, type: 'orchestrator' }), [], 'the orchestrator provider with its defaults');
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', namespace: 'Sandboxes!' }).join(), /namespace must be a DNS label/);
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', domain_template: 'preview.example.com' }).join(), /must hold \{sandbox_id\}/);
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', domain_template: 'https://{sandbox_id}.x.com/' }).join(), /host name/);
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', proxy_mode: true }).join(), /proxy_mode needs domain_template/);
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', tls_enabled: true, domain_template: '{sandbox_id}.p.example.com', tls_issuer: '' }).join(), /tls_issuer/);
  t.match(sandboxSettingsProblems({ ...defaults, type: 'orchestrator', preview_secret: 'short' }).join(), /32 bytes/);
  t.match(sandboxSettingsProblems({ ...defaults, port_base: 65530 }).join(), /past 65535/);
});

t.test('paths as text: the refused ones, and what a good one becomes', async (t) => {
  for (const bad of ['', '/etc/passwd', '../x', 'a/../../x', 'a;b', 'a|b', 'a&b', 'a`b', 'a\\b', 'a\nb', 'a\0b', '.', './', 'C:/x', 'x'.repeat(300)]) {
    t.throws(() => checkPath(bad), { code: 'SANDBOX_BAD_PATH' }, JSON.stringify(bad));
  }
  t.throws(() => checkPath(42), { code: 'SANDBOX_BAD_PATH' });
  t.same(checkPath('./src//a.ts'), ['src', 'a.ts']);
  t.same(checkPath('héllo wörld.txt'), ['héllo wörld.txt']);
  t.same(checkPath('routes/$id.tsx'), ['routes', '$id.tsx'], 'a route file of the file-based routers');
});

t.test('sandboxes turned off: every call says so', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sbx-off-'));
  const unbind = bindSandboxes({ system: new ActorSystem(), env: disabledEnv({ ...defaults, enabled: false }), root: dir });
  t.teardown(unbind);
  await t.rejects(sandboxes().create({ user: 'a', project: 'b' }), { code: 'SANDBOX_DISABLED', status: 503 });
  await t.rejects(sandboxes().get('sbx-1'), { code: 'SANDBOX_DISABLED' });
  await t.rejects(sandboxes().list(), { code: 'SANDBOX_DISABLED' });
  await t.rejects(sandboxes().execCommand('sbx-1', 'true'), { code: 'SANDBOX_DISABLED' });
});

t.test('claims in the store: slots and ports go to one racer each, and come back', async (t) => {
  const records = new SandboxRecords(kvstore('sbxclaims', 'docdb', `sqlite:${join(mkdtempSync(join(tmpdir(), 'svc-sbx-claims-')), 'c.db')}`, { runtimeCollections: true }));
  const now = new Date().toISOString();
  const base = { user: 'u', project: 'p', state: 'running' as const, url: '', type: 'local' as const, created_at: now, updated_at: now, restarts: 0, host: 'h', dir: '/x', port: 0 };
  for (let i = 0; i < 5; i++) await records.insert({ ...base, sandbox_id: `s${i}` });
  const slots = await Promise.all([0, 1, 2, 3, 4].map((i) => records.claimSlot('u', `s${i}`, 3)));
  t.equal(slots.filter(Boolean).length, 3, 'three of five racing claims win');
  const loser = slots.indexOf(false);
  const winner = slots.indexOf(true);
  await records.update(`s${winner}`, { state: 'stopped' });
  t.ok(await records.claimSlot('u', `s${loser}`, 3), "a stopped sandbox's slot is taken back");
  for (let i = 0; i < 5; i++) await records.update(`s${i}`, { state: 'running' });
  const ports = await Promise.all([0, 1, 2].map((i) => records.claimPort('h', 5180, `s${i}`)));
  t.equal(ports.filter(Boolean).length, 1, 'one port, one holder');
  t.ok(await records.claimWindow(7));
  t.notOk(await records.claimWindow(7), 'a cleanup window is taken once');
  t.equal(await records.update('s0', { state: 'error' }, ['stopped']), undefined, 'a compare-and-set that does not hold changes nothing');
  t.equal((await records.get('s0'))?.state, 'running');
  const holder = ports.indexOf(true);
  await records.update(`s${holder}`, { state: 'stopped' });
  t.ok(await records.claimPort('h', 5180, 's4'), "a stopped sandbox's port is taken back");
});
