/**
 * The fake node's kubelet: each pod's script (or real runtime) rendered as the status a kubelet reports —
 * phase, conditions, container statuses with their waiting/running/terminated states — and its logs.
 *
 * Decisions:
 * - `restartPolicy` decides what an exit does: under Always (and OnFailure for a non-zero code) the container
 *   restarts (CrashLoopBackOff, the restart count growing, the pod Running); otherwise the pod ends, Succeeded or
 *   Failed by the exit code. This holds for a scripted `Failed`, `Succeeded` or `CrashLoopBackOff` as for a
 *   runtime that exited.
 * - `activeDeadlineSeconds` counts from `status.startTime` (when the kubelet first saw the pod): past it the pod
 *   is Failed with reason DeadlineExceeded, its runtime stopped, for good.
 */
import { createHash } from 'node:crypto';
import { clone, isObj, KubeStatusError, timestamp, type Obj, type PodRuntime, type PodScript } from './types.ts';

/** What the kubelet knows of one pod (by uid). */
interface PodState {
  created: number;
  script: PodScript;
  runtime?: PodRuntime;
  /** The runner's promise has not settled yet. */
  starting?: boolean;
  /** Settles when the runner's promise has (the runtime assigned, or its error noted). */
  started?: Promise<void>;
  /** Scripted by the test: a runtime that arrives now is stopped at once. */
  scripted?: boolean;
  startError?: string;
  ready?: boolean;
  exit?: number;
  polling?: boolean;
  stopping?: boolean;
  ip: string;
  /** Warning events already reported (by reason). */
  reported: Set<string>;
  /** Failed for good: its `activeDeadlineSeconds` passed. */
  deadlineExceeded?: boolean;
}

/** A Warning event a pod's state calls for. */
export interface PodWarning {
  reason: string;
  message: string;
  component: string;
}

function hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A script's state after the runtime (if any) is taken into account. */
interface Effective {
  state: PodScript['state'] | 'RunContainerError';
  exitCode: number;
  message?: string;
  restarts: number;
}

/** The kubelet of `fake-node`. */
export class Kubelet {
  private readonly pods = new Map<string, PodState>();
  private nextIp = 2;
  private closed = false;

  constructor(
    private readonly options: {
      nodeAddress: string;
      pods?: (pod: Obj) => PodScript | undefined;
      runner?: (pod: Obj) => Promise<PodRuntime> | undefined;
      podIp?: (pod: Obj) => string | undefined;
    },
    /** Called when a runtime's answers change (the controller runs a pass). */
    private readonly changed: () => void,
  ) {}

  /** The pod's state, made on first sight: its runner asked, else its script. */
  private state(pod: Obj): PodState {
    const uid = pod.metadata.uid;
    let state = this.pods.get(uid);
    if (state) return state;
    const job = (pod.metadata.ownerReferences ?? []).some((r: Obj) => r.kind === 'Job');
    const ip = this.options.podIp?.(clone(pod)) ?? `10.244.${Math.floor(this.nextIp / 254)}.${(this.nextIp % 254) + 1}`;
    state = { created: Date.now(), script: { state: job ? 'Succeeded' : 'Running' }, ip, reported: new Set() };
    this.nextIp++;
    this.pods.set(uid, state);
    let started: Promise<PodRuntime> | undefined;
    try {
      started = this.options.runner?.(clone(pod));
    } catch (error) {
      // A runner that throws at once fails the pod's start, as one whose promise rejects does.
      started = Promise.reject(error);
    }
    if (started) {
      const s = state;
      s.starting = true;
      s.started = started.then(
        async (runtime) => {
          s.starting = false;
          if (s.scripted || this.closed) await runtime.stop(0).catch(() => undefined);
          else s.runtime = runtime;
          this.changed();
        },
        (error: unknown) => {
          s.starting = false;
          s.startError = error instanceof Error ? error.message : String(error);
          this.changed();
        },
      );
    } else {
      const script = this.options.pods?.(clone(pod));
      if (script) state.script = { ...script };
    }
    return state;
  }

