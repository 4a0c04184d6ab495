/**
 * `--enable-tls`: HTTPS for a deployed app through cert-manager. Installs
 * cert-manager when the cluster has none (or reuses it), makes an ACME Issuer
 * whose HTTP-01 challenges go through the app's own ingress class, a Certificate
 * for `domain`, and — once it is issued — binds the ingress to the host with the
 * certificate, built from the live routes; every later deploy carries that
 * binding over (the original product's redeploys wiped the TLS section and the
 * host), following the configured domain.
 *
 * With Traefik (svc's own proxy or the cluster's) the binding is the IngressRoute
 * `{app}-tls`: a Traefik route with a `tls` section answers TLS only, so the plain
 * route `{app}` stays and the app keeps answering over HTTP at the node's address
 * (the deploy's probe uses it). With another controller the Ingress `{app}` itself
 * gets the `tls` section and the host. Until TLS is enabled the routes match any
 * host, so the app answers at the node's address and at its domain alike.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { conditionOf, type DeploySpec, type Json, type K8sObject } from '../spec.ts';
import { applyObjects, objectId } from './apply.ts';
import { ClusterError, KubeApiError, poll, type Kube } from './kube.ts';

/** The names `--enable-tls` gives its objects. */
export function tlsNames(app: string) {
  return { issuer: `${app}-acme`, accountKey: `${app}-acme-account`, certificate: `${app}-tls`, secret: `${app}-tls`, route: `${app}-tls` };
}

/**
 * What `--enable-tls` needs of the configuration, before any request: each missing key named.
 *
 * @example
 * tlsConfigProblems(spec) // ['[scale.orchestrator] domain is not set: --enable-tls needs the host name the certificate is for (SVC_SCALE_DOMAIN)']
 */
export function tlsConfigProblems(spec: DeploySpec): string[] {
  const out: string[] = [];
  if (spec.ingress.domain === '') out.push('[scale.orchestrator] domain is not set: --enable-tls needs the host name the certificate is for (SVC_SCALE_DOMAIN)');
  if (spec.ingress.certManagerEmail === '') out.push('[scale.orchestrator] cert_manager_email is not set: --enable-tls registers an ACME account with it (SVC_SCALE_CERT_MANAGER_EMAIL)');
  return out;
}

const hostRule = (domain: string) => `Host(\`${domain}\`)`;

/**
 * The ingress object bound to `domain` with the certificate in `secretName` (a copy).
 *
 * @example
 * bindTls(route, { domain: 'shop.example.com', secretName: 'shop-tls' }).spec.tls // { secretName: 'shop-tls' }
 */
