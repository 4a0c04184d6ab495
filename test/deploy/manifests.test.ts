// The manifest builders (deploy/manifests): a hand-made DeploySpec with the defaults, then variants (Mongo, external
// databases, each ingress class, monitoring on and off), checked object by object and validated against the
// Kubernetes schemas (kubernetes-models) and Traefik's (@kubernetes-models/traefik). In process, no cluster.
import t from 'tap';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { IngressRoute } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRoute';
import { Middleware } from '@kubernetes-models/traefik/traefik.io/v1alpha1/Middleware';
import { buildManifests, graceSeconds, STICKY_MAX_AGE } from '../../deploy/manifests/index.ts';
import type { Credential, DeploySpec, K8sObject } from '../../deploy/spec.ts';

const cred = (value: string, generated = true): Credential => ({ value, generated });

/** A full spec with the defaults (1..3 replicas at 50 %, 20 rps, burst 100, 20 connections, sticky, 5Gi, probes 10/20/10/20/80). */
function fixture(overrides: (s: DeploySpec) => void = () => {}): DeploySpec {
  const spec: DeploySpec = {
    app: 'shop',
    namespace: 'shop-ns',
    port: 8000,
    nodePort: 30080,
    docdb: {
      provision: true,
      uri: '',
      engine: 'postgres',
      username: 'svc',
      password: cred('docdb-pw-Zq81xK2mN4pL'),
      database: 'svc_db',
      pvcSize: '5Gi',
      storageClass: '',
      dashboard: { enabled: false, username: 'admin', password: cred('docdb-dash-pw-7hGt2') },
    },
    kv: {
      provision: true,
      url: '',
      username: 'default',
      password: cred('kv-pw-Rw93jD0sQe7u'),
      pvcSize: '5Gi',
      storageClass: '',
      dashboard: { enabled: false, username: 'admin', password: cred('kv-dash-pw-4kLm9') },
    },
    resources: { requests: {}, limits: {} },
    probes: {
      readinessPath: '/healthz/ready',
      livenessPath: '/healthz/live',
      readinessInitialDelay: 10,
      readinessPeriod: 20,
      livenessInitialDelay: 10,
      livenessPeriod: 20,
      livenessFailureThreshold: 80,
    },
    replicas: { min: 1, max: 3, cpuTarget: 50 },
    rollout: { progressDeadlineSeconds: 300, revisionHistoryLimit: 10 },
    ingress: {
      className: '',
      rps: 20,
      burst: 100,
      connections: 20,
      sticky: true,
      domain: '',
      certManagerEmail: '',
      acmeServer: 'https://acme-v02.api.letsencrypt.org/directory',
      certManagerManifest: '/nonexistent/cert-manager.yaml',
    },
    monitoring: {
      enabled: false,
      k8sMetrics: true,
      logPipeline: false,
      adminPassword: cred('grafana-admin-pw-P0o9'),
      scrapeToken: cred('scrape-token-abcdefghijklmnopqrstuvwxyz012345'),
      metricsPath: '/metrics',
    },
    images: { app: 'registry.example.com/shop:3f9a01c2e4b7', busybox: 'busybox:1.36' },
    appSecrets: {},
    jwtSecret: cred('jwt-secret-value-9Xy7Wv6Ut5'),
    shutdownTimeoutMs: 10_000,
    clusterName: 'shop',
    profile: '',
    workers: 1,
    adminPassword: cred('admin-pw-9f8e7d6c5b4a39281706'),
    configChecksum: 'c0ffee'.repeat(10) + 'abcd',
  };
  overrides(spec);
  return spec;
}

/** Every optional part on. */
const everything = (s: DeploySpec): void => {
  s.docdb.dashboard.enabled = true;
  s.kv.dashboard.enabled = true;
  s.monitoring.enabled = true;
  s.monitoring.logPipeline = true;
  s.resources = { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } };
  s.appSecrets = { STRIPE_KEY: 'sk-live-appsecret-123', OTHER: 'other-secret-value-456' };
  s.ingress.domain = 'shop.example.com';
};

