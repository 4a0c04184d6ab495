/**
 * The route table: sandbox id → the pod serving it (its IP, phase and readiness), kept by the pod watch; and the
 * sandbox id a request's Host header names.
 *
 * Decisions:
 * - Keyed by pod, looked up by id: while a sandbox's pod is replaced, two pods may carry its id for a moment; the
 *   ready one wins. A warm pod (no id label yet) is not a route; it becomes one when a claim labels it.
 * - Ready means what a Service would route to: phase Running, condition Ready True, not being deleted.
 */
import { watchObjects, type Kube, type ObjectWatch } from '../../kube/index.ts';

/** The label naming a pod's sandbox. */
export const SANDBOX_ID_LABEL = 'svc-sandbox-id';

/** Sandbox ids as svc makes them: `sbx-` and 16 hexadecimal digits. */
export const SANDBOX_ID_PATTERN = /^sbx-[0-9a-f]{16}$/;

/** Where one sandbox is served now. */
export interface Route {
  sandbox_id: string;
  /** `namespace/name` of the pod. */
  pod: string;
  /** `status.podIP`; undefined until the pod has one. */
  ip: string | undefined;
  phase: string;
  ready: boolean;
}

/** A pod as the watch tells it (plain JSON; only these fields are read). */
export interface PodLike {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; deletionTimestamp?: string };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

/**
 * The route of a pod, or undefined for a pod without a sandbox id (a warm one).
 *
 * @example
 * routeOf(pod); // { sandbox_id: 'sbx-0123456789abcdef', pod: 'svc-sandboxes/svc-sbx-ada-shop-1f2e', ip: '10.244.0.7', phase: 'Running', ready: true }
 */
export function routeOf(pod: PodLike): Route | undefined {
  const id = pod.metadata.labels?.[SANDBOX_ID_LABEL];
  // Only ids svc makes are routes: a label anyone could write (`../x`) names nothing a Host could reach.
  if (!id || !SANDBOX_ID_PATTERN.test(id)) return undefined;
  const phase = pod.status?.phase ?? 'Pending';
  const readyCondition = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const ip = pod.status?.podIP || undefined;
  return { sandbox_id: id, pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`, ip, phase, ready: phase === 'Running' && readyCondition && ip !== undefined && !pod.metadata.deletionTimestamp };
}

/**
 * Sandbox routes by id, fed with pod events.
 *
 * @example
 * const routes = new RouteTable();
 * routes.update('ADDED', pod);
 * routes.get('sbx-0123456789abcdef')?.ready; // true
 */
export class RouteTable {
  private readonly byPod = new Map<string, Route>();
  private readonly byId = new Map<string, Set<string>>();
  /** Which pod holds an address now (the last one the watch gave it). */
  private readonly byIp = new Map<string, string>();

  /** Apply one watch event. */
  update(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: PodLike): void {
    const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    const old = this.byPod.get(key);
    if (old) {
      this.byPod.delete(key);
      if (old.ip && this.byIp.get(old.ip) === key) this.byIp.delete(old.ip);
      const pods = this.byId.get(old.sandbox_id);
      pods?.delete(key);
      if (pods?.size === 0) this.byId.delete(old.sandbox_id);
    }
    const route = type === 'DELETED' ? undefined : routeOf(pod);
    if (!route) return;
    if (route.ip) {
      // An address given to a new pod is no longer the old one's, whatever a late DELETE says: never route one
      // sandbox's host to another's pod.
      const other = this.byIp.get(route.ip);
      const r = other !== undefined && other !== key ? this.byPod.get(other) : undefined;
      if (r?.ready) this.byPod.set(other as string, { ...r, ready: false });
      this.byIp.set(route.ip, key);
    }
    this.byPod.set(key, route);
    let pods = this.byId.get(route.sandbox_id);
    if (!pods) this.byId.set(route.sandbox_id, (pods = new Set()));
    pods.add(key);
  }

  /** The route of a sandbox (its ready pod when it has one), or undefined when no pod carries the id. */
  get(sandboxId: string): Route | undefined {
    const pods = this.byId.get(sandboxId);
    if (!pods) return undefined;
    let found: Route | undefined;
    for (const key of pods) {
      const route = this.byPod.get(key);
      if (route?.ready) return route;
      found ??= route;
    }
    return found;
  }

  /** The sandbox pods tracked (pods with an id label). */
  get size(): number {
    return this.byPod.size;
  }

  /** Every route, one per pod. */
  list(): Route[] {
    return [...this.byPod.values()];
  }
}

/**
 * Keep `routes` following the sandbox pods of `namespace` selected by `label`, by a watch (never by polling).
 *
 * @example
 * const watch = followSandboxPods(connectCluster(process.env), routes, { namespace: 'svc-sandboxes', label: 'svc-sandbox=true' });
 * await watch.synced;
 */
export function followSandboxPods(kube: Kube, routes: RouteTable, options: { namespace: string; label: string; signal?: AbortSignal; onError?(error: Error): void }): ObjectWatch {
  return watchObjects(kube, 'v1', 'Pod', options.namespace, options.label, (type, pod) => routes.update(type, pod as unknown as PodLike), {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
}

/**
 * The sandbox id a Host header names: its first DNS label, lowercased, port stripped, when it matches `pattern`.
 *
 * @example
 * sandboxIdOf('SBX-0123456789ABCDEF.preview.example.com:8080'); // 'sbx-0123456789abcdef'
 */
export function sandboxIdOf(host: string | undefined, pattern: RegExp = SANDBOX_ID_PATTERN, domain?: string): string | undefined {
  if (!host || host.startsWith('[')) return undefined;
  if (domain) {
    // Exactly `{id}.<domain>` (any case, a port, a trailing dot): another domain names no sandbox of ours.
    const name = host.replace(/:\d+$/, '').replace(/\.$/, '').toLowerCase();
    const id = name.slice(0, name.indexOf('.'));
    return name === `${id}.${domain}` && pattern.test(id) ? id : undefined;
  }
  const dot = host.indexOf('.');
  const colon = host.indexOf(':');
  const end = dot >= 0 ? dot : colon >= 0 ? colon : host.length;
  const label = host.slice(0, end).toLowerCase();
  return pattern.test(label) ? label : undefined;
}