export function bindTls(o: K8sObject, tls: { domain: string; secretName: string }): K8sObject {
  const copy = structuredClone(o);
  const spec = copy.spec as Json;
  if (o.kind === 'IngressRoute') {
    spec.tls = { secretName: tls.secretName };
    for (const route of (spec.routes as Json[]) ?? []) {
      // The host of the binding replaces any other (a changed domain follows).
      const match = String(route.match ?? '').replace(/^Host\(`[^`]*`\)( && )?/, '');
      route.match = match === '' ? hostRule(tls.domain) : `${hostRule(tls.domain)} && ${match}`;
    }
  } else if (o.kind === 'Ingress') {
    spec.tls = [{ hosts: [tls.domain], secretName: tls.secretName }];
    for (const rule of (spec.rules as Json[]) ?? []) rule.host = tls.domain;
  }
  return copy;
}

/** The domain and certificate Secret a live ingress object is bound to, if it is. */
export function boundTls(o: K8sObject | undefined): { domain: string; secretName: string } | undefined {
  const spec = o?.spec as Json | undefined;
  if (!spec?.tls) return undefined;
  if (o?.kind === 'IngressRoute') {
    const secretName = String((spec.tls as Json).secretName ?? '');
    const match = ((spec.routes as Json[]) ?? []).map((r) => String(r.match ?? '')).find((m) => m.includes('Host('));
    const domain = /Host\(`([^`]+)`\)/.exec(match ?? '')?.[1] ?? '';
    return secretName && domain ? { domain, secretName } : undefined;
  }
  const first = (spec.tls as Json[])[0];
  const domain = String((first?.hosts as string[] | undefined)?.[0] ?? '');
  const secretName = String(first?.secretName ?? '');
  return secretName && domain ? { domain, secretName } : undefined;
}

/**
 * The TLS route `{app}-tls` of Traefik: the app's IngressRoute, renamed, bound to the domain and the certificate (on
 * the cluster's Traefik, its `websecure` entry point; svc's proxy serves TLS and plain HTTP on its one entry point).
 *
 * @example
 * tlsRoute(spec, route, { domain: 'shop.example.com', secretName: 'shop-tls' }).metadata.name // 'shop-tls'
 */
export function tlsRoute(spec: DeploySpec, route: K8sObject, tls: { domain: string; secretName: string }): K8sObject {
  const bound = bindTls(route, tls);
  const { name: _name, namespace, labels, annotations } = route.metadata;
  bound.metadata = { name: tlsNames(spec.app).route, namespace, labels, ...(annotations ? { annotations } : {}) };
  if (spec.ingress.className === 'traefik') (bound.spec as Json).entryPoints = ['websecure'];
  return bound;
}

/**
 * The live TLS binding of the app (its domain and certificate Secret), or undefined.
 *
 * @example
 * await liveTls(kube, spec) // { domain: 'shop.example.com', secretName: 'shop-tls' }
 */
export async function liveTls(kube: Kube, spec: DeploySpec): Promise<{ domain: string; secretName: string } | undefined> {
  const ref = ingressRef(spec);
  const name = ref.kind === 'IngressRoute' ? tlsNames(spec.app).route : spec.app;
  return boundTls((await kube.read(ref.apiVersion, ref.kind, spec.namespace, name)) ?? undefined);
}

/**
 * The plan's objects with the live TLS binding carried over, so a deploy never unbinds TLS: the TLS route rebuilt from
 * the plan's routes (Traefik), or the plan's Ingress bound, to the domain its certificate is for.
 *
 * @example
 * await applyObjects(kube, await carryTls(kube, spec, objects), log);
 */
export async function carryTls(kube: Kube, spec: DeploySpec, objects: K8sObject[]): Promise<K8sObject[]> {
  const bound = await liveTls(kube, spec);
  if (!bound) return objects;
  // The bound domain: its certificate is for it. A new domain is bound by the next --enable-tls (a new certificate).
  const tls = { domain: bound.domain, secretName: bound.secretName };
  const ref = ingressRef(spec);
  const plain = objects.find((o) => o.kind === ref.kind && o.metadata.name === spec.app);
  if (!plain) return objects;
  if (ref.kind === 'IngressRoute') return [...objects, tlsRoute(spec, plain, tls)];
  return objects.map((o) => (o === plain ? bindTls(o, tls) : o));
}

async function manifestText(source: string): Promise<string> {
  if (/^https?:\/\//.test(source)) {
    const res = await fetch(source, { signal: AbortSignal.timeout(60_000) });
    if (!res.ok) throw new ClusterError('SVC_ERR_TLS', `cert-manager's manifests: ${source} answered ${res.status}`);
    return res.text();
  }
  try {
    return readFileSync(source, 'utf8');
  } catch (error) {
    throw new ClusterError('SVC_ERR_TLS', `cert-manager's manifests: ${source} cannot be read: ${(error as Error).message}`);
  }
}

/**
 * cert-manager in the cluster: reused when its Certificate kind is served, else installed from
 * `[scale.orchestrator] cert_manager_manifest` and waited for (its Deployments available).
 */
async function ensureCertManager(kube: Kube, spec: DeploySpec, log: (line: string) => void, timeoutMs: number): Promise<void> {
  const crd = await kube.read('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, 'certificates.cert-manager.io').catch((error: unknown) => {
    // A user whose rights end at the namespace: cert-manager is the administrator's to install.
    if (error instanceof KubeApiError && error.status === 403) return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'certificates.cert-manager.io' } } as K8sObject;
    throw error;
  });
  if (crd) {
    log('cert-manager: installed in the cluster already; reused');
    return;
  }
  log(`cert-manager: not in the cluster; installing it from ${spec.ingress.certManagerManifest}`);
  const objects = parseAllDocuments(await manifestText(spec.ingress.certManagerManifest))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === 'object' && typeof o.kind === 'string');
  const report = await applyObjects(kube, objects, log);
  if (report.failed.length > 0) throw new ClusterError('SVC_ERR_TLS', `cert-manager could not be installed: ${report.failed.map((f) => `${f.object}: ${f.error}`).join('; ')}`);
  for (const d of objects.filter((o) => o.kind === 'Deployment')) {
    const ok = await poll(async () => (conditionOf(await kube.read('apps/v1', 'Deployment', d.metadata.namespace, d.metadata.name), 'Available')?.status === 'True' ? true : undefined), timeoutMs);
    if (!ok) throw new ClusterError('SVC_ERR_TLS', `cert-manager: ${objectId(d)} did not become available within ${Math.round(timeoutMs / 1000)} s`);
  }
  log('cert-manager: running');
}

