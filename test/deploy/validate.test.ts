// The manifest validator (deploy/validate): a small valid set written by hand validates clean, then each
// mistake, fed alone, is refused naming the object and the path. In process, no cluster.
import t, { type Test } from 'tap';
import type { K8sObject } from '../../deploy/spec.ts';
import { assertValid, ManifestError, parseQuantity, validateManifests, type ManifestProblem } from '../../deploy/validate/index.ts';

const NS = 'shop';
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A valid set: what a small deploy sends (the app, its Secrets, Service, autoscaler, budget, policy, Traefik route). */
function valid(): K8sObject[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { managed: 'svc-scale', 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secrets', namespace: NS }, type: 'Opaque', stringData: { JWT_SECRET: 'not-a-default', API_TOKEN: 'x' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-docdb-secret', namespace: NS }, type: 'Opaque', data: { uri: b64('postgres://svc:pw@web-docdb:5432/svc_db') } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config', namespace: NS }, data: { 'svc.toml': '[scale]\n' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS, labels: { app: 'web', managed: 'svc-scale' }, annotations: { 'svc.dev/config-checksum': 'abc123' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: {
          metadata: { labels: { app: 'web', managed: 'svc-scale' } },
          spec: {
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 40,
            securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
            initContainers: [{ name: 'wait-docdb', image: 'busybox:1.36', command: ['sh', '-c', 'until nc -z web-docdb 5432; do sleep 1; done'], resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '100m', memory: '32Mi' } } }],
            containers: [
              {
                name: 'app',
                image: 'registry.local/web:0123abcd',
                imagePullPolicy: 'IfNotPresent',
                ports: [{ name: 'http', containerPort: 8000 }],
                env: [
                  { name: 'DOCDB_URI', valueFrom: { secretKeyRef: { name: 'web-docdb-secret', key: 'uri' } } },
                  { name: 'SVC_ADVERTISE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                  { name: 'OPTIONAL_THING', valueFrom: { secretKeyRef: { name: 'absent', key: 'x', optional: true } } },
                ],
                envFrom: [{ secretRef: { name: 'web-secrets' } }],
                readinessProbe: { httpGet: { path: '/healthz/ready', port: 'http' }, initialDelaySeconds: 5, periodSeconds: 5 },
                livenessProbe: { httpGet: { path: '/healthz/live', port: 'http' }, failureThreshold: 3 },
                lifecycle: { preStop: { sleep: { seconds: 5 } } },
                resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [{ name: 'config', mountPath: '/app/config', readOnly: true }, { name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: 'web-config', items: [{ key: 'svc.toml', path: 'svc.toml' }] } },
              { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
            ],
          },
        },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: NS, labels: { app: 'web' } }, spec: { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } },
    {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'web-hpa', namespace: NS },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 2, maxReplicas: 5, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }] },
    },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web-pdb', namespace: NS }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } } },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'web-from-ingress', namespace: NS },
      spec: {
        podSelector: { matchLabels: { app: 'web' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } } }, { podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 'http', protocol: 'TCP' }] }],
      },
    },
    { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'default-deny', namespace: NS }, spec: { podSelector: {}, policyTypes: ['Ingress'] } },
    {
      apiVersion: 'traefik.io/v1alpha1',
      kind: 'Middleware',
      metadata: { name: 'web-ratelimit', namespace: NS },
      spec: { rateLimit: { average: 10, burst: 20, period: '1s', sourceCriterion: { ipStrategy: { depth: 0 } } } },
    },
    {
      apiVersion: 'traefik.io/v1alpha1',
      kind: 'IngressRoute',
      metadata: { name: 'web', namespace: NS },
      spec: {
        entryPoints: ['web'],
        routes: [
          {
            kind: 'Rule',
            match: 'PathPrefix(`/`)',
            middlewares: [{ name: 'web-ratelimit' }],
            // sticky.cookie.maxAge is a Traefik v3 field (the packaged v2.10 schema lacks it): listed, accepted.
            services: [{ kind: 'Service', name: 'web', port: 80, sticky: { cookie: { name: 'route', httpOnly: true, maxAge: 2147483647 } } }],
          },
        ],
      },
    },
  ];
}

/** A manifest object open to any change (the tests break them on purpose). */
type Mutable = Record<string, any>;