const find = (objects: K8sObject[], kind: string, name: string): K8sObject | undefined => objects.find((o) => o.kind === kind && o.metadata.name === name);
const must = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const o = find(objects, kind, name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
/** The builders' output is plain JSON: tests read into it freely. */
type Any = any;
const podSpecOf = (o: K8sObject): Any => (o.spec as Any).template.spec;
const container = (o: K8sObject, name?: string): Any => (podSpecOf(o).containers as Any[]).find((c) => name === undefined || c.name === name);
const envOf = (c: Any, name: string): Any => (c.env as Any[]).find((e) => e.name === name);

const MODELS: Record<string, new (data: Any) => { validate(): void }> = {
  CustomResourceDefinition,
  Namespace,
  ServiceAccount,
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
  Secret,
  ConfigMap,
  PersistentVolumeClaim,
  StatefulSet,
  Service,
  Deployment,
  DaemonSet,
  HorizontalPodAutoscaler,
  PodDisruptionBudget,
  NetworkPolicy,
  Middleware,
  IngressRoute,
  Ingress,
};

/** Every credential value of a spec (generated or configured), and the app's secrets. */
function credentials(s: DeploySpec): string[] {
  return [
    s.docdb.password.value,
    s.docdb.dashboard.password.value,
    s.kv.password.value,
    s.kv.dashboard.password.value,
    s.monitoring.adminPassword.value,
    s.monitoring.scrapeToken.value,
    s.jwtSecret.value,
    ...Object.values(s.appSecrets),
    ...(s.docdb.uri ? [s.docdb.uri] : []),
    ...(s.kv.url ? [s.kv.url] : []),
  ];
}

const VARIANTS: [string, DeploySpec][] = [
  ['defaults', fixture()],
  ['everything on', fixture(everything)],
  ['mongo, everything on', fixture((s) => (everything(s), (s.docdb.engine = 'mongo')))],
  ['cluster traefik', fixture((s) => (everything(s), (s.ingress.className = 'traefik')))],
  ['nginx class', fixture((s) => (everything(s), (s.ingress.className = 'nginx')))],
  [
    'external databases',
    fixture((s) => {
      s.docdb.provision = false;
      s.docdb.uri = 'postgres://u:ext-db-pw-551@db.example.com:5432/svc_db';
      s.kv.provision = false;
      s.kv.url = 'redis://:ext-kv-pw-772@kv.example.com:6379';
    }),
  ],
  ['default namespace, no databases', fixture((s) => ((s.namespace = 'default'), (s.docdb.provision = false), (s.kv.provision = false), (s.replicas = { min: 1, max: 1, cpuTarget: 50 })))],
];

t.test('every variant: labels, namespaces, schemas, credentials only in Secrets, determinism', async (t) => {
  for (const [label, spec] of VARIANTS) {
    const objects = buildManifests(spec);
    t.test(label, async (t) => {
      for (const o of objects) {
        const id = `${o.kind}/${o.metadata.name}`;
        t.equal(o.metadata.labels?.managed, 'svc-scale', `${id} carries managed: svc-scale`);
        const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind);
        if (clusterScoped) t.equal(o.metadata.namespace, undefined, `${id} is cluster-scoped`);
        else t.equal(o.metadata.namespace, spec.namespace, `${id} is in the namespace`);
        const Model = MODELS[o.kind];
        if (!Model) t.fail(`${id}: no schema to validate it against`);
        else t.doesNotThrow(() => new Model(o).validate(), `${id} validates`);
      }
      const names = objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
      t.equal(new Set(names).size, names.length, 'no object twice');
      for (const o of objects) {
        if (o.kind === 'Secret') continue;
        const json = JSON.stringify(o);
        for (const c of credentials(spec)) t.notOk(json.includes(c), `${o.kind}/${o.metadata.name} holds no credential (${c.slice(0, 6)}…)`);
      }
      // And every value a Secret holds (generated, configured or derived: key files, session keys), names aside.
      const held = objects
        .filter((o) => o.kind === 'Secret')
        .flatMap((o) => Object.entries(o.stringData as Record<string, string>).filter(([k]) => k !== 'username').map(([, v]) => v));
      for (const o of objects.filter((x) => x.kind !== 'Secret')) {
        const json = JSON.stringify(o);
        t.notOk(held.some((v) => json.includes(v)), `${o.kind}/${o.metadata.name} holds no Secret value`);
      }
      t.same(buildManifests(spec), objects, 'the same spec gives deep-equal objects');
      t.equal(JSON.stringify(buildManifests(spec)), JSON.stringify(objects), 'with the keys in the same order');
      // Every pod: non-root, no escalation, no capabilities, seccomp; a token only where the API is read.
      for (const o of objects.filter((x) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(x.kind))) {
        const pod = podSpecOf(o);
        t.equal(pod.securityContext.runAsNonRoot, true, `${o.metadata.name}: runAsNonRoot`);
        t.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault', `${o.metadata.name}: seccomp`);
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          t.equal(c.securityContext.allowPrivilegeEscalation, false, `${o.metadata.name}/${c.name}: no escalation`);
          t.same(c.securityContext.capabilities.drop, ['ALL'], `${o.metadata.name}/${c.name}: drops ALL`);
          t.notOk(c.image.endsWith(':latest') || !c.image.includes(':'), `${o.metadata.name}/${c.name}: image pinned (${c.image})`);
        }
        const apiReaders = ['ingress', 'prometheus', 'kube-state-metrics', 'log-collector'].map((x) => `${spec.app}-${x}`);
        t.equal(pod.automountServiceAccountToken, apiReaders.includes(o.metadata.name), `${o.metadata.name}: token mounted only if it reads the API`);
      }
    });
  }
});

