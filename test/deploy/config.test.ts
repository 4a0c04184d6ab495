// The deployment's configuration (deploy/config.ts): the seed's defaults, and every refusal naming its key.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/index.ts';
import { DeployConfigError, deploySpec } from '../../deploy/index.ts';

function plan(toml: string, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-deploy-config-'));
  try {
    writeFileSync(join(dir, 'svc.toml'), toml);
    const { config, files, warnings } = loadConfig({ dir, env });
    let n = 0;
    return deploySpec({ config, files, warnings, env, image: 'registry.example.com/svc:0123456789ab', random: () => `generated-${++n}-0123456789abcdef` });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function problems(toml: string, env: Record<string, string> = {}): string[] {
  try {
    plan(toml, env);
  } catch (error) {
    if (error instanceof DeployConfigError) return error.problems;
    throw error;
  }
  return [];
}

t.test('every value the seed defaults', async (t) => {
  const { spec, warnings } = plan('');
  t.equal(spec.app, 'svc');
  t.equal(spec.namespace, 'default');
  t.equal(spec.port, 8000);
  t.equal(spec.nodePort, 30080);
  t.equal(spec.docdb.provision, true);
  t.equal(spec.docdb.engine, 'postgres');
  t.equal(spec.kv.provision, true);
  t.equal(spec.docdb.pvcSize, '5Gi');
  t.equal(spec.kv.pvcSize, '5Gi');
  t.equal(spec.docdb.dashboard.enabled, false);
  t.equal(spec.kv.dashboard.enabled, false);
  t.equal(spec.monitoring.logPipeline, false);
  t.same(spec.resources, { requests: {}, limits: {} }, 'no resources unless set');
  t.same(spec.probes, { readinessPath: '/healthz/ready', livenessPath: '/healthz/live', readinessInitialDelay: 10, readinessPeriod: 20, livenessInitialDelay: 10, livenessPeriod: 20, livenessFailureThreshold: 80 });
  t.same(spec.replicas, { min: 1, max: 3, cpuTarget: 50 });
  t.equal(spec.ingress.rps, 20);
  t.equal(spec.ingress.burst, 100, 'burst = rps × 5');
  t.equal(spec.ingress.connections, 20);
  t.equal(spec.ingress.sticky, true);
  t.equal(spec.ingress.domain, '');
  t.equal(spec.ingress.certManagerEmail, '');
  t.equal(spec.ingress.className, '', 'svc deploys its own proxy');
  t.equal(spec.images.busybox, 'busybox:1.36');
  t.equal(spec.monitoring.enabled, false);
  t.equal(spec.monitoring.k8sMetrics, true);
  t.equal(spec.monitoring.metricsPath, '/metrics');
  t.equal(spec.shutdownTimeoutMs, 10_000);
  t.equal(spec.workers, 1, 'one worker thread per pod without a CPU figure (not one per node core)');
  t.equal(plan('[scale.orchestrator]\ncpu_request = "500m"\ncpu_limit = "2500m"').spec.workers, 3, 'the CPU limit, rounded up');
  t.ok(spec.adminPassword.generated, 'the first admin\'s password generated (never only in a pod\'s log)');
  t.ok(spec.docdb.password.generated && spec.kv.password.generated && spec.jwtSecret.generated && spec.monitoring.adminPassword.generated, 'no development default password: each generated');
  t.not(spec.docdb.password.value, spec.kv.password.value);
  t.match(warnings.join('\n'), /cpu_request/, 'no autoscaler without a CPU request: a warning');
});

t.test('set values are read; a database URL set means that database is not provisioned', async (t) => {
  const { spec } = plan(
    ['[scale.orchestrator]', 'cpu_request = "250m"', 'memory_request = "128M"', 'memory_limit = "1G"', 'pvc_size = "20Gi"', 'health_check_path = "/ping"', '[scale.database]', 'docdb_uri = "postgres://u:p@db.internal:5432/x"', 'kv_url = "redis://cache.internal:6379"'].join('\n'),
  );
  t.same(spec.resources, { requests: { cpu: '250m', memory: '128M' }, limits: { memory: '1G' } });
  t.equal(spec.docdb.provision, false);
  t.equal(spec.kv.provision, false);
  t.equal(spec.docdb.uri, 'postgres://u:p@db.internal:5432/x');
  t.equal(spec.probes.readinessPath, '/ping');
  t.equal(spec.probes.livenessPath, '/ping');
  t.equal(plan('[scale.orchestrator]\nmemory_request = "512000K"').spec.resources.requests.memory, '512000k', 'the seed\'s K is Kubernetes\' k');
  t.equal(plan('[scale.orchestrator]\nhealth_check_path = "/health"').spec.probes.readinessPath, '/healthz/ready', '/health selects the built-in endpoints');
});

t.test('environment names override the file', async (t) => {
  const { spec } = plan('[scale.orchestrator]\napp_name = "shop"', { SVC_SCALE_APP_NAME: 'store', SVC_SCALE_MAX_REPLICAS: '5', SVC_MONITORING_ENABLED: 'true', SVC_SCALE_DOCDB_ROOT_PASSWORD: 'from-the-environment' });
  t.equal(spec.app, 'store');
  t.equal(spec.replicas.max, 5);
  t.equal(spec.monitoring.enabled, true);
  t.same(spec.docdb.password, { value: 'from-the-environment', generated: false });
});

t.test('[scale.secrets]: ${VAR} resolved from the environment; unresolved is an error naming it', async (t) => {
  const { spec } = plan('[scale.secrets]\nSTRIPE = "${STRIPE_KEY}"\nPLAIN = "as-is"\nJWT_SECRET = "k-${PART}-z"', { STRIPE_KEY: 'sk_live_1', PART: 'mid' });
  t.same(spec.appSecrets, { STRIPE: 'sk_live_1', PLAIN: 'as-is', JWT_SECRET: 'k-mid-z' });
  t.same(spec.jwtSecret, { value: 'k-mid-z', generated: false }, 'a configured JWT_SECRET is the pods\' secret');
  t.same(plan('[scale.secrets]\nTEMPLATE = "Hello $${NAME}, ${WHO}"', { WHO: 'you' }).spec.appSecrets, { TEMPLATE: 'Hello ${NAME}, you' }, '$${…} is a literal ${…}');
  const configured = plan('[scale.jwt]\nsecret = "a-jwt-secret-of-the-app-0123456789"\n[scale.metrics]\nscrape_token = "a-scrape-token-of-the-app-0123456789"').spec;
  t.same(configured.jwtSecret, { value: 'a-jwt-secret-of-the-app-0123456789', generated: false }, '[scale.jwt] secret is the pods\' secret, not replaced');
  t.same(configured.monitoring.scrapeToken, { value: 'a-scrape-token-of-the-app-0123456789', generated: false }, 'and [scale.metrics] scrape_token the scrape token');
  const p = problems('[scale.secrets]\nSTRIPE = "${STRIPE_KEY}"');
  t.equal(p.length, 1);
  t.match(p[0], /STRIPE.*\$\{STRIPE_KEY\}.*not set/);
});

t.test('each mistake is refused with a message naming the key', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['a bad CPU quantity', 'cpu_request = "lots"', /cpu_request "lots"/],
    ['a bad memory quantity', 'memory_limit = "1GB"', /memory_limit "1GB"/],
    ['a bad storage quantity', 'pvc_size = "five"', /pvc_size "five"/],
    ['a limit below its request', 'cpu_request = "2"\ncpu_limit = "500m"', /cpu_limit 500m is below cpu_request 2/],
    ['a memory limit below its request', 'memory_request = "1Gi"\nmemory_limit = "512Mi"', /memory_limit 512Mi is below memory_request 1Gi/],
    ['min above max replicas', 'min_replicas = 4\nmax_replicas = 2', /min_replicas 4 is above max_replicas 2/],
    ['an unknown key', 'replica_count = 3', /\[scale\.orchestrator\] replica_count: unknown key/],
    ['an app name Kubernetes refuses (an error, not normalised)', 'app_name = "My_App"', /app_name "My_App".*"my-app"/],
    ['a bad namespace', 'namespace = "Prod!"', /namespace "Prod!"/],
    ['a node port outside the range', 'ingress_node_port = 8080', /ingress_node_port 8080/],
    ['a python image', 'python_image = "python:3.12-slim"', /python_image.*Node/],
    ['a bad domain', 'domain = "not a host"', /domain "not a host"/],
    ['no Redis with several replicas', 'kv_enabled = false\nmax_replicas = 3', /kv_enabled = false/],
    ['no shared database with several replicas', 'docdb_enabled = false\nmax_replicas = 3', /docdb_enabled = false/],
    ['an app name starting with a digit (a Service name starts with a letter)', 'app_name = "1shop"', /app_name "1shop"/],
    ['the cluster\'s own namespace', 'namespace = "kube-system"', /kube-system" is the cluster's own/],
    ['a storage class Kubernetes refuses', 'storage_class = "Fast_SSD"', /storage_class "Fast_SSD"/],
    ['an upper-case domain', 'domain = "Shop.Example.COM"', /domain "Shop.Example.COM"/],
    ['a registry with a scheme', 'registry = "https://reg.example.com/x"', /registry "https:\/\/reg/],
    ['a username with a space', 'kv_username = "a b"', /kv_username "a b"/],
    ['a password with a line break', 'docdb_root_password = "abc\\ndef"', /docdb_root_password: a password with a line break/],
    ['memory counted in bytes', 'memory_limit = "512"', /memory_limit "512".*without one it counts bytes/],
  ];
  for (const [name, toml, expected] of cases) {
    const p = problems(`[scale.orchestrator]\n${toml}`);
    t.ok(p.some((x) => expected.test(x)), `${name}: ${p.join(' | ') || 'accepted'}`);
  }
  t.match(problems('[scale.monitoring]\nenabld = true').join('\n'), /\[scale\.monitoring\] enabld: unknown key/);
  t.match(problems('[scale.database]\nkv_url = "redis://127.0.0.1:6379"').join('\n'), /kv_url points at this machine/);
  t.match(problems('[scale.database]\ndocdb_uri = "sqlite:///data/x.db"').join('\n'), /docdb_uri: a postgres:\/\/.* URI the pods reach \(sqlite: is not one\)/);
  t.match(problems('[scale.secrets]\nDOCDB_URI = "postgres://x"').join('\n'), /DOCDB_URI: svc's Deployment sets DOCDB_URI itself.*\[scale\.database\] docdb_uri/, 'a secret the Deployment would shadow');
  t.match(problems('[scale.secrets]\nA = "${EMPTY}"', { EMPTY: '' }).join('\n'), /\$\{EMPTY\} is not set in the environment, or empty/);
  t.throws(() => plan('[scale.orchestrator]\nmin_replicas = "two"'), /min_replicas must be an integer/, 'a wrong type stops loading, naming the key');
  t.equal(problems('[scale.orchestrator]\ncpu_request = "x"\nmin_replicas = 5\nmax_replicas = 1').length, 2, 'every problem at once');
});

t.test('--experimental: svc from a git repository, its URL, branch and commit checked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-deploy-experimental-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const run = (toml: string, experimental: boolean): string[] => {
    writeFileSync(join(dir, 'svc.toml'), toml);
    const { config, files, warnings } = loadConfig({ dir, env: {} });
    try {
      return deploySpec({ config, files, warnings, env: {}, image: 'x/y:1', experimental }).warnings;
    } catch (error) {
      return (error as DeployConfigError).problems;
    }
  };
  t.match(run('', true).join('\n'), /--experimental .* svc_repo_url/, 'needs a repository');
  t.match(run('[scale.orchestrator]\nsvc_repo_url = "https://git.example.com/svc.git"', false).join('\n'), /with --experimental only/, 'set without the flag: said');
  t.match(run('[scale.orchestrator]\nsvc_repo_url = "https://x/y.git; rm -rf /"', true).join('\n'), /svc_repo_url .*a git URL/, 'no shell in the URL');
  t.match(run('[scale.orchestrator]\nsvc_repo_url = "https://x/y.git"\nsvc_commit = "main"', true).join('\n'), /svc_commit "main": a commit id/);
  t.match(run('[scale.orchestrator]\nsvc_repo_url = "https://x/y.git"\nsvc_branch = "a b"', true).join('\n'), /svc_branch "a b"/);
});

t.test('a credential of the wrong type is not repeated in the message', async (t) => {
  const message = (toml: string): string => {
    try {
      plan(toml);
    } catch (error) {
      return (error as Error).message;
    }
    return '';
  };
  const password = message('[scale.orchestrator]\ndocdb_root_password = 123456');
  t.match(password, /docdb_root_password must be a string/);
  t.notMatch(password, '123456');
  const secret = message('[scale.secrets]\nA = { b = "hunter2" }');
  t.match(secret, /\[scale\.secrets\] A must be a string/);
  t.notMatch(secret, 'hunter2');
});
