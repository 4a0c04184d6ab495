/**
 * Sandboxes on Kubernetes (README *Sandboxes on Kubernetes*) against the test kit's FAKE API server (no real one
 * runs here; its kubelet reports a pod Running and Ready at once and runs exec commands for real in a folder): what
 * svc's side of a start costs, a cold start (ConfigMap, pod, NetworkPolicy, Service, Ingress; the pod created by the
 * supervisor) beside a warm-pool claim (a conditional update, one tar over one exec, the start signal), N of each in
 * turn, alternating. Measured: `create` answering, and create → `running` (polling `get` every 5 ms). A real
 * cluster adds scheduling, image pulls and the dev server's own start to the cold path — the warm pool hides those —
 * so these figures are svc's share only.
 *
 *   npm run bench:sandbox-kube         (--quick: fewer rounds)
 *
 * Writes bench/results/sandbox-kube-<time>.json.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeKubeApi } from '../test/kit/index.ts';
import { machine, median, percentile, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const N = quick ? 10 : 40;
const home = mkdtempSync(join(tmpdir(), 'svc-bench-sbx-kube-'));
Object.assign(process.env, { SVC_DATA_DIR: join(home, 'data') });
process.chdir(home);

const api = await startFakeKubeApi({ pods: (pod) => (pod.metadata.labels?.['svc-sandbox'] === 'true' ? { state: 'Running', logs: 'Server ready\n' } : undefined) });
process.env.KUBECONFIG = api.kubeconfig;
await import('svc');
const { ActorSystem } = await import('../kernel/index.ts');
const { bindSandboxes, defineSandboxKind, sandboxEnv, sandboxes } = await import('../actors/sandbox/index.ts');
type Settings = import('../actors/sandbox/types.ts').SandboxSettings;

const base: Settings = {
  enabled: true,
  type: 'orchestrator',
  base_image: 'node:20-slim',
  memory_limit: '512Mi',
  cpu_limit: '500m',
  network_isolation: true,
  ttl_seconds: 3600,
  max_per_user: 1000,
  security_context: true,
  storage_limit: '256Mi',
  container_cli: '',
  readiness_timeout_seconds: 60,
  port_base: 5180,
  port_count: 10,
  port_stride: 2,
  check_interval_ms: 1000,
  cleanup_interval_seconds: 60,
  max_restarts: 3,
  pids_limit: 256,
  root: join(home, 'sandboxes'),
  namespace: 'svc-sandboxes',
  proxy_mode: false,
  ingress_class: '',
  domain_template: '{sandbox_id}.preview.example.com',
  tls_enabled: false,
  tls_issuer: 'letsencrypt',
  ingress_annotations: {},
  warm_pool_size: 0,
  allow_egress: false,
  preview_secret: '',
};

function bind(settings: Settings) {
  const system = new ActorSystem({ askTimeoutMs: 60_000 });
  const env = sandboxEnv(settings, undefined, { dataDir: join(home, 'data'), projectRoot: home });
  defineSandboxKind(system, env);
  const unbind = bindSandboxes({ system, env, root: settings.root });
  return { env, close: async () => (unbind(), await system.shutdown()) };
}

const FILES = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.js' } }), 'server.js': 'require("http").createServer((q, r) => r.end("ok")).listen(process.env.PORT, () => console.log("Server ready"))', 'src/a.js': 'x'.repeat(20_000) };

async function one(kind: 'cold' | 'warm', i: number): Promise<{ create: number; running: number }> {
  const t0 = performance.now();
  const box = await sandboxes().create({ user: `u${i % 10}`, project: `${kind}-${i}`, files: FILES });
  const t1 = performance.now();
  for (;;) {
    const info = await sandboxes().get(box.sandbox_id);
    if (info.state === 'running') break;
    if (info.state === 'error') throw new Error(`${kind} ${box.sandbox_id}: ${info.error}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const t2 = performance.now();
  await sandboxes().destroy(box.sandbox_id);
  return { create: t1 - t0, running: t2 - t0 };
}

const cold = bind(base);
await cold.env.runner.open?.();
const warmBinding = bind({ ...base, warm_pool_size: 4 });
const results: Record<'cold' | 'warm', { create: number[]; running: number[] }> = { cold: { create: [], running: [] }, warm: { create: [], running: [] } };
const pool = (warmBinding.env.runner as unknown as { pool: { idle(): Promise<unknown[]>; replenish(): Promise<number> } }).pool;
const warmIdle = async () => (await pool.idle()).length;
for (let i = 0; i < N; i++) {
  // Alternate: a warm start with a full pool (refilled and running before it), then a cold one.
  await pool.replenish();
  await api.until(async () => (await warmIdle()) >= 4 && api.list('v1', 'Pod', 'svc-sandboxes').filter((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && p.status?.phase === 'Running').length >= 4, 10_000, 'a full pool');
  const w = await one('warm', i);
  results.warm.create.push(w.create);
  results.warm.running.push(w.running);
  // The cold binding on top: sandboxes() is the last bound.
  const c2 = bind(base);
  const c = await one('cold', i);
  await c2.close();
  results.cold.create.push(c.create);
  results.cold.running.push(c.running);
}
await warmBinding.close();
await cold.close();

const sum = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50_ms: round(median(s), 1), p99_ms: round(percentile(s, 99), 1) };
};
const result = {
  bench: 'sandbox-kube',
  machine: machine(),
  note: 'against the FAKE Kubernetes API server of the test kit (pods Running and Ready at once): svc-side cost only',
  rounds: N,
  cold: { create: sum(results.cold.create), to_running: sum(results.cold.running) },
  warm: { create: sum(results.warm.create), to_running: sum(results.warm.running) },
  warm_vs_cold_to_running: round(median(results.warm.running) / median(results.cold.running), 2),
};
console.table({
  'cold create': result.cold.create,
  'cold → running': result.cold.to_running,
  'warm create (claim + tar)': result.warm.create,
  'warm → running': result.warm.to_running,
});
console.log(`warm/cold to running (p50): ${result.warm_vs_cold_to_running}x`);
console.log(`wrote ${save('sandbox-kube', result)}`);
await api.close();
process.exit(0);