t.test('order: CRDs, Namespace, Secrets before workloads, Services before Deployments, policies, ingress last', async (t) => {
  const objects = buildManifests(fixture(everything));
  const kinds = objects.map((o) => o.kind);
  const first = (k: string): number => kinds.indexOf(k);
  const last = (k: string): number => kinds.lastIndexOf(k);
  t.equal(kinds[0], 'CustomResourceDefinition');
  t.ok(last('CustomResourceDefinition') < first('Namespace'));
  t.ok(first('Namespace') < first('Secret'));
  t.ok(last('Secret') < first('PersistentVolumeClaim') && last('ConfigMap') < first('StatefulSet'));
  t.ok(last('StatefulSet') < first('Service') && last('Service') < first('Deployment'));
  t.ok(last('Deployment') < first('HorizontalPodAutoscaler') && last('PodDisruptionBudget') < first('NetworkPolicy'));
  t.ok(last('NetworkPolicy') < first('Middleware') && last('Middleware') < first('IngressRoute'));
  t.equal(kinds.at(-1), 'IngressRoute');
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name);
  t.ok(crds.includes('ingressroutes.traefik.io') && crds.includes('middlewares.traefik.io'), 'the Traefik CRDs');
  const defaults = buildManifests(fixture()).map((o) => o.kind);
  t.equal(defaults[0], 'CustomResourceDefinition');
});

