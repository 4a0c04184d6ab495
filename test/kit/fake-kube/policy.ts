/**
 * The controllers of the policy objects: a HorizontalPodAutoscaler keeps its target's replicas within
 * `minReplicas`..`maxReplicas` (there is no metrics server here, so it scales on nothing else and says so in its
 * conditions, as a real one without metrics does), and a PodDisruptionBudget counts the healthy pods it covers.
 */
import type { Registry } from './registry.ts';
import { builtinOf } from './resources.ts';
import { selects } from './selectors.ts';
import { clone, same, timestamp, type Obj } from './types.ts';
import { isReady, POD } from './workloads.ts';

const HPA = builtinOf('HorizontalPodAutoscaler');
const PDB = builtinOf('PodDisruptionBudget');

/** A condition with its transition time kept while its status does not change. */
function condition(previous: Obj[] | undefined, type: string, status: string, reason: string, message: string): Obj {
  const before = (previous ?? []).find((c) => c.type === type);
  return { type, status, lastTransitionTime: before?.status === status ? before.lastTransitionTime : timestamp(), reason, message };
}

/** One step of an autoscaler: its target's replicas brought within bounds; its status. */
export function reconcileAutoscaler(registry: Registry, hpa: Obj): void {
  if (hpa.metadata.deletionTimestamp) return;
  const ns = hpa.metadata.namespace;
  const ref = hpa.spec?.scaleTargetRef ?? {};
  const res = registry.catalog.byKind(String(ref.apiVersion ?? ''), String(ref.kind ?? ''));
  const target = res && registry.store.get(res, ns, String(ref.name));
  const min: number = hpa.spec?.minReplicas ?? 1;
  const max: number = hpa.spec?.maxReplicas ?? min;
  const previous: Obj[] | undefined = hpa.status?.conditions;
  let status: Obj;
  if (!res || !target || !res.subresources.includes('scale')) {
    status = {
      currentReplicas: 0,
      desiredReplicas: 0,
      conditions: [
        condition(
          previous,
          'AbleToScale',
          'False',
          'FailedGetScale',
          `the HPA controller was unable to get the target's current scale: ${String(ref.kind)}.${res?.group ?? ''} "${String(ref.name)}" not found`,
        ),
      ],
    };
  } else {
    const current: number = target.spec?.replicas ?? 1;
    const desired = current === 0 ? 0 : Math.min(max, Math.max(min, current));
    if (desired !== current) {
      target.spec.replicas = desired;
      registry.save(res, target);
    }
    const metric = ((hpa.spec?.metrics ?? []) as Obj[])[0]?.resource?.name ?? 'cpu';
    status = {
      ...(desired !== current ? { lastScaleTime: timestamp() }
      : hpa.status?.lastScaleTime ? { lastScaleTime: hpa.status.lastScaleTime }
      : {}),
      currentReplicas: current,
      desiredReplicas: desired,
      conditions: [
        condition(
          previous,
          'AbleToScale',
          'True',
          desired !== current ? 'SucceededRescale' : 'SucceededGetScale',
          desired !== current ? `the HPA controller was able to update the target scale to ${desired}` : "the HPA controller was able to get the target's current scale",
        ),
        current === 0 ?
          condition(previous, 'ScalingActive', 'False', 'ScalingDisabled', 'scaling is disabled since the replica count of the target is zero')
        : condition(
            previous,
            'ScalingActive',
            'False',
            'FailedGetResourceMetric',
            `the HPA was unable to compute the replica count: failed to get ${metric} utilization: unable to get metrics for resource ${metric}: no metrics returned from resource metrics API`,
          ),
      ],
    };
  }
  if (same(status, hpa.status)) return;
  const copy = clone(hpa);
  copy.status = status;
  registry.store.write(HPA, copy);
}

/** One step of a disruption budget: the pods it selects, how many are healthy, how many may be disrupted. */
export function reconcileDisruptionBudget(registry: Registry, pdb: Obj): void {
  if (pdb.metadata.deletionTimestamp) return;
  const pods = registry.store.peekList(POD, pdb.metadata.namespace).filter((p) => !p.metadata.deletionTimestamp && selects(pdb.spec?.selector, p.metadata.labels ?? {}));
  const expected = pods.length;
  const healthy = pods.filter(isReady).length;
  const amount = (value: unknown, up: boolean): number => {
    if (typeof value === 'number') return value;
    const pct = Number(/^(\d+)%$/.exec(String(value))?.[1] ?? 0);
    return up ? Math.ceil((pct * expected) / 100) : Math.floor((pct * expected) / 100);
  };
  const desired =
    pdb.spec?.minAvailable !== undefined ? amount(pdb.spec.minAvailable, true)
    : pdb.spec?.maxUnavailable !== undefined ? Math.max(0, expected - amount(pdb.spec.maxUnavailable, false))
    : 0;
  const allowed = Math.max(0, healthy - desired);
  const status: Obj = {
    observedGeneration: pdb.metadata.generation,
    disruptionsAllowed: allowed,
    currentHealthy: healthy,
    desiredHealthy: desired,
    expectedPods: expected,
    conditions: [
      allowed > 0 ? condition(pdb.status?.conditions, 'DisruptionAllowed', 'True', 'SufficientPods', '') : condition(pdb.status?.conditions, 'DisruptionAllowed', 'False', 'InsufficientPods', ''),
    ],
  };
  if (same(status, pdb.status)) return;
  const copy = clone(pdb);
  copy.status = status;
  registry.store.write(PDB, copy);
}

/** The resource types of both, for the controller's pass. */
export const POLICY_KINDS = { HPA, PDB };