  /** Script a pod from now on (its runtime, if any, no longer decides). */
  script(pod: Obj, script: PodScript): void {
    const state = this.state(pod);
    state.script = { ...script };
    state.scripted = true;
    void state.runtime?.stop(0).catch(() => undefined);
    state.runtime = undefined;
    state.starting = false;
    state.startError = undefined;
  }

  /** Whether deleting the pod waits for a runtime to stop. */
  graceful(pod: Obj): boolean {
    const state = this.pods.get(pod.metadata.uid);
    return state !== undefined && (state.runtime !== undefined || state.starting === true);
  }

  /** Ask the runtime (at most one question in flight per pod) whether it is ready and whether it exited. */
  poll(pod: Obj): void {
    const state = this.state(pod);
    const runtime = state.runtime;
    if (!runtime || state.polling || state.stopping) return;
    state.polling = true;
    runtime.ready().then(
      (ready) => {
        state.polling = false;
        const exit = runtime.exited();
        if (ready !== state.ready || exit !== state.exit) {
          state.ready = ready;
          state.exit = exit;
          this.changed();
        }
      },
      () => {
        state.polling = false;
        state.ready = false;
      },
    );
  }

  /**
   * Stop a deleted pod's runtime (once): resolves when it has stopped (at once when it has none). A runtime still
   * starting is stopped when it has started.
   */
  async stop(pod: Obj): Promise<void> {
    const state = this.pods.get(pod.metadata.uid);
    if (!state || state.stopping) return;
    state.stopping = true;
    await state.started;
    const grace = Number(pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30);
    try {
      await state.runtime?.stop(grace);
    } finally {
      this.pods.delete(pod.metadata.uid);
    }
  }

  /** Forget a pod removed without a runtime. */
  forget(uid: string): void {
    const state = this.pods.get(uid);
    if (state && !state.runtime && !state.starting) this.pods.delete(uid);
  }

  /** Stop every runtime (the server closing). */
  async close(): Promise<void> {
    this.closed = true;
    const states = [...this.pods.values()];
    this.pods.clear();
    // A runtime still starting is stopped when it arrives (the runner's callback sees `closed`).
    await Promise.allSettled(states.map((s) => (s.runtime && !s.stopping ? s.runtime.stop(0) : s.started)));
  }

  private effective(state: PodState, restartPolicy: string): Effective {
    const elapsed = Date.now() - state.created;
    const restarts = 1 + Math.floor(elapsed / 1000);
    // What an exit with `code` comes to: a restart (the crash loop), or the pod's end.
    const exit = (code: number, restarted: number, message?: string): Effective => {
      const restart = restartPolicy === 'Always' || (restartPolicy === 'OnFailure' && code !== 0);
      return { state: restart ? 'CrashLoopBackOff' : code === 0 ? 'Succeeded' : 'Failed', exitCode: code, restarts: restart ? restarted : 0, ...(message ? { message } : {}) };
    };
    if (state.startError !== undefined) return { state: 'RunContainerError', exitCode: 128, message: state.startError, restarts: 0 };
    if (state.starting) return { state: 'Pending', exitCode: 0, restarts: 0 };
    if (state.runtime) {
      if (state.exit !== undefined) return exit(state.exit, 1);
      return { state: state.ready ? 'Running' : 'NotReady', exitCode: 0, restarts: 0 };
    }
    const s = state.script;
    const exitCode = s.exitCode ?? (s.state === 'Succeeded' ? 0 : 1);
    if (s.state === 'Running' && (s.readyAfterMs ?? 0) > elapsed) return { state: 'NotReady', exitCode, restarts: 0, ...(s.message ? { message: s.message } : {}) };
    if (s.state === 'CrashLoopBackOff' || s.state === 'Failed' || s.state === 'Succeeded') return exit(exitCode, restarts, s.message);
    return { state: s.state, exitCode, restarts, ...(s.message ? { message: s.message } : {}) };
  }