t.test('the app Deployment', async (t) => {
  const spec = fixture();
  const objects = buildManifests(spec);
  const d = must(objects, 'Deployment', 'shop');
  const s = d.spec as Any;
  const c = container(d, 'app');
  t.equal(s.replicas, 1, 'replicas = min');
  t.same(s.strategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
  t.equal(c.image, spec.images.app);
  t.equal(c.command, undefined, "the image's own command runs svc start");
  t.same(c.readinessProbe, { httpGet: { path: '/healthz/ready', port: 'http' }, initialDelaySeconds: 10, periodSeconds: 20 });
  t.same(c.livenessProbe, { httpGet: { path: '/healthz/live', port: 'http' }, initialDelaySeconds: 10, periodSeconds: 20, failureThreshold: 80 });
  t.same(c.lifecycle.preStop.exec.command, ['/bin/sh', '-c', 'sleep 5']);
  const grace = s.template.spec.terminationGracePeriodSeconds;
  t.equal(grace, graceSeconds(spec));
  t.ok(grace > 5 + spec.shutdownTimeoutMs / 1000, `grace ${grace} s is above the pause and the drain deadline`);
  t.equal(graceSeconds({ ...spec, shutdownTimeoutMs: 30_500 }), 5 + 31 + 5);
  t.equal(s.template.metadata.annotations['svc.dev/config-checksum'], spec.configChecksum, 'config checksum on the pod template');
  t.same(envOf(c, 'SVC_ADVERTISE_HOST'), { name: 'SVC_ADVERTISE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  const plainEnv: [string, string][] = [['SVC_PORT', '8000'], ['SVC_HOST', '0.0.0.0'], ['NODE_ENV', 'production'], ['SVC_CLUSTER_NAME', 'shop']];
  for (const [name, value] of plainEnv) t.equal(envOf(c, name).value, value, name);
  t.same(envOf(c, 'DOCDB_URI'), { name: 'DOCDB_URI', valueFrom: { secretKeyRef: { name: 'shop-docdb-secret', key: 'uri' } } });
  t.same(envOf(c, 'KV_URL'), { name: 'KV_URL', valueFrom: { secretKeyRef: { name: 'shop-kv-secret', key: 'url' } } });
  t.same(envOf(c, 'JWT_SECRET').valueFrom, { secretKeyRef: { name: 'shop-jwt-secret', key: 'JWT_SECRET' } });
  t.equal(envOf(c, 'SVC_METRICS_SCRAPE_TOKEN'), undefined, 'no scrape token without monitoring');
  for (const e of c.env) t.ok(e.valueFrom !== undefined || !['DOCDB_URI', 'KV_URL', 'JWT_SECRET'].includes(e.name), `${e.name} by reference`);
  t.equal(c.envFrom, undefined, 'no envFrom without [scale.secrets]');
  t.equal(c.resources, undefined, 'no resources when none is set');
  const inits = s.template.spec.initContainers as Any[];
  t.same(inits.map((i) => i.name), ['wait-docdb', 'wait-kv']);
  t.match(inits[0].command[2], /nc -z -w 2 shop-docdb\.shop-ns\.svc 5432/);
  t.match(inits[1].command[2], /nc -z -w 2 shop-kv\.shop-ns\.svc 6379/);
  t.equal(inits[0].image, 'busybox:1.36');
  t.same(s.template.spec.securityContext, { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } });
  t.same(c.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true });
  t.same(c.volumeMounts.map((m: Any) => m.mountPath), ['/app/.svc', '/tmp', '/app/node_modules/.cache'], "writable: svc's data, /tmp and the worker bundles' cache");
  t.equal(s.template.spec.automountServiceAccountToken, false);
  t.same((must(objects, 'Service', 'shop').spec as Any).type, 'ClusterIP');

  const rich = fixture(everything);
  const c2 = container(must(buildManifests(rich), 'Deployment', 'shop'), 'app');
  t.same(c2.envFrom, [{ secretRef: { name: 'shop-secrets' } }], 'envFrom the app secrets');
  t.same(c2.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } });
  t.equal(envOf(c2, 'SVC_METRICS_ENABLED').value, 'true');
  t.same(envOf(c2, 'SVC_METRICS_SCRAPE_TOKEN').valueFrom, { secretKeyRef: { name: 'shop-metrics-scrape-secret', key: 'token' } });
  const some = container(must(buildManifests(fixture((x) => (x.resources = { requests: { memory: '128Mi' }, limits: {} }))), 'Deployment', 'shop'), 'app');
  t.same(some.resources, { requests: { memory: '128Mi' } }, 'only the keys set');
  const jwtInApp = buildManifests(fixture((x) => (x.appSecrets = { JWT_SECRET: 'configured-jwt-in-app' })));
  t.same(envOf(container(must(jwtInApp, 'Deployment', 'shop'), 'app'), 'JWT_SECRET').valueFrom, { secretKeyRef: { name: 'shop-secrets', key: 'JWT_SECRET' } });
  t.notOk(find(jwtInApp, 'Secret', 'shop-jwt-secret'), 'no separate JWT Secret when [scale.secrets] has it');
});

t.test('autoscaler only with a CPU request; disruption budget only above one replica', async (t) => {
  t.notOk(buildManifests(fixture()).some((o) => o.kind === 'HorizontalPodAutoscaler'), 'no HPA without cpu request');
  const hpa = must(buildManifests(fixture((s) => (s.resources.requests.cpu = '500m'))), 'HorizontalPodAutoscaler', 'shop-hpa').spec as Any;
  t.same(hpa.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' });
  t.equal(hpa.minReplicas, 1);
  t.equal(hpa.maxReplicas, 3);
  t.same(hpa.metrics[0].resource, { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } });
  t.same((must(buildManifests(fixture()), 'PodDisruptionBudget', 'shop-pdb').spec as Any).maxUnavailable, 1);
  t.notOk(buildManifests(fixture((s) => (s.replicas.max = 1))).some((o) => o.kind === 'PodDisruptionBudget'), 'no PDB at max 1');
});

