/**
 * The simulated control plane: every `tickMs`, and soon after every write, it runs passes over the stored
 * objects until one changes nothing — CRD and namespace deletion, foreground deletion and garbage collection
 * by ownerReferences, every namespace's default ServiceAccount and root CA ConfigMap, the kubelet's pods, the
 * workload controllers, autoscalers and disruption budgets, Endpoints and LoadBalancer status, claim binding and
 * cert-manager's Certificates. Passes are synchronous; a pod runtime's answers arrive between them.
 */
import { createHash } from 'node:crypto';
import type { Kubelet } from './kubelet.ts';
import type { Registry } from './registry.ts';
import { builtinOf, type Resource } from './resources.ts';
import { POLICY_KINDS, reconcileAutoscaler, reconcileDisruptionBudget } from './policy.ts';
import { mapSelects } from './selectors.ts';
import { clone, isObj, same, timestamp, type Obj } from './types.ts';
import {
  DAEMONSET,
  DEPLOYMENT,
  isReady,
  JOB,
  POD,
  PVC,
  REPLICASET,
  STATEFULSET,
  reconcileDaemonSet,
  reconcileDeployment,
  reconcileJob,
  reconcileReplicaSet,
  reconcileStatefulSet,
  type WorkloadContext,
} from './workloads.ts';

const NAMESPACE = builtinOf('Namespace');
const SERVICE = builtinOf('Service');
const ENDPOINTS = builtinOf('Endpoints');
const EVENT = builtinOf('Event');
const SECRET = builtinOf('Secret');
const SERVICE_ACCOUNT = builtinOf('ServiceAccount');
const CONFIG_MAP = builtinOf('ConfigMap');
const CRD = builtinOf('CustomResourceDefinition');
const CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';

/** How the controller behaves (the entry file's options, resolved). */
export interface ControllerOptions {
  tickMs: number;
  observeDelayMs: number;
  nodeAddress: string;
  certificates: 'issue' | 'pending';
}

/** The control plane. */
export class Controller {
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;
  private closed = false;
  private passing = false;
  private readonly seen = new Map<string, { generation: number; at: number }>();
  private readonly endpoints = new Set<string>();
  /** When each terminating namespace was first seen terminating (by uid). */
  private readonly terminating = new Map<string, number>();
  private readonly ctx: WorkloadContext;
  /** The last error a pass threw (a bug of the fake; printed once). */
  lastError: unknown;

