/**
 * Deploying the fixture app (test/fixtures/deploy) against the test kit's FAKE
 * Kubernetes API server (no real one runs here), in-process:
 *   - plan: config → spec → manifests → validation;
 *   - first deploy (apply with every object created, rollout, ingress probe) and a second one (nothing to create;
 *     the app Deployment patched with a new image, rolled);
 *   - rollout failure detection: the time from the fake's kubelet putting a pod of the new version in
 *     CrashLoopBackOff (its script is asked at that moment) to `awaitRollout` answering the failure.
 * The fake answers in microseconds, so these are svc's own costs plus loopback HTTP — not a real API server's.
 *
 *   node --import tsx bench/deploy.ts [--rounds 10]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../runtime/index.ts';
import { applyObjects, awaitRollout, buildManifests, connectCluster, deploySpec, deployToCluster, provisionedOnce, validateManifests, type DeploySpec } from '../deploy/index.ts';
import { startFakeKubeApi, standInIngress } from '../test/kit/index.ts';
import { machine, median, percentile, round, save } from './lib.ts';

const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 10;

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-deploy-'));
const ingress = await standInIngress();
const spec = (image: string): DeploySpec => {
  writeFileSync(join(dir, 'svc.toml'), `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\ningress_node_port = ${ingress.port}\n`);
  const { config, files, warnings } = loadConfig({ dir, env: {} });
  return deploySpec({ config, files, warnings, env: {}, image }).spec;
};

const plan: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const t0 = performance.now();
  const objects = buildManifests(spec('registry.example.com/shop:v1'));
  if (validateManifests(objects).length > 0) throw new Error('invalid plan');
  plan.push(performance.now() - t0);
}

const first: number[] = [];
const second: number[] = [];
const detect: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  let crashedAt = 0;
  const api = await startFakeKubeApi({
    pods: (pod) => {
      if (!String(pod.spec?.containers?.[0]?.image ?? '').endsWith(':broken')) return undefined;
      crashedAt ||= performance.now();
      return { state: 'CrashLoopBackOff', exitCode: 1 };
    },
  });
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  let t0 = performance.now();
  await deployToCluster(kube, spec('registry.example.com/shop:v1'), { log: () => undefined });
  first.push(performance.now() - t0);
  t0 = performance.now();
  await deployToCluster(kube, spec('registry.example.com/shop:v2'), { log: () => undefined });
  second.push(performance.now() - t0);
  const broken = spec('registry.example.com/shop:broken');
  await applyObjects(kube, buildManifests(broken), () => undefined, provisionedOnce(broken));
  const outcome = await awaitRollout(kube, 'shop', 'shop');
  if (outcome.ok || crashedAt === 0) throw new Error('the broken version was not found failing');
  detect.push(performance.now() - crashedAt);
  await api.close();
}
await ingress.close();
rmSync(dir, { recursive: true, force: true });

const summary = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { median_ms: round(median(xs), 1), p90_ms: round(percentile(sorted, 90), 1), min_ms: round(sorted[0] ?? 0, 1), max_ms: round(sorted.at(-1) ?? 0, 1) };
};
const result = {
  scenario: 'deploy against the fake Kubernetes API server (in-process, loopback HTTP)',
  machine: machine(),
  rounds: ROUNDS,
  plan: summary(plan),
  first_deploy: summary(first),
  second_deploy: summary(second),
  rollout_failure_detection: summary(detect),
  note: 'awaitRollout polls every 250 ms; detection is bounded by the poll interval plus two list calls',
};
console.log(JSON.stringify(result, null, 2));
console.log(`saved ${save('deploy', result)}`);