/** The valid set with one change; `find('Deployment', 'web')` picks the object to change. */
function withChange(change: (find: (kind: string, name: string) => Mutable, objects: K8sObject[]) => void): ManifestProblem[] {
  const objects = valid();
  const find = (kind: string, name: string): Mutable => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} in the valid set`);
    return found as Mutable;
  };
  change(find, objects);
  return validateManifests(objects);
}

/** Asserts a problem of `object` at `path` (its message matching `message`) is among `problems`. */
function refused(t: Test, problems: ManifestProblem[], object: string, path: string, message?: RegExp): void {
  const hit = problems.find((p) => p.object === object && p.path === path && (!message || message.test(p.message)));
  t.ok(hit, `${object} ${path} refused${message ? ` (${message})` : ''}${hit ? `: ${hit.message}` : `; got ${JSON.stringify(problems, null, 1)}`}`);
}

const DEPLOY = `Deployment/${NS}/web`;
const CONTAINER = 'spec.template.spec.containers[0]';

t.test('the valid set validates clean', async (t) => {
  const started = performance.now();
  t.same(validateManifests(valid()), []);
  t.comment(`first validation (models loaded): ${(performance.now() - started).toFixed(0)} ms`);
  const again = performance.now();
  validateManifests(valid());
  t.comment(`second validation: ${(performance.now() - again).toFixed(1)} ms`);
  t.doesNotThrow(() => assertValid(valid()));
});

t.test('a frozen set validates too (the checks never write)', async (t) => {
  const freeze = (v: unknown): unknown => {
    if (v && typeof v === 'object') for (const child of Object.values(v)) freeze(child);
    return Object.freeze(v);
  };
  t.same(validateManifests(freeze(valid()) as K8sObject[]), []);
});

t.test('schema: a type error', async (t) => {
  const problems = withChange((find) => (find('Deployment', 'web').spec.replicas = 'three'));
  refused(t, problems, DEPLOY, 'spec.replicas', /must be integer.*"three"/);
  t.equal(problems.length, 1, 'and nothing else');
});

t.test('schema: a required field missing (the schema\'s, and a container image, which only the API server requires)', async (t) => {
  refused(t, withChange((find) => delete find('Deployment', 'web').spec.selector), DEPLOY, 'spec.selector', /is required/);
  refused(t, withChange((find) => delete find('IngressRoute', 'web').spec.routes[0].match), `IngressRoute/${NS}/web`, 'spec.routes[0].match', /is required/);
  refused(t, withChange((find) => delete find('Deployment', 'web').spec.template.spec.containers[0].image), DEPLOY, `${CONTAINER}.image`, /is required/);
});

t.test('unknown fields: a typo at the spec, in a container, in a nested object', async (t) => {
  let problems = withChange((find) => (find('Deployment', 'web').spec.replica = 2));
  refused(t, problems, DEPLOY, 'spec.replica', /unknown field "replica" \(did you mean "replicas"\?\)/);
  t.equal(problems.length, 1);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].imagePullPolicyy = 'Always'));
  refused(t, problems, DEPLOY, `${CONTAINER}.imagePullPolicyy`, /did you mean "imagePullPolicy"/);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].securityContext.runAsNonRot = true));
  refused(t, problems, DEPLOY, `${CONTAINER}.securityContext.runAsNonRot`, /unknown field/);
  problems = withChange((find) => (find('Secret', 'web-secrets').strinData = { a: 'b' }));
  refused(t, problems, `Secret/${NS}/web-secrets`, 'strinData', /did you mean "stringData"/);
});

t.test('unknown fields: maps take any key (labels, annotations, data)', async (t) => {
  t.same(
    withChange((find) => {
      find('Deployment', 'web').metadata.annotations['example.com/anything'] = 'x';
      find('ConfigMap', 'web-config').data['other.toml'] = '';
    }),
    [],
  );
});

t.test('unknown fields inside the Traefik IngressRoute and Middleware; the listed v3 additions pass, checked', async (t) => {
  let problems = withChange((find) => (find('IngressRoute', 'web').spec.routes[0].services[0].sticky.cookie.maxAgee = 10));
  refused(t, problems, `IngressRoute/${NS}/web`, 'spec.routes[0].services[0].sticky.cookie.maxAgee', /unknown field "maxAgee" \(did you mean "maxAge"\?\)/);
  problems = withChange((find) => (find('IngressRoute', 'web').spec.routes[0].servces = []));
  refused(t, problems, `IngressRoute/${NS}/web`, 'spec.routes[0].servces', /did you mean "services"/);
  problems = withChange((find) => (find('IngressRoute', 'web').spec.routes[0].services[0].sticky.cookie.maxAge = 'forever'));
  refused(t, problems, `IngressRoute/${NS}/web`, 'spec.routes[0].services[0].sticky.cookie.maxAge', /must be integer/);
  problems = withChange((find) => (find('Middleware', 'web-ratelimit').spec.rateLimit.averag = 10));
  refused(t, problems, `Middleware/${NS}/web-ratelimit`, 'spec.rateLimit.averag', /did you mean "average"/);
  problems = withChange((find) => {
    const m = find('Middleware', 'web-ratelimit').spec;
    m.ipAllowList = { sourceRange: ['10.0.0.0/8'], ipStrategy: { depth: 1, ipv6Subnet: 64 } };
    m.rateLimit.sourceCriterion.ipStrategy.ipv6Subnet = 64;
    find('IngressRoute', 'web').spec.routes[0].services[0].sticky.cookie.path = '/';
  });
  t.same(problems, [], 'ipAllowList, ipv6Subnet and sticky.cookie.path (Traefik v3) are accepted');
  problems = withChange((find) => (find('Middleware', 'web-ratelimit').spec.ipAllowList = { sourceRange: ['10.0.0.0/8'], rejectStatus: 403 }));
  refused(t, problems, `Middleware/${NS}/web-ratelimit`, 'spec.ipAllowList.rejectStatus', /did you mean "rejectStatusCode"/);
  problems = withChange((find) => (find('Middleware', 'web-ratelimit').spec.plugin = { anything: { goes: { here: [1, { deep: true }] } } }));
  t.same(problems, [], "a plugin's settings are free-form");
});

t.test('names: DNS-1123 subdomains and labels, namespaces, labels, containers, ports', async (t) => {
  let problems = withChange((find) => (find('Deployment', 'web').metadata.name = 'My_App'));
  refused(t, problems, `Deployment/${NS}/My_App`, 'metadata.name', /not a DNS-1123 subdomain/);
  problems = withChange((find) => (find('Service', 'web').metadata.name = 'web.v1'));
  refused(t, problems, `Service/${NS}/web.v1`, 'metadata.name', /not a DNS-1123 label.*no dots/);
  problems = withChange((find) => (find('Namespace', NS).metadata.name = 'a'.repeat(64)));
  refused(t, problems, `Namespace/${'a'.repeat(64)}`, 'metadata.name', /64 characters/);
  problems = withChange((find) => (find('Secret', 'web-secrets').metadata.namespace = 'Shop'));
  refused(t, problems, 'Secret/Shop/web-secrets', 'metadata.namespace', /not a DNS-1123 label/);
  problems = withChange((find) => delete find('Secret', 'web-secrets').metadata.namespace);
  refused(t, problems, 'Secret/web-secrets', 'metadata.namespace', /is required/);
  problems = withChange((find) => (find('Deployment', 'web').metadata.labels.tier = '-bad-'));
  refused(t, problems, DEPLOY, 'metadata.labels.tier', /not a label value/);
  problems = withChange((find) => (find('Deployment', 'web').metadata.labels.tier = 'x'.repeat(64)));
  refused(t, problems, DEPLOY, 'metadata.labels.tier', /64 characters/);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.metadata.labels['bad key!'] = 'x'));
  refused(t, problems, DEPLOY, 'spec.template.metadata.labels["bad key!"]', /not a qualified name/);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].name = 'App'));
  refused(t, problems, DEPLOY, `${CONTAINER}.name`, /DNS-1123 label/);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].ports[0].name = 'http-port-too-long'));
  refused(t, problems, DEPLOY, `${CONTAINER}.ports[0].name`, /at most 15/);
});

t.test('selectors: a workload selecting other pods than its own', async (t) => {
  const problems = withChange((find) => (find('Deployment', 'web').spec.selector.matchLabels.app = 'api'));
  refused(t, problems, DEPLOY, 'spec.selector.matchLabels.app', /app=api is not a label of the pod template/);
  refused(
    t,
    withChange((find) => (find('Deployment', 'web').spec.selector = { matchExpressions: [{ key: 'tier', operator: 'Exists' }] })),
    DEPLOY,
    'spec.selector.matchExpressions[0]',
    /does not hold/,
  );
});

t.test('selectors: a Service, a budget, a policy selecting no workload; an autoscaler without its target', async (t) => {
  refused(t, withChange((find) => (find('Service', 'web').spec.selector = { app: 'nothing' })), `Service/${NS}/web`, 'spec.selector', /selects no pods.*app=nothing.*Deployment\/shop\/web/);
  refused(t, withChange((find) => (find('PodDisruptionBudget', 'web-pdb').spec.selector.matchLabels.app = 'wbe')), `PodDisruptionBudget/${NS}/web-pdb`, 'spec.selector', /selects no pod/);
  refused(t, withChange((find) => (find('NetworkPolicy', 'web-from-ingress').spec.podSelector.matchLabels.app = 'wbe')), `NetworkPolicy/${NS}/web-from-ingress`, 'spec.podSelector', /selects no pod/);
  refused(
    t,
    withChange((find) => (find('NetworkPolicy', 'web-from-ingress').spec.ingress[0].from[1].podSelector.matchLabels.app = 'proxy')),
    `NetworkPolicy/${NS}/web-from-ingress`,
    'spec.ingress[0].from[1].podSelector',
    /selects no pod/,
  );
  refused(t, withChange((find) => (find('HorizontalPodAutoscaler', 'web-hpa').spec.scaleTargetRef.name = 'wbe')), `HorizontalPodAutoscaler/${NS}/web-hpa`, 'spec.scaleTargetRef.name', /not in the set/);
  refused(
    t,
    withChange((find) => delete find('Deployment', 'web').spec.template.spec.containers[0].resources.requests.cpu),
    `HorizontalPodAutoscaler/${NS}/web-hpa`,
    'spec.metrics[0].resource.name',
    /needs a cpu request on every container/,
  );
  refused(t, withChange((find) => (find('HorizontalPodAutoscaler', 'web-hpa').spec.minReplicas = 9)), `HorizontalPodAutoscaler/${NS}/web-hpa`, 'spec.minReplicas', /above maxReplicas/);
});

t.test('references: Service target ports absent from the container, by number and by name', async (t) => {
  refused(t, withChange((find) => (find('Service', 'web').spec.ports[0].targetPort = 9000)), `Service/${NS}/web`, 'spec.ports[0].targetPort', /port 9000\/TCP is not a container port of Deployment\/shop\/web \(its ports: http=8000\/TCP\)/);
  refused(t, withChange((find) => (find('Service', 'web').spec.ports[0].targetPort = 'metrics')), `Service/${NS}/web`, 'spec.ports[0].targetPort', /a port named "metrics"/);
  refused(t, withChange((find) => delete find('Service', 'web').spec.ports[0].targetPort), `Service/${NS}/web`, 'spec.ports[0].targetPort', /port 80\/TCP \(targetPort defaults to port\)/);
  t.same(withChange((find) => (find('Service', 'web').spec.ports[0].targetPort = 8000)), [], 'the container port by number is fine');
});

t.test('references: Secrets, keys, ConfigMaps, envFrom', async (t) => {
  const env = `${CONTAINER}.env[0].valueFrom.secretKeyRef`;
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name = 'nope')), DEPLOY, `${env}.name`, /Secret "nope", which is not in the set/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key = 'url')), DEPLOY, `${env}.key`, /key "url" is not in Secret\/shop\/web-docdb-secret \(its keys: uri\)/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].envFrom[0].secretRef.name = 'web-secret')), DEPLOY, `${CONTAINER}.envFrom[0].secretRef.name`, /Secret "web-secret"/);
  refused(
    t,
    withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].env.push({ name: 'X', valueFrom: { configMapKeyRef: { name: 'web-config', key: 'nope' } } }))),
    DEPLOY,
    `${CONTAINER}.env[3].valueFrom.configMapKeyRef.key`,
    /not in ConfigMap\/shop\/web-config/,
  );
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.volumes[0].configMap.items[0].key = 'app.toml')), DEPLOY, 'spec.template.spec.volumes[0].configMap.items[0].key', /"app.toml"/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].volumeMounts[0].name = 'cfg')), DEPLOY, `${CONTAINER}.volumeMounts[0].name`, /not a volume of the pod/);
  refused(t, withChange((find) => (find('Secret', 'web-docdb-secret').metadata.namespace = 'other')), DEPLOY, `${env}.name`, /namespace shop/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.serviceAccountName = 'web')), DEPLOY, 'spec.template.spec.serviceAccountName', /ServiceAccount "web"/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].readinessProbe.httpGet.port = 'web')), DEPLOY, `${CONTAINER}.readinessProbe.httpGet.port`, /names port "web", which is not a port of this container \(its named ports: http\)/);
});

t.test('references: an IngressRoute to a missing Service, port or Middleware', async (t) => {
  const route = `IngressRoute/${NS}/web`;
  refused(t, withChange((find) => (find('IngressRoute', 'web').spec.routes[0].services[0].name = 'wbe')), route, 'spec.routes[0].services[0].name', /Service "wbe", which is not in the set/);
  refused(t, withChange((find) => (find('IngressRoute', 'web').spec.routes[0].services[0].port = 8080)), route, 'spec.routes[0].services[0].port', /Service\/shop\/web has no port 8080 \(its ports: http=80\)/);
  t.same(withChange((find) => (find('IngressRoute', 'web').spec.routes[0].services[0].port = 'http')), [], 'a named Service port is fine');
  refused(t, withChange((find) => (find('IngressRoute', 'web').spec.routes[0].middlewares[0].name = 'limit')), route, 'spec.routes[0].middlewares[0].name', /Middleware "limit"/);
  const ingress = (port: Mutable) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'web', namespace: NS },
    spec: { ingressClassName: 'nginx', rules: [{ http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port } } }] } }] },
  });
  t.same(withChange((_, objects) => objects.push(ingress({ number: 80 }))), [], 'an Ingress to the Service port');
  refused(t, withChange((_, objects) => objects.push(ingress({ name: 'https' }))), `Ingress/${NS}/web`, 'spec.rules[0].http.paths[0].backend.service.port.name', /no port named "https"/);
  const auth = (secret: string) => ({ apiVersion: 'traefik.io/v1alpha1', kind: 'Middleware', metadata: { name: 'auth', namespace: NS }, spec: { basicAuth: { secret } } });
  refused(t, withChange((_, objects) => objects.push(auth('htpasswd'))), `Middleware/${NS}/auth`, 'spec.basicAuth.secret', /Secret "htpasswd"/);
});

t.test('resources: requests above limits, unparsable quantities', async (t) => {
  const res = `${CONTAINER}.resources`;
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.requests.cpu = '1500m')), DEPLOY, `${res}.requests.cpu`, /the cpu request "1500m" is above its limit "1"/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.requests.memory = '1Gi')), DEPLOY, `${res}.requests.memory`, /above its limit "512Mi"/);
  refused(t, withChange((find) => (find('Deployment', 'web').spec.template.spec.initContainers[0].resources.requests.memory = '64Mi')), DEPLOY, 'spec.template.spec.initContainers[0].resources.requests.memory', /above its limit/);
  let problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.limits.memory = '1K'));
  refused(t, problems, DEPLOY, `${res}.limits.memory`, /"1K" is not a Kubernetes quantity: the decimal kilo suffix is lower-case k/);
  t.equal(problems.filter((p) => p.path === `${res}.limits.memory`).length, 1, 'one problem for the path, not one per layer');
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.limits.cpu = 'abc'));
  refused(t, problems, DEPLOY, `${res}.limits.cpu`, /"abc" is not a Kubernetes quantity/);
  problems = withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.limits.cpu = '2h'));
  refused(t, problems, DEPLOY, `${res}.limits.cpu`, /"2h" is not a Kubernetes quantity/, );
  t.same(withChange((find) => (find('Deployment', 'web').spec.template.spec.containers[0].resources.limits.memory = '1e9')), [], 'an exponent is a quantity');
});

t.test('duplicates and unknown kinds', async (t) => {
  const dup = withChange((find, objects) => objects.push(structuredClone(find('Secret', 'web-secrets')) as K8sObject));
  refused(t, dup, `Secret/${NS}/web-secrets`, 'metadata.name', /a second Secret named "web-secrets" in namespace shop \(objects #1 and #12\)/);
  t.equal(dup.length, 1);
  const widget = withChange((_, objects) => objects.push({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: NS } }));
  refused(t, widget, `Widget/${NS}/w`, 'kind', /does not validate "example.com\/v1\/Widget"/);
  const old = withChange((_, objects) => objects.push({ apiVersion: 'extensions/v1beta1', kind: 'Ingress', metadata: { name: 'old', namespace: NS } }));
  refused(t, old, `Ingress/${NS}/old`, 'apiVersion', /svc validates Ingress as networking.k8s.io\/v1/);
  const junk = validateManifests([null as unknown as K8sObject]);
  refused(t, junk, '#0', '', /not an object/);
});

/** More kinds, as a full deploy has them: a database StatefulSet, Redis on a claim, an exporter DaemonSet, RBAC, a CRD. */
function fuller(): K8sObject[] {
  const labels = (component: string) => ({ 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/component': component });
  return [
    ...valid(),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web-docdb', namespace: NS }, spec: { clusterIP: 'None', selector: labels('docdb'), ports: [{ name: 'postgres', port: 5432, targetPort: 5432 }] } },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web-docdb', namespace: NS },
      spec: {
        serviceName: 'web-docdb',
        replicas: 1,
        selector: { matchLabels: labels('docdb') },
        template: {
          metadata: { labels: labels('docdb') },
          spec: {
            containers: [
              {
                name: 'postgres',
                image: 'postgres:16',
                ports: [{ containerPort: 5432 }],
                env: [{ name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: 'web-docdb-secret', key: 'uri' } } }],
                volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
                resources: { requests: { memory: '256Mi' }, limits: { memory: '1Gi', 'ephemeral-storage': '1Gi' } },
              },
            ],
          },
        },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } } }],
      },
    },
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'web-kv-data', namespace: NS }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web-kv', namespace: NS },
      spec: {
        selector: { matchLabels: labels('kv'), matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'In', values: ['kv'] }] },
        template: {
          metadata: { labels: labels('kv') },
          spec: {
            containers: [{ name: 'redis', image: 'redis:7', args: ['--appendonly', 'yes'], ports: [{ name: 'redis', containerPort: 6379 }], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
            volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'web-kv-data' } }],
          },
        },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web-kv', namespace: NS }, spec: { selector: labels('kv'), ports: [{ port: 6379, targetPort: 'redis' }] } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'web-prometheus', namespace: NS }, automountServiceAccountToken: true },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'web-prometheus' }, rules: [{ apiGroups: [''], resources: ['pods', 'endpoints'], verbs: ['get', 'list', 'watch'] }, { nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'web-prometheus' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'web-prometheus' }, subjects: [{ kind: 'ServiceAccount', name: 'web-prometheus', namespace: NS }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'web-view', namespace: NS }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'ServiceAccount', name: 'web-prometheus', namespace: NS }] },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'web-node-exporter', namespace: NS },
      spec: {
        selector: { matchLabels: labels('node-exporter') },
        template: {
          metadata: { labels: labels('node-exporter') },
          spec: { hostNetwork: true, hostPID: true, serviceAccountName: 'web-prometheus', containers: [{ name: 'node-exporter', image: 'prom/node-exporter:v1.8.0', ports: [{ name: 'metrics', containerPort: 9100, hostPort: 9100 }] }], tolerations: [{ operator: 'Exists' }] },
        },
      },
    },
    {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size', description: 'how big' }],
            schema: {
              openAPIV3Schema: {
                type: 'object',
                description: 'A widget.',
                properties: {
                  spec: { type: 'object', description: 'What it is.', 'x-kubernetes-preserve-unknown-fields': true, properties: { size: { type: 'integer', 'x-kubernetes-int-or-string': false } } },
                  status: { type: 'object', 'x-kubernetes-validations': [{ rule: 'true' }] },
                },
              },
            },
          },
        ],
      },
    },
  ];
}

t.test('a fuller set validates clean: StatefulSet and its claims, a claim, RBAC, a DaemonSet, a CRD', async (t) => {
  t.same(validateManifests(fuller()), []);
  const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name) as Mutable;
  let objects = fuller();
  find(objects, 'StatefulSet', 'web-docdb').spec.serviceName = 'web-db';
  refused(t, validateManifests(objects), `StatefulSet/${NS}/web-docdb`, 'spec.serviceName', /Service "web-db"/);
  objects = fuller();
  find(objects, 'StatefulSet', 'web-docdb').spec.volumeClaimTemplates[0].spec.resources.requests.storage = '5GB';
  refused(t, validateManifests(objects), `StatefulSet/${NS}/web-docdb`, 'spec.volumeClaimTemplates[0].spec.resources.requests.storage', /without a B/);
  objects = fuller();
  find(objects, 'Deployment', 'web-kv').spec.template.spec.volumes[0].persistentVolumeClaim.claimName = 'web-kv';
  refused(t, validateManifests(objects), `Deployment/${NS}/web-kv`, 'spec.template.spec.volumes[0].persistentVolumeClaim.claimName', /PersistentVolumeClaim "web-kv"/);
  objects = fuller();
  find(objects, 'ClusterRoleBinding', 'web-prometheus').roleRef.name = 'web-prom';
  find(objects, 'ClusterRoleBinding', 'web-prometheus').subjects[0].name = 'prometheus';
  let problems = validateManifests(objects);
  refused(t, problems, 'ClusterRoleBinding/web-prometheus', 'roleRef.name', /neither in the set nor built in/);
  refused(t, problems, 'ClusterRoleBinding/web-prometheus', 'subjects[0].name', /ServiceAccount "prometheus"/);
  objects = fuller();
  find(objects, 'CustomResourceDefinition', 'widgets.example.com').spec.versions[0].schema.openAPIV3Schema.properties.spec.descripton = 'x';
  find(objects, 'CustomResourceDefinition', 'widgets.example.com').metadata.name = 'widget.example.com';
  problems = validateManifests(objects);
  refused(t, problems, 'CustomResourceDefinition/widget.example.com', 'spec.versions[0].schema.openAPIV3Schema.properties.spec.descripton', /unknown field/);
  refused(t, problems, 'CustomResourceDefinition/widget.example.com', 'metadata.name', /widgets.example.com/);
  objects = fuller();
  find(objects, 'ClusterRole', 'web-prometheus').metadata.namespace = NS;
  refused(t, validateManifests(objects), 'ClusterRole/web-prometheus', 'metadata.namespace', /cluster-scoped/);
});

t.test('assertValid throws a ManifestError listing every problem', async (t) => {
  const objects = valid();
  (objects[4] as Mutable).spec.replicas = 'three';
  (objects[5] as Mutable).spec.selector = { app: 'nothing' };
  const error = t.throws(() => assertValid(objects)) as ManifestError;
  t.ok(error instanceof ManifestError);
  t.equal(error.code, 'SVC_ERR_INVALID_MANIFEST');
  t.equal(error.problems.length, 2);
  t.match(error.message, /2 problems:\n {2}- Deployment\/shop\/web spec.replicas: must be integer/);
  t.match(error.message, /- Service\/shop\/web spec.selector: selects no pods/);
});

t.test('parseQuantity', async (t) => {
  const cases: Array<[string | number, number]> = [
    ['100m', 0.1],
    ['0.5', 0.5],
    ['1', 1],
    ['2', 2],
    ['.5', 0.5],
    ['128Mi', 128 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1Ki', 1024],
    ['1G', 1e9],
    ['1M', 1e6],
    ['1k', 1000],
    ['1e3', 1000],
    ['1E3', 1000],
    ['1E', 1e18],
    ['5e-1', 0.5],
    ['250u', 250e-6],
    ['+1', 1],
    [3, 3],
  ];
  for (const [input, expected] of cases) t.ok(Math.abs(parseQuantity(input) - expected) <= expected * 1e-12, `${JSON.stringify(input)} = ${expected}`);
  for (const bad of ['1K', 'abc', '', ' 1', '1 Gi', '1GB', '1gi', '1e', 'Mi', '1.2.3', '2h', '1da']) t.ok(Number.isNaN(parseQuantity(bad)), `${JSON.stringify(bad)} does not parse`);
  t.ok(parseQuantity('1500m') > parseQuantity('1'), 'comparable across suffixes');
  t.ok(parseQuantity('1Gi') > parseQuantity('1G'));
});