t.test('PostgreSQL and Redis, provisioned', async (t) => {
  const spec = fixture((s) => (s.docdb.storageClass = 'fast'));
  const objects = buildManifests(spec);
  const sts = must(objects, 'StatefulSet', 'shop-docdb');
  const pg = container(sts, 'postgres');
  t.match(pg.image, /^postgres:16\.\d+-alpine$/);
  t.same(envOf(pg, 'POSTGRES_PASSWORD').valueFrom, { secretKeyRef: { name: 'shop-docdb-secret', key: 'password' } });
  t.same(envOf(pg, 'POSTGRES_USER').valueFrom, { secretKeyRef: { name: 'shop-docdb-secret', key: 'username' } });
  t.equal(envOf(pg, 'POSTGRES_DB').value, 'svc_db');
  t.equal(envOf(pg, 'PGDATA').value, '/var/lib/postgresql/data/pgdata');
  t.ok(pg.readinessProbe, 'readiness probe');
  t.equal(podSpecOf(sts).securityContext.runAsUser, 70);
  const claim = (sts.spec as Any).volumeClaimTemplates[0];
  t.same(claim.spec.resources.requests, { storage: '5Gi' });
  t.equal(claim.spec.storageClassName, 'fast');
  t.equal((buildManifests(fixture()).find((o) => o.kind === 'StatefulSet')?.spec as Any).volumeClaimTemplates[0].spec.storageClassName, undefined, 'no class unless set');
  t.equal((must(objects, 'Service', 'shop-docdb').spec as Any).type, 'ClusterIP');
  const secret = must(objects, 'Secret', 'shop-docdb-secret');
  t.equal(secret.type, 'Opaque');
  t.same(Object.keys(secret.stringData as object), ['password', 'uri', 'username']);
  t.equal((secret.stringData as Any).uri, `postgres://svc:${spec.docdb.password.value}@shop-docdb.shop-ns.svc:5432/svc_db?sslmode=disable`);

  const kv = must(objects, 'Deployment', 'shop-kv');
  t.same((kv.spec as Any).strategy, { type: 'Recreate' });
  t.equal((kv.spec as Any).replicas, 1);
  const redis = container(kv, 'redis');
  t.match(redis.image, /^redis:7\.2/);
  t.match(redis.command[2], /redis-server --appendonly yes .*--requirepass "\$REDIS_PASSWORD"/);
  t.same(envOf(redis, 'REDIS_PASSWORD').valueFrom, { secretKeyRef: { name: 'shop-kv-secret', key: 'password' } });
  t.equal(podSpecOf(kv).securityContext.runAsUser, 999);
  t.same((must(objects, 'PersistentVolumeClaim', 'shop-kv-data').spec as Any).resources.requests, { storage: '5Gi' });
  t.same(podSpecOf(kv).volumes, [{ name: 'data', persistentVolumeClaim: { claimName: 'shop-kv-data' } }]);
  t.same(Object.keys(must(objects, 'Secret', 'shop-kv-secret').stringData as object), ['password', 'url', 'username']);
});

t.test('MongoDB variant', async (t) => {
  const spec = fixture((s) => ((s.docdb.engine = 'mongo'), (s.docdb.dashboard.enabled = true)));
  const objects = buildManifests(spec);
  const sts = must(objects, 'StatefulSet', 'shop-docdb');
  const mongo = container(sts, 'mongo');
  t.match(mongo.image, /^mongo:7\.0/);
  t.same(envOf(mongo, 'MONGO_INITDB_ROOT_USERNAME').valueFrom, { secretKeyRef: { name: 'shop-docdb-secret', key: 'username' } });
  t.same(envOf(mongo, 'MONGO_INITDB_ROOT_PASSWORD').valueFrom, { secretKeyRef: { name: 'shop-docdb-secret', key: 'password' } });
  t.ok(mongo.args.includes('--replSet'), 'a replica set (transactions)');
  t.equal(podSpecOf(sts).securityContext.runAsUser, 999);
  t.equal((sts.spec as Any).serviceName, 'shop-docdb-headless');
  t.equal((must(objects, 'Service', 'shop-docdb-headless').spec as Any).clusterIP, 'None');
  t.match((must(objects, 'Secret', 'shop-docdb-secret').stringData as Any).uri, /^mongodb:\/\/svc:.+@shop-docdb-0\.shop-docdb-headless\.shop-ns\.svc:27017\/svc_db\?authSource=admin&replicaSet=rs0$/);
  t.ok((must(objects, 'Secret', 'shop-docdb-secret').stringData as Any).keyfile, 'the replica-set key file is a Secret');
  t.equal(container(must(objects, 'Deployment', 'shop-docdb-dashboard')).name, 'mongo-express');
  t.match(container(must(objects, 'Deployment', 'shop'), 'app').env.find((e: Any) => e.name === 'DOCDB_URI').valueFrom.secretKeyRef, { name: 'shop-docdb-secret' });
  t.match(podSpecOf(must(objects, 'Deployment', 'shop')).initContainers[0].command[2], /27017/);
});