function labelsOf(spec: DeploySpec): Record<string, string> {
  return {
    'app.kubernetes.io/component': 'ingress',
    'app.kubernetes.io/managed-by': 'svc',
    'app.kubernetes.io/name': spec.app,
    'app.kubernetes.io/part-of': spec.app,
    managed: 'svc-scale',
  };
}

/**
 * The ACME Issuer and the Certificate of `--enable-tls` (namespaced: they go with the app's namespace).
 *
 * @example
 * tlsObjects(spec).map((o) => o.kind) // ['Issuer', 'Certificate']
 */
export function tlsObjects(spec: DeploySpec): K8sObject[] {
  const names = tlsNames(spec.app);
  const labels = labelsOf(spec);
  // HTTP-01 answers go through the app's own ingress: svc's Traefik reads Ingresses carrying the app's label.
  // (By its class annotation and the app's label: a cluster's default IngressClass is not stamped over an annotation.)
  const solverIngress: Json =
    spec.ingress.className === ''
      ? { class: `svc-${spec.app}`, serviceType: 'ClusterIP', ingressTemplate: { metadata: { labels: { 'app.kubernetes.io/name': spec.app } } } }
      : { ingressClassName: spec.ingress.className, serviceType: 'ClusterIP' };
  return [
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: names.issuer, namespace: spec.namespace, labels },
      spec: { acme: { email: spec.ingress.certManagerEmail, server: spec.ingress.acmeServer, privateKeySecretRef: { name: names.accountKey }, solvers: [{ http01: { ingress: solverIngress } }] } },
    },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: names.certificate, namespace: spec.namespace, labels },
      spec: { secretName: names.secret, dnsNames: [spec.ingress.domain], issuerRef: { name: names.issuer, kind: 'Issuer' }, secretTemplate: { labels } },
    },
  ];
}