  /**
   * The pod's status as the kubelet reports it now, and the node it is bound to (undefined: unschedulable).
   * Condition transition times are kept from `pod.status` while a condition's status does not change.
   */
  render(pod: Obj): { status: Obj; nodeName?: string; warnings: PodWarning[] } {
    const state = this.state(pod);
    let eff = this.effective(state, String(pod.spec?.restartPolicy ?? 'Always'));
    const deadline = pod.spec?.activeDeadlineSeconds;
    if (!state.deadlineExceeded && typeof deadline === 'number' && !['Unschedulable', 'Succeeded', 'Failed'].includes(eff.state) && Date.now() - state.created >= deadline * 1000) {
      state.deadlineExceeded = true;
      // The kubelet kills the pod's containers: a runtime is stopped (deleting the pod then waits for nothing).
      const runtime = state.runtime;
      state.runtime = undefined;
      void runtime?.stop(0).catch(() => undefined);
    }
    if (state.deadlineExceeded) eff = { state: 'Failed', exitCode: 137, restarts: 0 };
    const now = timestamp();
    const started = timestamp(state.created);
    const name = pod.metadata.name;
    const ns = pod.metadata.namespace;
    const containers: Obj[] = (pod.spec?.containers ?? []).filter(isObj);
    const inits: Obj[] = (pod.spec?.initContainers ?? []).filter(isObj);
    const names = containers.map((c) => c.name);
    const previous: Obj[] = pod.status?.conditions ?? [];
    const cond = (type: string, ok: boolean, reason?: string, message?: string): Obj => {
      const before = previous.find((c) => c.type === type);
      const status = ok ? 'True' : 'False';
      return { type, status, lastProbeTime: null, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
    };
    const containerId = (c: Obj, n = 0): string => `containerd://${hex(`${pod.metadata.uid}/${c.name}/${n}`)}`;
    const imageId = (c: Obj): string => `${String(c.image).replace(/[:@][^/:@]*$/, '')}@sha256:${hex(String(c.image))}`;
    const warnings: PodWarning[] = [];
    const qosClass = qos(containers);
    if (eff.state === 'Unschedulable') {
      const message = eff.message ?? '0/1 nodes are available: 1 Insufficient cpu.';
      warnings.push({ reason: 'FailedScheduling', message, component: 'default-scheduler' });
      return { status: { phase: 'Pending', conditions: [cond('PodScheduled', false, 'Unschedulable', message)], qosClass }, warnings };
    }
    const base: Obj = { hostIP: this.options.nodeAddress, hostIPs: [{ ip: this.options.nodeAddress }], startTime: started, qosClass };
    const running = (c: Obj, ready: boolean): Obj => ({
      name: c.name,
      state: { running: { startedAt: started } },
      lastState: {},
      ready,
      restartCount: 0,
      image: c.image,
      imageID: imageId(c),
      containerID: containerId(c),
      started: true,
    });
    const waiting = (c: Obj, reason: string, message: string | undefined, extra: Obj = {}): Obj => ({
      name: c.name,
      state: { waiting: { reason, ...(message ? { message } : {}) } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: c.image,
      imageID: '',
      started: false,
      ...extra,
    });
    const terminated = (c: Obj, exitCode: number, reason: string): Obj => ({
      exitCode,
      reason,
      ...(eff.message && reason === 'Error' ? { message: eff.message } : {}),
      startedAt: started,
      finishedAt: now,
      containerID: containerId(c),
    });
    const crashing = (c: Obj): Obj => ({
      ...waiting(c, 'CrashLoopBackOff', `back-off 10s restarting failed container=${c.name} pod=${name}_${ns}(${pod.metadata.uid})`),
      lastState: { terminated: terminated(c, eff.exitCode, eff.exitCode === 0 ? 'Completed' : 'Error') },
      restartCount: eff.restarts,
      imageID: imageId(c),
      containerID: containerId(c, eff.restarts),
    });
    const initsDone = inits.map((c) => ({
      name: c.name,
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: started, containerID: containerId(c) } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: c.image,
      imageID: imageId(c),
      containerID: containerId(c),
      started: false,
    }));
    const unready = (list: string[]): string => `containers with unready status: [${list.join(' ')}]`;
    const withIp = { ...base, podIP: state.ip, podIPs: [{ ip: state.ip }] };
    const scheduled = cond('PodScheduled', true);
    let status: Obj;
    switch (eff.state) {
      case 'Running':
      case 'NotReady': {
        const ready = eff.state === 'Running';
        status = {
          phase: 'Running',
          conditions: [
            cond('PodReadyToStartContainers', true),
            cond('Initialized', true),
            ready ? cond('Ready', true) : cond('Ready', false, 'ContainersNotReady', unready(names)),
            ready ? cond('ContainersReady', true) : cond('ContainersReady', false, 'ContainersNotReady', unready(names)),
            scheduled,
          ],
          ...withIp,
          containerStatuses: containers.map((c) => running(c, ready)),
        };
        break;
      }
      case 'CrashLoopBackOff':
        status = {
          phase: 'Running',
          conditions: [
            cond('PodReadyToStartContainers', true),
            cond('Initialized', true),
            cond('Ready', false, 'ContainersNotReady', unready(names)),
            cond('ContainersReady', false, 'ContainersNotReady', unready(names)),
            scheduled,
          ],
          ...withIp,
          containerStatuses: containers.map(crashing),
        };
        for (const c of containers) warnings.push({ reason: 'BackOff', message: `Back-off restarting failed container ${c.name} in pod ${name}_${ns}(${pod.metadata.uid})`, component: 'kubelet' });
        break;
      case 'ImagePullBackOff':
      case 'ErrImagePull':
      case 'RunContainerError':
      case 'Pending': {
        const reason = eff.state === 'Pending' ? 'ContainerCreating' : eff.state;
        const message = (c: Obj): string | undefined => eff.message ?? (reason === 'ContainerCreating' ? undefined : `Back-off pulling image "${c.image}"`);
        status = {
          phase: 'Pending',
          conditions: [
            cond('PodReadyToStartContainers', reason !== 'ContainerCreating'),
            cond('Initialized', true),
            cond('Ready', false, 'ContainersNotReady', unready(names)),
            cond('ContainersReady', false, 'ContainersNotReady', unready(names)),
            scheduled,
          ],
          ...(reason === 'ContainerCreating' ? base : withIp),
          containerStatuses: containers.map((c) => waiting(c, reason, message(c))),
        };
        if (reason === 'ImagePullBackOff' || reason === 'ErrImagePull') {
          for (const c of containers)
            warnings.push({
              reason: reason === 'ErrImagePull' ? 'Failed' : 'BackOff',
              message: reason === 'ErrImagePull' ? `Failed to pull image "${c.image}": ${message(c)}` : `Back-off pulling image "${c.image}"`,
              component: 'kubelet',
            });
        }
        break;
      }
      case 'InitCrashLoopBackOff': {
        const [first, ...rest] = inits.length ? inits : [{ name: 'init', image: containers[0]?.image ?? 'busybox' }];
        const incomplete = [first?.name, ...rest.map((c) => c.name)].join(' ');
        status = {
          phase: 'Pending',
          conditions: [
            cond('PodReadyToStartContainers', true),
            cond('Initialized', false, 'ContainersNotInitialized', `containers with incomplete status: [${incomplete}]`),
            cond('Ready', false, 'ContainersNotReady', unready(names)),
            cond('ContainersReady', false, 'ContainersNotReady', unready(names)),
            scheduled,
          ],
          ...withIp,
          initContainerStatuses: [crashing(first as Obj), ...rest.map((c) => waiting(c, 'PodInitializing', undefined))],
          containerStatuses: containers.map((c) => waiting(c, 'PodInitializing', undefined)),
        };
        warnings.push({ reason: 'BackOff', message: `Back-off restarting failed container ${first?.name} in pod ${name}_${ns}(${pod.metadata.uid})`, component: 'kubelet' });
        break;
      }
      case 'Failed':
      case 'Succeeded': {
        const ok = eff.state === 'Succeeded';
        status = {
          phase: eff.state,
          conditions: [
            cond('PodReadyToStartContainers', false),
            cond('Initialized', true),
            cond('Ready', false, ok ? 'PodCompleted' : 'PodFailed'),
            cond('ContainersReady', false, ok ? 'PodCompleted' : 'PodFailed'),
            scheduled,
          ],
          ...withIp,
          containerStatuses: containers.map((c) => ({
            name: c.name,
            state: { terminated: terminated(c, eff.exitCode, ok ? 'Completed' : 'Error') },
            lastState: {},
            ready: false,
            restartCount: 0,
            image: c.image,
            imageID: imageId(c),
            containerID: containerId(c),
            started: false,
          })),
        };
        break;
      }
    }
    if (inits.length && eff.state !== 'InitCrashLoopBackOff' && eff.state !== 'Pending') status.initContainerStatuses = initsDone;
    if (state.deadlineExceeded) {
      const message = 'Pod was active on the node longer than the specified deadline';
      Object.assign(status, { reason: 'DeadlineExceeded', message });
      warnings.push({ reason: 'DeadlineExceeded', message, component: 'kubelet' });
    }
    return { status, nodeName: 'fake-node', warnings };
  }

  /** `GET …/pods/{name}/log`: the runtime's or the script's logs, or the real server's 400 when there are none to give. */
  async logs(pod: Obj, query: Record<string, string>): Promise<string> {
    const name = pod.metadata.name;
    const containers: string[] = (pod.spec?.containers ?? []).map((c: Obj) => c.name);
    const inits: string[] = (pod.spec?.initContainers ?? []).map((c: Obj) => c.name);
    if (!query.container && containers.length > 1)
      throw new KubeStatusError(
        400,
        'BadRequest',
        `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]${inits.length ? ` or one of the init containers: [${inits.join(' ')}]` : ''}`,
      );
    const container = query.container ?? containers[0] ?? '';
    if (![...containers, ...inits].includes(container)) throw new KubeStatusError(400, 'BadRequest', `container ${container} is not valid for pod ${name}`);
    if (!pod.spec?.nodeName) throw new KubeStatusError(400, 'BadRequest', `pod ${name} does not have a host assigned`);
    const statuses: Obj[] = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
    const status = statuses.find((s) => s.name === container);
    const waitingReason = status?.state?.waiting?.reason;
    if (status && waitingReason && waitingReason !== 'CrashLoopBackOff') {
      const why = waitingReason === 'ImagePullBackOff' || waitingReason === 'ErrImagePull' ? 'trying and failing to pull image' : waitingReason;
      throw new KubeStatusError(400, 'BadRequest', `container "${container}" in pod "${name}" is waiting to start: ${why}`);
    }
    if (query.previous === 'true' && !(status?.restartCount > 0)) throw new KubeStatusError(400, 'BadRequest', `previous terminated container "${container}" in pod "${name}" not found`);
    const state = this.pods.get(pod.metadata.uid);
    let text = state?.runtime ? await state.runtime.logs() : (state?.script.logs ?? '');
    const tail = query.tailLines === undefined ? undefined : Number(query.tailLines);
    if (tail !== undefined && tail >= 0) {
      const lines = text.split('\n');
      const ended = text.endsWith('\n');
      if (ended) lines.pop();
      text = lines.slice(Math.max(0, lines.length - tail)).join('\n') + (ended && tail > 0 ? '\n' : '');
    }
    return text;
  }

  /** Whether the pod has a warning of this reason reported already (and note it). */
  reportOnce(pod: Obj, reason: string): boolean {
    const state = this.pods.get(pod.metadata.uid);
    if (!state || state.reported.has(reason)) return false;
    state.reported.add(reason);
    return true;
  }
}

/** A pod's QoS class from its containers' requests and limits. */
function qos(containers: Obj[]): string {
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const requests = c.resources?.requests ?? {};
    const limits = c.resources?.limits ?? {};
    if (Object.keys(requests).length || Object.keys(limits).length) any = true;
    for (const r of ['cpu', 'memory']) if (limits[r] === undefined || (requests[r] !== undefined && requests[r] !== limits[r])) guaranteed = false;
  }
  return (
    guaranteed ? 'Guaranteed'
    : any ? 'Burstable'
    : 'BestEffort'
  );
}