t.test('external databases: no StatefulSet, no Redis, the URIs in Secrets', async (t) => {
  const spec = VARIANTS.find(([l]) => l === 'external databases')?.[1] as DeploySpec;
  const objects = buildManifests(spec);
  t.notOk(objects.some((o) => o.kind === 'StatefulSet'), 'no StatefulSet');
  t.notOk(find(objects, 'Deployment', 'shop-kv') || find(objects, 'PersistentVolumeClaim', 'shop-kv-data'), 'no Redis');
  t.same(must(objects, 'Secret', 'shop-docdb-secret').stringData, { uri: spec.docdb.uri });
  t.same(must(objects, 'Secret', 'shop-kv-secret').stringData, { url: spec.kv.url });
  const d = must(objects, 'Deployment', 'shop');
  t.equal(podSpecOf(d).initContainers, undefined, 'nothing to wait for');
  t.same(envOf(container(d), 'DOCDB_URI').valueFrom, { secretKeyRef: { name: 'shop-docdb-secret', key: 'uri' } });
  const none = buildManifests(VARIANTS.find(([l]) => l.startsWith('default namespace'))?.[1] as DeploySpec);
  t.notOk(find(none, 'Secret', 'shop-docdb-secret') || find(none, 'Secret', 'shop-kv-secret'), 'no URI, no Secret');
  t.equal(envOf(container(must(none, 'Deployment', 'shop')), 'DOCDB_URI'), undefined);
});

t.test('ingress: own Traefik, the cluster Traefik, another class', async (t) => {
  const spec = fixture(everything);
  const own = buildManifests(spec);
  const proxy = must(own, 'Deployment', 'shop-ingress');
  t.match(container(proxy).image, /^traefik:v3\.\d+\.\d+$/);
  t.ok(container(proxy).args.includes('--providers.kubernetescrd.namespaces=shop-ns'));
  t.ok(container(proxy).args.includes('--providers.kubernetescrd.allowCrossNamespace=false'));
  t.equal(podSpecOf(proxy).serviceAccountName, 'shop-ingress');
  const svc = must(own, 'Service', 'shop-ingress').spec as Any;
  t.equal(svc.type, 'NodePort');
  t.equal(svc.ports[0].nodePort, 30080);
  t.ok(find(own, 'Role', 'shop-ingress') && find(own, 'RoleBinding', 'shop-ingress') && find(own, 'ServiceAccount', 'shop-ingress'), 'namespace-scoped RBAC');
  t.same((must(own, 'Middleware', 'shop-ratelimit').spec as Any).rateLimit, { average: 20, burst: 100, period: '1s', sourceCriterion: { ipStrategy: { depth: 0 } } });
  t.same((must(own, 'Middleware', 'shop-inflight').spec as Any).inFlightReq, { amount: 20, sourceCriterion: { ipStrategy: { depth: 0 } } });
  t.same((must(own, 'Middleware', 'shop-kv-dashboard-auth').spec as Any).basicAuth.secret, 'shop-kv-dashboard-secret');
  t.equal(must(own, 'Secret', 'shop-kv-dashboard-secret').type, 'kubernetes.io/basic-auth');
  const routes = (must(own, 'IngressRoute', 'shop').spec as Any).routes as Any[];
  const byPath = (p: string): Any => routes.find((r) => r.match.includes(`PathPrefix(\`${p}\`)`));
  t.equal(byPath('/').match, 'PathPrefix(`/`)', 'a domain without TLS: no host in the rule, so the node address reaches the app too');
  t.same(byPath('/').services[0].sticky, { cookie: { name: 'route', maxAge: STICKY_MAX_AGE, httpOnly: true, sameSite: 'lax', secure: false } });
  t.equal(STICKY_MAX_AGE, 2147483647);
  t.same(byPath('/').services[0], { ...byPath('/').services[0], name: 'shop', port: 8000 });
  t.same(byPath('/').middlewares.map((m: Any) => m.name), ['shop-ratelimit', 'shop-inflight']);
  t.equal(byPath('/metrics-ui').services[0].name, 'shop-grafana');
  t.same(byPath('/cache-dashboard').middlewares.map((m: Any) => m.name), ['shop-ratelimit', 'shop-inflight', 'shop-kv-dashboard-auth'], 'cache dashboard behind basic auth');
  t.equal(byPath('/db-dashboard').services[0].name, 'shop-docdb-dashboard');
  t.equal(container(must(own, 'Deployment', 'shop-docdb-dashboard')).image, 'sosedoff/pgweb:0.15.0');
  const noSticky = (must(buildManifests(fixture((s) => (s.ingress.sticky = false))), 'IngressRoute', 'shop').spec as Any).routes.at(-1);
  t.equal(noSticky.services[0].sticky, undefined, 'no cookie when sticky sessions are off');
  t.equal((must(buildManifests(fixture()), 'IngressRoute', 'shop').spec as Any).routes[0].match, 'PathPrefix(`/`)', 'no host without a domain');

  const cluster = buildManifests(fixture((s) => (everything(s), (s.ingress.className = 'traefik'))));
  t.notOk(cluster.some((o) => ['CustomResourceDefinition', 'Role', 'ServiceAccount'].includes(o.kind) && o.metadata.name.includes('ingress')), 'no proxy RBAC');
  t.notOk(find(cluster, 'Deployment', 'shop-ingress') || find(cluster, 'Service', 'shop-ingress') || cluster.some((o) => o.kind === 'CustomResourceDefinition'), 'no proxy, no CRDs');
  t.equal(must(cluster, 'IngressRoute', 'shop').metadata.annotations?.['kubernetes.io/ingress.class'], 'traefik');
  t.ok(find(cluster, 'Middleware', 'shop-ratelimit') && find(cluster, 'Middleware', 'shop-inflight'));

  const nginx = buildManifests(fixture((s) => (everything(s), (s.ingress.className = 'nginx'))));
  t.notOk(nginx.some((o) => o.kind === 'IngressRoute' || o.kind === 'Middleware' || o.kind === 'CustomResourceDefinition'));
  const ing = must(nginx, 'Ingress', 'shop').spec as Any;
  t.equal(ing.ingressClassName, 'nginx');
  t.equal(ing.rules[0].host, undefined, 'no host until TLS is enabled');
  t.same(ing.rules[0].http.paths.map((p: Any) => p.path).sort(), ['/', '/cache-dashboard', '/db-dashboard', '/metrics-ui']);
  t.same(ing.rules[0].http.paths.find((p: Any) => p.path === '/').backend, { service: { name: 'shop', port: { number: 8000 } } });
});

