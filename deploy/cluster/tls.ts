/**
 * `--enable-tls`: HTTPS for a deployed app through cert-manager. Installs
 * cert-manager when the cluster has none (or reuses it), makes an ACME Issuer
 * whose HTTP-01 challenges go through the app's own ingress class, a Certificate
 * for `domain`, and binds the ingress to the host with the certificate — by
 * merging into the live object, and every later deploy carries that binding over
 * (the original product's redeploys wiped the TLS section and the host).
 *
 * Until TLS is enabled the routes match any host, so the app answers at the
 * node's address and at its domain alike.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { DeploySpec, K8sObject } from '../spec.ts';
import { applyObjects, objectId } from './apply.ts';
import { ClusterError, type Kube } from './kube.ts';

type Json = Record<string, unknown>;

/** The names `--enable-tls` gives its objects. */
export function tlsNames(app: string) {
  return { issuer: `${app}-acme`, accountKey: `${app}-acme-account`, certificate: `${app}-tls`, secret: `${app}-tls` };
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
      const match = String(route.match ?? '');
      if (!match.includes('Host(')) route.match = match === '' ? hostRule(tls.domain) : `${hostRule(tls.domain)} && ${match}`;
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
 * The desired ingress object with the live one's TLS binding carried over (a deploy never unbinds TLS).
 *
 * @example
 * await kube.mergePatch(carryTls(desired, live));
 */
export function carryTls(desired: K8sObject, existing: K8sObject | undefined): K8sObject {
  const bound = boundTls(existing);
  return bound ? bindTls(desired, bound) : desired;
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

/** Poll `check` every 250 ms until it answers a value or `timeoutMs` passes (then undefined). */
async function poll<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const condition = (o: K8sObject | undefined, type: string) => ((o?.status as Json | undefined)?.conditions as Json[] | undefined)?.find((c) => c.type === type);

/**
 * cert-manager in the cluster: reused when its Certificate kind is served, else installed from
 * `[scale.orchestrator] cert_manager_manifest` and waited for (its Deployments available).
 */
async function ensureCertManager(kube: Kube, spec: DeploySpec, log: (line: string) => void, timeoutMs: number): Promise<void> {
  const crd = await kube.read('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, 'certificates.cert-manager.io');
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
    const ok = await poll(async () => (condition(await kube.read('apps/v1', 'Deployment', d.metadata.namespace, d.metadata.name), 'Available')?.status === 'True' ? true : undefined), timeoutMs);
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
  const solverIngress: Json = spec.ingress.className === '' ? { ingressTemplate: { metadata: { labels: { 'app.kubernetes.io/name': spec.app } } } } : { ingressClassName: spec.ingress.className };
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
  const report = await applyObjects(kube, tlsObjects(spec), log);
  if (report.failed.length > 0) throw new ClusterError('SVC_ERR_TLS', `the Issuer or the Certificate could not be applied: ${report.failed.map((f) => `${f.object}: ${f.error}`).join('; ')}`);
  const ref = ingressRef(spec);
  const live = await kube.read(ref.apiVersion, ref.kind, spec.namespace, spec.app);
  if (!live) throw new ClusterError('SVC_ERR_NOT_DEPLOYED', `the app's ingress (${ref.kind} ${spec.namespace}/${spec.app}) is not in the cluster: deploy first (svc start <entry> --scale)`);
  const bound = bindTls(live, { domain: spec.ingress.domain, secretName: tlsNames(spec.app).secret });
  // A merge patch of the spec alone: whatever else the live object holds stays.
  await kube.mergePatch(live, { spec: bound.spec });
  log(`ingress: bound to ${spec.ingress.domain} with the certificate ${tlsNames(spec.app).secret}; waiting for the certificate to be issued`);
  let last = '';
  const ready = await poll(async () => {
    const cert = await kube.read('cert-manager.io/v1', 'Certificate', spec.namespace, tlsNames(spec.app).certificate);
    const c = condition(cert, 'Ready');
    const said = c ? `${c.reason ?? ''} ${c.message ?? ''}`.trim() : 'no status yet';
    if (said !== last) log(`certificate: ${said}`);
    last = said;
    return c?.status === 'True' ? true : undefined;
  }, timeoutMs);
  if (!ready) {
    throw new ClusterError(
      'SVC_ERR_TLS',
      `the certificate for ${spec.ingress.domain} was not issued within ${Math.round(timeoutMs / 1000)} s (${last}): the domain must resolve to the ingress and port 80 reach it for the HTTP-01 challenge; kubectl describe certificate ${tlsNames(spec.app).certificate} -n ${spec.namespace}`,
    );
  }
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