/** The app's ingress object as the plan names it: svc's or the cluster's Traefik IngressRoute, or a plain Ingress. */
export function ingressRef(spec: DeploySpec): { apiVersion: string; kind: string } {
  return spec.ingress.className === '' || spec.ingress.className === 'traefik' ? { apiVersion: 'traefik.io/v1alpha1', kind: 'IngressRoute' } : { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' };
}

/**
 * Enable HTTPS on the deployed app; answers its https URL once the certificate is issued.
 *
 * @example
 * const url = await enableTls(kube, spec, (line) => process.stderr.write(`${line}\n`)); // 'https://shop.example.com/'
 */
export async function enableTls(kube: Kube, spec: DeploySpec, log: (line: string) => void, options: { timeoutMs?: number } = {}): Promise<string> {
  const problems = tlsConfigProblems(spec);
  if (problems.length > 0) throw new ClusterError('SVC_ERR_TLS', problems.join('\n'));
  const timeoutMs = options.timeoutMs ?? 300_000;
  await ensureCertManager(kube, spec, log, timeoutMs);
  // cert-manager's webhook answers 500 until its CA is injected, some seconds after its Deployments are available.
  for (let until = Date.now() + 90_000; ; ) {
    const report = await applyObjects(kube, tlsObjects(spec), log);
    if (report.failed.length === 0) break;
    const webhook = report.failed.every((f) => /webhook|x509|connection refused|500/.test(f.error));
    if (!webhook || Date.now() > until) throw new ClusterError('SVC_ERR_TLS', `the Issuer or the Certificate could not be applied: ${report.failed.map((f) => `${f.object}: ${f.error}`).join('; ')}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  const ref = ingressRef(spec);
  const live = await kube.read(ref.apiVersion, ref.kind, spec.namespace, spec.app);
  if (!live) throw new ClusterError('SVC_ERR_NOT_DEPLOYED', `the app's ingress (${ref.kind} ${spec.namespace}/${spec.app}) is not in the cluster: deploy first (svc start <entry> --scale)`);
  log(`certificate: requested for ${spec.ingress.domain}; waiting for it to be issued (the ingress is bound once it is)`);
  let last = '';
  const ready = await poll(async () => {
    const cert = await kube.read('cert-manager.io/v1', 'Certificate', spec.namespace, tlsNames(spec.app).certificate);
    const c = conditionOf(cert, 'Ready');
    const said = c ? `${c.reason ?? ''} ${c.message ?? ''}`.trim() : 'no status yet';
    if (said !== last) log(`certificate: ${said}`);
    last = said;
    // Ready for the Certificate as it is now (a domain just changed is not ready until cert-manager has seen it).
    const current = c?.observedGeneration === undefined || c.observedGeneration === cert?.metadata.generation;
    return c?.status === 'True' && current ? true : undefined;
  }, timeoutMs);
  if (!ready) {
    throw new ClusterError(
      'SVC_ERR_TLS',
      `the certificate for ${spec.ingress.domain} was not issued within ${Math.round(timeoutMs / 1000)} s (${last}); the ingress was left as it was. The domain must resolve to the ingress and its port 80 reach it for the HTTP-01 challenge: kubectl describe certificate ${tlsNames(spec.app).certificate} -n ${spec.namespace}`,
    );
  }
  // Bound only now, with the certificate there: built from the live routes, by merging.
  const tls = { domain: spec.ingress.domain, secretName: tlsNames(spec.app).secret };
  if (ref.kind === 'IngressRoute') {
    const route = tlsRoute(spec, live, tls);
    const existing = await kube.read(ref.apiVersion, ref.kind, spec.namespace, route.metadata.name);
    if (existing) await kube.mergePatch(route);
    else await kube.create(route);
  } else {
    await kube.mergePatch(live, { spec: bindTls(live, tls).spec });
  }
  log(`ingress: bound to ${spec.ingress.domain} with the certificate ${tls.secretName}`);
  return `https://${spec.ingress.domain}/`;
}

/**
 * The DNS record that points `domain` at the ingress: an A record for an address, a CNAME for a host name (a
 * load balancer's), or undefined when svc cannot tell.
 *
 * @example
 * dnsRecord('shop.example.com', { ip: '203.0.113.7' }) // 'shop.example.com.  A  203.0.113.7'
 */
export function dnsRecord(domain: string, target: { ip?: string; hostname?: string }): string | undefined {
  if (target.hostname) return `${domain}.  CNAME  ${target.hostname}.`;
  if (target.ip) return `${domain}.  A  ${target.ip}`;
  return undefined;
}