t.test('monitoring on and off', async (t) => {
  const off = buildManifests(fixture());
  t.notOk(off.some((o) => /prometheus|grafana|loki|node-exporter|kube-state/.test(o.metadata.name)), 'nothing without monitoring');
  const spec = fixture(everything);
  const on = buildManifests(spec);
  const prom = must(on, 'Deployment', 'shop-prometheus');
  t.equal(podSpecOf(prom).automountServiceAccountToken, true);
  t.equal((must(on, 'Service', 'shop-prometheus').spec as Any).type, 'ClusterIP');
  const config = JSON.parse((must(on, 'ConfigMap', 'shop-prometheus-config').data as Any)['prometheus.yml']);
  const svcJob = config.scrape_configs.find((j: Any) => j.job_name === 'svc');
  t.equal(svcJob.metrics_path, '/metrics');
  t.equal(svcJob.authorization.credentials_file, '/etc/prometheus-scrape/token');
  t.same(svcJob.kubernetes_sd_configs[0].namespaces.names, ['shop-ns']);
  t.ok(config.scrape_configs.some((j: Any) => j.job_name === 'kube-state-metrics') && config.scrape_configs.some((j: Any) => j.job_name === 'node-exporter'));
  t.ok(podSpecOf(prom).volumes.some((v: Any) => v.secret?.secretName === 'shop-metrics-scrape-secret'), 'scrape token mounted from its Secret');
  t.ok(find(on, 'ClusterRole', 'shop-shop-ns-kube-state-metrics') && find(on, 'DaemonSet', 'shop-node-exporter'));
  const grafana = container(must(on, 'Deployment', 'shop-grafana'));
  t.equal(envOf(grafana, 'GF_SERVER_ROOT_URL').value, '%(protocol)s://%(domain)s/metrics-ui');
  t.equal(envOf(grafana, 'GF_SERVER_SERVE_FROM_SUB_PATH').value, 'true');
  t.equal(envOf(grafana, 'GF_SECURITY_ADMIN_USER').value, 'admin');
  t.same(envOf(grafana, 'GF_SECURITY_ADMIN_PASSWORD').valueFrom, { secretKeyRef: { name: 'shop-grafana-secret', key: 'admin-password' } });
  const dashboards = must(on, 'ConfigMap', 'shop-grafana-dashboards').data as Any;
  t.match(dashboards['svc.json'], /svc_http_requests_total/);
  t.match(dashboards['svc.json'], /svc_http_request_duration_seconds_bucket/);
  t.ok(dashboards['pod-logs.json'], 'pod-logs dashboard with the log pipeline');
  t.ok(find(on, 'Deployment', 'shop-loki') && find(on, 'Service', 'shop-loki') && find(on, 'Deployment', 'shop-log-collector'));
  t.match((must(on, 'ConfigMap', 'shop-grafana-provisioning').data as Any)['datasources.yaml'], /shop-loki\.shop-ns\.svc:3100/);
  t.equal(must(on, 'Namespace', 'shop-ns').metadata.labels?.['pod-security.kubernetes.io/enforce'], 'privileged', 'node-exporter needs the host');
  const noK8s = buildManifests(fixture((s) => (everything(s), (s.monitoring.k8sMetrics = false))));
  t.notOk(find(noK8s, 'DaemonSet', 'shop-node-exporter') || noK8s.some((o) => o.kind === 'ClusterRole'));
  t.equal(must(noK8s, 'Namespace', 'shop-ns').metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
});

t.test('namespace and network policies', async (t) => {
  const ns = must(buildManifests(fixture()), 'Namespace', 'shop-ns').metadata.labels as Any;
  t.equal(ns['pod-security.kubernetes.io/enforce'], 'restricted');
  t.equal(ns['pod-security.kubernetes.io/warn'], 'restricted');
  const shared = must(buildManifests(fixture((s) => (s.namespace = 'default'))), 'Namespace', 'default').metadata.labels as Any;
  t.equal(shared['pod-security.kubernetes.io/enforce'], undefined, 'nothing enforced on a shared namespace');
  t.equal(shared['pod-security.kubernetes.io/audit'], 'restricted');

  const objects = buildManifests(fixture(everything));
  const pol = (name: string): Any => must(objects, 'NetworkPolicy', name).spec;
  t.same(pol('shop-default-deny'), { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'shop', managed: 'svc-scale' } }, policyTypes: ['Ingress'] });
  const app = pol('shop-allow-app').ingress as Any[];
  t.same(app[0].from, [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'ingress', 'app.kubernetes.io/name': 'shop' } } }]);
  t.same(app[1], { from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'app', 'app.kubernetes.io/name': 'shop' } } }] }, 'members reach each other on any port');
  t.ok(app.some((r) => r.from?.[0].podSelector.matchLabels['app.kubernetes.io/component'] === 'prometheus'));
  const docdb = pol('shop-allow-docdb').ingress[0];
  t.same(docdb.from.map((f: Any) => f.podSelector.matchLabels['app.kubernetes.io/component']), ['app', 'docdb-dashboard']);
  t.same(docdb.ports, [{ protocol: 'TCP', port: 5432 }]);
  t.same(pol('shop-allow-kv').ingress[0].from.map((f: Any) => f.podSelector.matchLabels['app.kubernetes.io/component']), ['app', 'kv-dashboard']);
  t.same(pol('shop-allow-ingress').ingress, [{ ports: [{ protocol: 'TCP', port: 8000 }] }], 'the proxy takes traffic from anywhere on its port');
  t.same(pol('shop-allow-grafana').ingress[0].from[0].podSelector.matchLabels['app.kubernetes.io/component'], 'ingress');
  t.notOk(pol('shop-default-deny').policyTypes.includes('Egress'), 'egress left open');
});