  constructor(
    private readonly registry: Registry,
    private readonly kubelet: Kubelet,
    private readonly options: ControllerOptions,
  ) {
    this.ctx = { registry, observed: (o) => this.observed(o), progress: new Map() };
    registry.graceful = (pod) => kubelet.graceful(pod);
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.options.tickMs);
    this.timer.unref();
    this.registry.store.onWrite = () => this.schedule();
  }

  /** A tick soon (after the current request or pass). */
  schedule(): void {
    if (this.closed || this.soon || this.passing) return;
    this.soon = setImmediate(() => {
      this.soon = undefined;
      this.tick();
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    if (this.soon) clearImmediate(this.soon);
  }

  /** Passes until one writes nothing (at most 20, so a controller bug cannot spin). */
  tick(): void {
    if (this.closed || this.passing) return;
    this.passing = true;
    try {
      for (let i = 0; i < 20; i++) {
        const rv = this.registry.store.rv;
        this.pass();
        if (this.registry.store.rv === rv) break;
      }
    } catch (error) {
      if (this.lastError === undefined) console.error('fake Kubernetes API server: the controller failed:', error);
      this.lastError = error;
    } finally {
      this.passing = false;
    }
  }

  /** Whether a workload's generation is observed yet (`observeDelayMs` after it was first seen). */
  private observed(object: Obj): boolean {
    if (this.options.observeDelayMs <= 0) return true;
    const uid = object.metadata.uid;
    const generation = object.metadata.generation ?? 1;
    const seen = this.seen.get(uid);
    if (!seen || seen.generation !== generation) {
      this.seen.set(uid, { generation, at: Date.now() });
      return false;
    }
    return Date.now() - seen.at >= this.options.observeDelayMs;
  }

  private resourceOf(object: Obj): Resource | undefined {
    return this.registry.catalog.byKind(String(object.apiVersion), String(object.kind));
  }

  private pass(): void {
    const store = this.registry.store;
    this.crdCleanup();
    this.namespaces();
    this.collectGarbage();
    for (const pod of store.peekList(POD)) this.pod(pod);
    for (const rs of store.list(REPLICASET)) reconcileReplicaSet(this.ctx, rs);
    for (const d of store.list(DEPLOYMENT)) reconcileDeployment(this.ctx, d);
    for (const sts of store.list(STATEFULSET)) reconcileStatefulSet(this.ctx, sts);
    for (const ds of store.list(DAEMONSET)) reconcileDaemonSet(this.ctx, ds);
    for (const job of store.list(JOB)) reconcileJob(this.ctx, job);
    for (const hpa of store.list(POLICY_KINDS.HPA)) reconcileAutoscaler(this.registry, hpa);
    for (const pdb of store.list(POLICY_KINDS.PDB)) reconcileDisruptionBudget(this.registry, pdb);
    this.services();
    this.claims();
    this.certificates();
  }

  /** A CRD being deleted: its objects deleted, then its cleanup finalizer removed, then the CRD. */
  private crdCleanup(): void {
    const store = this.registry.store;
    for (const crd of store.peekList(CRD)) {
      if (!crd.metadata.deletionTimestamp) continue;
      const res = this.registry.catalog.all().find((r) => r.crd === crd.metadata.name);
      const left = res ? store.peekList(res) : [];
      for (const o of left) if (!o.metadata.deletionTimestamp) this.registry.remove(res as Resource, clone(o));
      if (left.length && res && store.peekList(res).length) continue;
      const copy = clone(crd);
      copy.metadata.finalizers = (copy.metadata.finalizers ?? []).filter((f: string) => f !== CRD_CLEANUP);
      if (copy.metadata.finalizers.length) store.write(CRD, copy);
      else store.remove(CRD, undefined, crd.metadata.name);
    }
  }

  /**
   * An active namespace gets what every namespace has (its `default` ServiceAccount and the `kube-root-ca.crt`
   * ConfigMap, made again when deleted); a terminating one has everything in it deleted, then goes once empty.
   */
  private namespaces(): void {
    const store = this.registry.store;
    for (const ns of store.peekList(NAMESPACE)) {
      if (!ns.metadata.deletionTimestamp) {
        const name = ns.metadata.name;
        if (!store.peek(SERVICE_ACCOUNT, name, 'default')) this.registry.createInternal(SERVICE_ACCOUNT, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } });
        if (!store.peek(CONFIG_MAP, name, 'kube-root-ca.crt')) {
          const ca = `-----BEGIN CERTIFICATE-----\n${Buffer.from('the fake API server has no certificate authority').toString('base64')}\n-----END CERTIFICATE-----\n`;
          this.registry.createInternal(CONFIG_MAP, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: 'kube-root-ca.crt',
              namespace: name,
              annotations: {
                'kubernetes.io/description':
                  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.',
              },
            },
            data: { 'ca.crt': ca },
          });
        }
        continue;
      }
      const name = ns.metadata.name;
      const left = [...store.everything()].filter((o) => o.metadata.namespace === name && o.kind !== 'Namespace');
      for (const o of left) {
        const res = this.resourceOf(o);
        if (res?.namespaced && !o.metadata.deletionTimestamp) this.registry.remove(res, clone(o));
      }
      // Removed once empty, and not before two ticks: a client sees it Terminating, and must wait for it.
      const since = this.terminating.get(ns.metadata.uid) ?? Date.now();
      this.terminating.set(ns.metadata.uid, since);
      if (left.length || Date.now() - since < 2 * this.options.tickMs) continue;
      this.terminating.delete(ns.metadata.uid);
      store.remove(NAMESPACE, undefined, name);
    }
  }

  /** Foreground deletion, and objects whose every owner is gone (background propagation). */
  private collectGarbage(): void {
    const store = this.registry.store;
    const all = [...store.everything()];
    const uids = new Set(all.map((o) => o.metadata.uid));
    for (const o of all) {
      const res = this.resourceOf(o);
      if (!res) continue;
      const finalizers: string[] = o.metadata.finalizers ?? [];
      if (o.metadata.deletionTimestamp && finalizers.includes('foregroundDeletion')) {
        const dependents = all.filter((d) => (d.metadata.ownerReferences ?? []).some((r: Obj) => r.uid === o.metadata.uid));
        for (const d of dependents) {
          const dres = this.resourceOf(d);
          if (dres && !d.metadata.deletionTimestamp) this.registry.remove(dres, clone(d), 'Foreground');
        }
        if (dependents.length) continue;
        const copy = clone(o);
        copy.metadata.finalizers = finalizers.filter((f) => f !== 'foregroundDeletion');
        if (copy.metadata.finalizers.length) store.write(res, copy);
        else store.remove(res, o.metadata.namespace, o.metadata.name);
        continue;
      }
      const owners: Obj[] = o.metadata.ownerReferences ?? [];
      if (owners.length && !o.metadata.deletionTimestamp && owners.every((r) => !uids.has(r.uid))) this.registry.remove(res, clone(o));
    }
  }

  /** The kubelet's side of a pod: stop and remove a deleted one, else render its status. */
  private pod(pod: Obj): void {
    const store = this.registry.store;
    const { namespace, name, uid } = pod.metadata;
    if (pod.metadata.deletionTimestamp) {
      if ((pod.metadata.finalizers ?? []).length) return;
      if (!this.kubelet.graceful(pod)) {
        store.remove(POD, namespace, name);
        this.kubelet.forget(uid);
        return;
      }
      // A runtime that fails to stop is gone all the same (the kubelet would kill it).
      void this.kubelet
        .stop(clone(pod))
        .catch(() => undefined)
        .then(() => {
          if (store.peek(POD, namespace, name)?.metadata.uid === uid) store.remove(POD, namespace, name);
        });
      return;
    }
    this.kubelet.poll(pod);
    const { status, nodeName, warnings } = this.kubelet.render(pod);
    if (!same(status, pod.status) || (nodeName && pod.spec?.nodeName !== nodeName)) {
      const copy = clone(pod);
      copy.status = status;
      if (nodeName) copy.spec.nodeName = nodeName;
      store.write(POD, copy);
    }
    for (const w of warnings) {
      if (!this.kubelet.reportOnce(pod, w.reason)) continue;
      const stamp = timestamp();
      this.registry.createInternal(EVENT, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${name}.${createHash('sha256').update(`${uid}/${w.reason}`).digest('hex').slice(0, 16)}`, namespace },
        involvedObject: { kind: 'Pod', namespace, name, uid, apiVersion: 'v1', resourceVersion: pod.metadata.resourceVersion },
        reason: w.reason,
        message: w.message,
        type: 'Warning',
        count: 1,
        firstTimestamp: stamp,
        lastTimestamp: stamp,
        source: { component: w.component, ...(w.component === 'kubelet' ? { host: 'fake-node' } : {}) },
        reportingComponent: w.component,
        reportingInstance: w.component === 'kubelet' ? 'fake-node' : '',
      });
    }
  }

  /** Endpoints of every Service with a selector (ready and not-ready pod addresses); a LoadBalancer's ingress IP. */
  private services(): void {
    const store = this.registry.store;
    const wanted = new Set<string>();
    for (const svc of store.peekList(SERVICE)) {
      const ns = svc.metadata.namespace;
      if (svc.spec?.type === 'LoadBalancer' && !svc.status?.loadBalancer?.ingress) {
        const copy = clone(svc);
        copy.status = { loadBalancer: { ingress: [{ ip: this.options.nodeAddress, ipMode: 'VIP' }] } };
        store.write(SERVICE, copy);
      }
      if (!isObj(svc.spec?.selector) || !Object.keys(svc.spec.selector).length || svc.metadata.deletionTimestamp) continue;
      wanted.add(`${ns}/${svc.metadata.name}`);
      const pods = store.peekList(POD, ns).filter((p) => !p.metadata.deletionTimestamp && p.status?.podIP && mapSelects(svc.spec.selector, p.metadata.labels ?? {}));
      const address = (p: Obj): Obj => ({ ip: p.status.podIP, nodeName: 'fake-node', targetRef: { kind: 'Pod', namespace: ns, name: p.metadata.name, uid: p.metadata.uid } });
      const ports = ((svc.spec.ports ?? []) as Obj[]).flatMap((sp) => {
        let port = sp.targetPort ?? sp.port;
        if (typeof port === 'string') {
          port = pods.flatMap((p) => (p.spec?.containers ?? []).flatMap((c: Obj) => c.ports ?? [])).find((cp: Obj) => cp.name === port)?.containerPort;
          if (port === undefined) return [];
        }
        return [{ ...(sp.name ? { name: sp.name } : {}), port, protocol: sp.protocol ?? 'TCP' }];
      });
      const ready = pods.filter(isReady).map(address);
      const notReady = pods.filter((p) => !isReady(p)).map(address);
      const subsets = pods.length ? [{ ...(ready.length ? { addresses: ready } : {}), ...(notReady.length ? { notReadyAddresses: notReady } : {}), ports }] : undefined;
      const existing = store.peek(ENDPOINTS, ns, svc.metadata.name);
      const object: Obj =
        existing ?
          clone(existing)
        : { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: svc.metadata.name, namespace: ns, ...(svc.metadata.labels ? { labels: clone(svc.metadata.labels) } : {}) } };
      if (subsets) object.subsets = subsets;
      else delete object.subsets;
      this.endpoints.add(`${ns}/${svc.metadata.name}`);
      if (existing) store.write(ENDPOINTS, object);
      else this.registry.createInternal(ENDPOINTS, object);
    }
    for (const key of [...this.endpoints]) {
      if (wanted.has(key)) continue;
      this.endpoints.delete(key);
      const [ns, name] = key.split('/') as [string, string];
      store.remove(ENDPOINTS, ns, name);
    }
  }

  /** Claims bound at once (the default storage class provisions), their capacity following their request. */
  private claims(): void {
    const store = this.registry.store;
    for (const pvc of store.peekList(PVC)) {
      if (pvc.metadata.deletionTimestamp) continue;
      const storage = pvc.spec?.resources?.requests?.storage;
      const status = { phase: 'Bound', accessModes: clone(pvc.spec?.accessModes ?? ['ReadWriteOnce']), ...(storage ? { capacity: { storage } } : {}) };
      if (same(status, pvc.status) && pvc.spec?.volumeName) continue;
      const copy = clone(pvc);
      copy.spec.volumeName ??= `pvc-${pvc.metadata.uid}`;
      copy.metadata.annotations = { ...copy.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' };
      copy.status = status;
      store.write(PVC, copy);
    }
  }

  /** cert-manager, while its Certificate CRD exists: a Certificate's Secret issued and the Certificate Ready (or never, when pending). */
  private certificates(): void {
    const store = this.registry.store;
    const res = this.registry.catalog.all().find((r) => r.group === 'cert-manager.io' && r.kind === 'Certificate');
    if (!res) return;
    for (const cert of store.peekList(res)) {
      if (cert.metadata.deletionTimestamp) continue;
      const stamp = timestamp();
      const secretName = cert.spec?.secretName;
      let status: Obj;
      if (this.options.certificates === 'pending' || !secretName) {
        const before = (cert.status?.conditions ?? []).find((c: Obj) => c.type === 'Ready');
        status = {
          conditions: [
            {
              type: 'Ready',
              status: 'False',
              lastTransitionTime: before?.status === 'False' ? before.lastTransitionTime : stamp,
              reason: 'DoesNotExist',
              message: 'Issuing certificate as Secret does not exist',
              observedGeneration: cert.metadata.generation,
            },
          ],
        };
      } else {
        if (!store.peek(SECRET, cert.metadata.namespace, secretName)) {
          const pem = (label: string): string =>
            Buffer.from(`-----BEGIN ${label}-----\n${Buffer.from(`fake ${label} for ${cert.metadata.name}`).toString('base64')}\n-----END ${label}-----\n`).toString('base64');
          this.registry.createInternal(SECRET, {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'kubernetes.io/tls',
            metadata: {
              name: secretName,
              namespace: cert.metadata.namespace,
              annotations: {
                'cert-manager.io/certificate-name': cert.metadata.name,
                'cert-manager.io/issuer-name': cert.spec?.issuerRef?.name ?? '',
                'cert-manager.io/issuer-kind': cert.spec?.issuerRef?.kind ?? 'Issuer',
                'cert-manager.io/common-name': cert.spec?.commonName ?? '',
                'cert-manager.io/alt-names': (cert.spec?.dnsNames ?? []).join(','),
              },
              labels: { 'controller.cert-manager.io/fao': 'true' },
            },
            data: { 'tls.crt': pem('CERTIFICATE'), 'tls.key': pem('PRIVATE KEY'), 'ca.crt': pem('CERTIFICATE') },
          });
        }
        const before = (cert.status?.conditions ?? []).find((c: Obj) => c.type === 'Ready');
        const issued = cert.status?.notBefore ?? stamp;
        const after = timestamp(Date.parse(issued) + 90 * 86_400_000);
        status = {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              lastTransitionTime: before?.status === 'True' ? before.lastTransitionTime : stamp,
              reason: 'Ready',
              message: 'Certificate is up to date and has not expired',
              observedGeneration: cert.metadata.generation,
            },
          ],
          notBefore: issued,
          notAfter: after,
          renewalTime: timestamp(Date.parse(issued) + 60 * 86_400_000),
          revision: 1,
        };
      }
      if (same(status, cert.status)) continue;
      const copy = clone(cert);
      copy.status = status;
      store.write(res, copy);
    }
  }
}