t.test('the replica count, the worker threads, the profile and the first admin\'s password', async (t) => {
  const fixed = buildManifests(fixture());
  t.equal((must(fixed, 'Deployment', 'shop').spec as Any).replicas, 1, 'no autoscaler: the Deployment holds min_replicas');
  const scaled = buildManifests(fixture((s) => (s.resources.requests.cpu = '250m')));
  t.ok(scaled.some((o) => o.kind === 'HorizontalPodAutoscaler'));
  t.notOk('replicas' in (must(scaled, 'Deployment', 'shop').spec as Any), 'with one the count is the autoscaler\'s (an apply never scales the app back)');
  const env = podSpecOf(must(buildManifests(fixture((s) => { s.workers = 3; s.profile = 'prod'; })), 'Deployment', 'shop')).containers[0].env as Any[];
  t.same(env.find((e) => e.name === 'SVC_WORKERS'), { name: 'SVC_WORKERS', value: '3' });
  t.same(env.find((e) => e.name === 'SVC_PROFILE'), { name: 'SVC_PROFILE', value: 'prod' }, 'the pods layer the profile the plan was made with');
  t.same(env.find((e) => e.name === 'ADMIN_DEFAULT_PASSWORD'), { name: 'ADMIN_DEFAULT_PASSWORD', valueFrom: { secretKeyRef: { name: 'shop-admin-secret', key: 'password' } } });
  t.equal((must(fixed, 'Secret', 'shop-admin-secret').stringData as Any).password, 'admin-pw-9f8e7d6c5b4a39281706');
  t.notOk(podSpecOf(must(fixed, 'Deployment', 'shop')).containers[0].env.some((e: Any) => e.name === 'SVC_PROFILE'), 'no profile: none set');
});
