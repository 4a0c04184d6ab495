/**
 * A stand-in for the kubelet, kube-proxy and cluster DNS of the fake Kubernetes API server's one node
 * (fake-kube-api.ts), so `svc start --scale` can be tested end to end on this machine: the pods the fake's controller
 * makes run for real, and an ingress node port reaches them.
 *
 * Decisions:
 * - By the pod's `app.kubernetes.io/component` label: `app` is a real podman container of the pod's image; `docdb`
 *   a real PostgreSQL (startPostgres) with the role, password and database of its env (`POSTGRES_USER`, …, as the
 *   postgres image's entrypoint makes them); `kv` a real Redis with `REDIS_PASSWORD` (and an ACL user for another
 *   `REDIS_USERNAME`); any other pod (the ingress proxy's, dashboards) stays scripted (Running).
 * - Every container shares the host network (`--network host`): the databases are on loopback. So each app pod gets
 *   a port of its own, as a pod gets an address of its own: its container port is remapped to a free one
 *   (`SVC_PORT`, and `--port`/`--host` of its command line), it listens on 127.0.0.1 (`SVC_HOST`,
 *   `SVC_ADVERTISE_HOST`), and probes and the ingress use that port.
 * - The environment is resolved as the kubelet does it: `value` with `$(VAR)` expansion, `secretKeyRef` and
 *   `configMapKeyRef` read from the fake (a Secret's `data` is base64), `fieldRef` (the pod IP is 127.0.0.1),
 *   `envFrom`. Then, standing in for cluster DNS and kube-proxy, a Service's host (`{svc}.{ns}.svc.cluster.local`,
 *   `{svc}.{ns}.svc`, `{svc}.{ns}`, and `{svc}` after `@` or `//` or before `:port`) becomes `127.0.0.1:<port>` of the
 *   real process standing for the pods it selects (the Service's first port when none is written). A bare name is
 *   not rewritten elsewhere: `SVC_CLUSTER_NAME` is the app's name, which is also its Service's.
 * - Init containers are not run: the app's are busybox `until nc -z <host> <port>` waits. An app pod starts only
 *   once every host:port such a wait names has a stand-in that accepts a TCP connection (60 s at most, else the pod
 *   fails to start: RunContainerError).
 * - The security context is kept: `--read-only` (without podman's own tmpfs mounts), `--user`, dropped
 *   capabilities, no-new-privileges; emptyDir volumes are tmpfs mounts; memory and CPU limits become `--memory` and
 *   `--cpus`. Other volume kinds are refused (none of the app's pods has one).
 * - Readiness: the readinessProbe's httpGet, asked no more often than `periodSeconds` after
 *   `initialDelaySeconds`, ready after one success, not ready after `failureThreshold` failures. Liveness is not
 *   probed (a hung container is not restarted).
 * - Deletion as the kubelet does it: the preStop hook (exec through `podman exec`, or httpGet), whose failure is
 *   logged and does not stop the termination (FailedPreStopHook), then `podman stop` with what is left of the grace
 *   period (SIGTERM, then SIGKILL), the exit code and logs kept, then `podman rm`.
 * - The ingress ({@link PodRunner.ingress}) stands in for svc's Traefik on its node port: HTTP and WebSocket proxied to
 *   the Service's ready endpoints as the fake's endpoints controller lists them (a pod being deleted is not among
 *   them), now or — `lagMs` — as they were a moment ago, as Traefik hears of them through a watch; round robin, no
 *   retry; 503 with no endpoint, 502 when the pod fails to answer. Rate limits and the sticky cookie are not played.
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeKubeApi, FakeKubeObject as Obj, PodRuntime } from './fake-kube-api.ts';
import { PODMAN_DIR, type Podman } from './podman.ts';
import { freePort } from './ports.ts';
import { startPostgres, type PostgresServer } from './postgres.ts';
import { startRedis, type RedisServer } from './redis.ts';

const COMPONENT = 'app.kubernetes.io/component';
const LOOPBACK = '127.0.0.1';

/**
 * An app pod's container: where it serves and how it ended.
 *
 * @example
 * const old = pods.containers[0];
 * await api.until(() => old.stopped);
 * t.equal(old.stopped.exitCode, 0);
 */
export interface PodContainer {
  namespace: string;
  pod: string;
  image: string;
  /** podman's id of the container. */
  id: string;
  /** The host port it serves on (its container port, remapped). */
  port: number;
  startedAt: number;
  /** When its readiness probe first passed. */
  readyAt?: number;
  /** When the pod was deleted (its stop began). */
  deletedAt?: number;
  /** Once stopped: the exit code, its whole log, what the preStop hook did, how long the stop took. */
  stopped?: { exitCode: number; logs: string; preStop: string; ms: number };
}

/**
 * A database standing for a pod.
 *
 * @example
 * const docdb = pods.standIns.find((s) => s.kind === 'postgres');
 * await docdb.postgres.query('SELECT 1', [], `postgres://postgres@127.0.0.1:${docdb.port}/${docdb.database}`);
 */
export interface StandIn {
  namespace: string;
  pod: string;
  kind: 'postgres' | 'redis';
  /** The host port; the pod's container port (by name and number) maps to it. */
  port: number;
  postgres?: PostgresServer;
  redis?: RedisServer;
  /** The credentials it was made with (from the pod's env). */
  user: string;
  password: string;
  database?: string;
}

/**
 * The stand-in ingress: a node port proxying to a Service's ready pods.
 *
 * @example
 * const ingress = await pods.ingress('shop', 'shop', 2000);
 * await fetch(`${ingress.url}/healthz/ready`);
 */
export interface PodIngress {
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Requests and WebSocket upgrades proxied, by pod name. */
  served: Map<string, number>;
  /** Answers it made itself: 503 (no ready endpoint) and 502 (the pod did not answer), with why. */
  refused: { status: number; why: string; at: number }[];
  close(): Promise<void>;
}

/**
 * The runner, for `startFakeKubeApi({ runner: pods.runner })`.
 *
 * @example
 * const pods = podRunner(await Podman.open());
 * const api = await startFakeKubeApi({ runner: pods.runner });
 * pods.attach(api);
 * t.teardown(async () => { await api.close(); await pods.close(); });
 * const ingress = await pods.ingress('shop', 'shop'); // [scale.orchestrator] ingress_node_port = ingress.port
 */
export interface PodRunner {
  runner: (pod: Obj) => Promise<PodRuntime> | undefined;
  /** The fake the pods' Secrets, ConfigMaps and Services are read from: before the first pod. */
  attach(api: FakeKubeApi): void;
  /** Every app container started (running or stopped), in order. */
  containers: PodContainer[];
  /** Every database stand-in started. */
  standIns: StandIn[];
  /**
   * An ingress on a free node port (30000–32767) to the ready endpoints of Service `service`; with `lagMs`, it routes
   * by the endpoints as they were that long ago, as a proxy that watches the API server hears of a change late.
   */
  ingress(namespace: string, service: string, lagMs?: number): Promise<PodIngress>;
  /** Stop and remove everything it started (idempotent; also on process exit for the containers). */
  close(): Promise<void>;
}

/** A pod's runtime entry: its host ports by container port name and number. */
interface Running {
  namespace: string;
  pod: string;
  labels: Record<string, string>;
  ports: Map<string | number, number>;
  stopping: boolean;
}

function base64(text: string): string {
  return Buffer.from(text, 'base64').toString('utf8');
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `$(VAR)` of a command, argument or env value expanded from `env` (`$$(` stays a literal `$(`), as the kubelet does. */
function expand(text: string, env: Map<string, string>): string {
  return text.replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name?: string) => (name === undefined ? '$(' : (env.get(name) ?? all)));
}

/** Bytes of a memory quantity, cores of a CPU one (the suffixes a pod spec uses). */
function quantity(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(value);
  if (!m) throw new Error(`the pod runner cannot read the quantity ${JSON.stringify(value)}`);
  const scale: Record<string, number> = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
  return Number(m[1]) * (m[2] ? (scale[m[2]] as number) : 1);
}

/** Whether a TCP connection to the port is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s: Socket = connect(port, LOOPBACK);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.setTimeout(1000, () => (s.destroy(), resolve(false)));
  });
}

/**
 * @example
 * const pods = podRunner(await Podman.open());
 */
export function podRunner(podman: Podman): PodRunner {
  const run = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  let api: FakeKubeApi | undefined;
  const running = new Map<string, Running>();
  const containers: PodContainer[] = [];
  const standIns: StandIn[] = [];
  const teardowns: (() => unknown)[] = [];
  const ingresses: PodIngress[] = [];
  // Containers outlive a test process that dies: remove them on exit, whatever the way out (synchronous).
  const onExit = (): void => {
    const ids = containers.filter((c) => !c.stopped).map((c) => c.id);
    if (ids.length)
      spawnSync(podman.argv[0] as string, [...podman.argv.slice(1), 'rm', '-f', '--time', '0', ...ids], {
        stdio: 'ignore',
        env: { ...process.env, CONTAINERS_CONF: join(PODMAN_DIR, 'containers.conf') },
      });
  };
  process.once('exit', onExit);
  const fake = (): FakeKubeApi => {
    if (!api) throw new Error('pod runner: attach(api) before the first pod');
    return api;
  };

  /** The Secret's or ConfigMap's value of a key (a Secret's data is base64). */
  const keyOf = (ns: string, kind: 'Secret' | 'ConfigMap', name: string, key: string, optional: boolean): string | undefined => {
    const o = fake().get('v1', kind, ns, name);
    const raw = o?.data?.[key];
    if (raw === undefined) {
      if (optional) return undefined;
      throw new Error(`${kind} ${ns}/${name} has no key ${key} (CreateContainerConfigError)`);
    }
    return kind === 'Secret' ? base64(String(raw)) : String(raw);
  };

  /** The container's environment as the kubelet gives it. */
  const resolveEnv = (pod: Obj, c: Obj): Map<string, string> => {
    const ns = pod.metadata.namespace;
    const env = new Map<string, string>();
    for (const from of c.envFrom ?? []) {
      const kind = from.secretRef ? 'Secret' : 'ConfigMap';
      const ref = from.secretRef ?? from.configMapRef;
      const o = fake().get('v1', kind, ns, ref.name);
      if (!o && !ref.optional) throw new Error(`${kind} ${ns}/${ref.name} not found (CreateContainerConfigError)`);
      for (const [k, v] of Object.entries(o?.data ?? {})) env.set(`${from.prefix ?? ''}${k}`, kind === 'Secret' ? base64(String(v)) : String(v));
    }
    for (const e of c.env ?? []) {
      const v = e.valueFrom;
      let value: string | undefined;
      if (!v) value = expand(String(e.value ?? ''), env);
      else if (v.secretKeyRef) value = keyOf(ns, 'Secret', v.secretKeyRef.name, v.secretKeyRef.key, v.secretKeyRef.optional === true);
      else if (v.configMapKeyRef) value = keyOf(ns, 'ConfigMap', v.configMapKeyRef.name, v.configMapKeyRef.key, v.configMapKeyRef.optional === true);
      else if (v.fieldRef) {
        const path = String(v.fieldRef.fieldPath);
        const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
        const fields: Record<string, string> = {
          'status.podIP': LOOPBACK,
          'status.hostIP': LOOPBACK,
          'metadata.name': pod.metadata.name,
          'metadata.namespace': ns,
          'metadata.uid': pod.metadata.uid,
          'spec.nodeName': 'fake-node',
        };
        value = label ? pod.metadata[label[1] as string]?.[label[2] as string] : fields[path];
        if (value === undefined) throw new Error(`the pod runner does not give fieldRef ${path}`);
      } else throw new Error(`the pod runner does not resolve env ${e.name}: ${JSON.stringify(v)}`);
      if (value !== undefined) env.set(e.name, value);
    }
    return env;
  };

  /** The host port standing for `service`:`port` (its first port when undefined): the stand-in of a pod it selects. */
  const serviceTarget = (ns: string, service: string, port: number | undefined): number | undefined => {
    const svc = fake().get('v1', 'Service', ns, service);
    const selector: Record<string, string> = svc?.spec?.selector ?? {};
    if (!svc || !Object.keys(selector).length) return undefined;
    const sp = ((svc.spec.ports ?? []) as Obj[]).find((p) => port === undefined || p.port === port);
    if (!sp) return undefined;
    const target = sp.targetPort ?? sp.port;
    for (const r of running.values()) {
      if (r.namespace !== ns || r.stopping || !Object.entries(selector).every(([k, v]) => r.labels[k] === v)) continue;
      const hostPort = r.ports.get(target);
      if (hostPort !== undefined) return hostPort;
    }
    return undefined;
  };

  /** Service hosts in a value made `127.0.0.1:<port>` (cluster DNS and kube-proxy on one machine). */
  const rewrite = (ns: string, value: string): string => {
    const services = fake()
      .list('v1', 'Service', ns)
      .map((s) => String(s.metadata.name))
      .sort((a, b) => b.length - a.length);
    let out = value;
    for (const name of services) {
      const fqdn = new RegExp(`(?<![A-Za-z0-9.-])${escape(name)}\\.${escape(ns)}(?:\\.svc(?:\\.cluster\\.local)?)?(?::(\\d+))?(?![A-Za-z0-9-]|\\.[A-Za-z0-9])`, 'g');
      const bare = new RegExp(`(?:(?<=@|//)${escape(name)}(?::(\\d+))?|(?<![A-Za-z0-9.-])${escape(name)}:(\\d+))(?![A-Za-z0-9.-])`, 'g');
      const to = (all: string, a?: string, b?: string): string => {
        const p = a ?? b;
        const hostPort = serviceTarget(ns, name, p === undefined ? undefined : Number(p));
        return hostPort === undefined ? all : `${LOOPBACK}:${hostPort}`;
      };
      out = out.replace(fqdn, (all, a?: string) => to(all, a)).replace(bare, (all, a?: string, b?: string) => to(all, a, b));
    }
    return out;
  };

  /** What the init containers' `nc -z host port` waits wait for, each made ready: until their stand-ins accept connections. */
  const initWaits = async (pod: Obj): Promise<void> => {
    const ns = pod.metadata.namespace;
    const waits = ((pod.spec.initContainers ?? []) as Obj[]).flatMap((c) => {
      const m = /nc -z (?:-w \d+ )?(\S+) (\d+)/.exec([...(c.command ?? []), ...(c.args ?? [])].join(' '));
      return m ? [`${m[1]}:${m[2]}`] : [];
    });
    const until = Date.now() + 60_000;
    for (const wait of waits) {
      for (;;) {
        const m = new RegExp(`^${escape(LOOPBACK)}:(\\d+)$`).exec(rewrite(ns, wait));
        if (m && (await accepts(Number(m[1])))) break;
        if (Date.now() > until) throw new Error(`init: ${wait} did not answer within 60 s (no stand-in for it)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  const standIn = async (pod: Obj, kind: 'postgres' | 'redis'): Promise<PodRuntime> => {
    const c = pod.spec.containers[0] as Obj;
    const env = resolveEnv(pod, c);
    const own = { teardown: (fn: () => unknown) => teardowns.push(fn) };
    let entry: StandIn;
    let stop: () => Promise<void>;
    if (kind === 'postgres') {
      const user = env.get('POSTGRES_USER') ?? 'postgres';
      const password = env.get('POSTGRES_PASSWORD') ?? '';
      const database = env.get('POSTGRES_DB') ?? user;
      const pg = await startPostgres(own);
      const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;
      if (user !== 'postgres') await pg.query(`CREATE ROLE ${ident(user)} LOGIN SUPERUSER PASSWORD '${password.replace(/'/g, "''")}'`);
      if (database !== 'postgres') await pg.query(`CREATE DATABASE ${ident(database)} OWNER ${ident(user)}`);
      entry = { namespace: pod.metadata.namespace, pod: pod.metadata.name, kind, port: pg.port, postgres: pg, user, password, database };
      stop = () => pg.stop();
    } else {
      const user = env.get('REDIS_USERNAME') ?? 'default';
      const password = env.get('REDIS_PASSWORD') ?? '';
      const redis = await startRedis(own, password ? { password } : {});
      if (user !== 'default') {
        const client = redis.client();
        await client.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all');
        client.disconnect();
      }
      entry = { namespace: pod.metadata.namespace, pod: pod.metadata.name, kind, port: redis.port, redis, user, password };
      stop = () => redis.stop();
    }
    standIns.push(entry);
    const ports = new Map<string | number, number>();
    for (const p of (c.ports ?? []) as Obj[]) {
      ports.set(p.containerPort, entry.port);
      if (p.name) ports.set(p.name, entry.port);
    }
    const r: Running = { namespace: pod.metadata.namespace, pod: pod.metadata.name, labels: pod.metadata.labels ?? {}, ports, stopping: false };
    running.set(pod.metadata.uid, r);
    return {
      ready: async () => !r.stopping,
      exited: () => undefined,
      logs: async () => `${kind} standing in for pod ${entry.pod} on ${LOOPBACK}:${entry.port}\n`,
      stop: async () => {
        r.stopping = true;
        running.delete(pod.metadata.uid);
        await stop();
      },
    };
  };

  const appContainer = async (pod: Obj): Promise<PodRuntime> => {
    const ns = pod.metadata.namespace;
    const spec = pod.spec;
    const c = spec.containers[0] as Obj;
    const image = String(c.image);
    const port = await freePort();
    const containerPort = Number((c.ports ?? [])[0]?.containerPort ?? 8000);
    await initWaits(pod);
    const env = resolveEnv(pod, c);
    for (const [k, v] of env) env.set(k, rewrite(ns, v));
    env.set('SVC_PORT', String(port));
    env.set('SVC_HOST', LOOPBACK);
    env.set('SVC_ADVERTISE_HOST', LOOPBACK);
    // The command line as the kubelet makes it from command/args and the image's entrypoint/cmd.
    const config = JSON.parse(await podman.ok(['image', 'inspect', '--format', '{{json .Config}}', image])) as { Entrypoint?: string[] | null; Cmd?: string[] | null };
    const entrypoint: string[] = c.command ?? config.Entrypoint ?? [];
    const args: string[] = c.args ?? (c.command ? [] : (config.Cmd ?? []));
    const argv = [...entrypoint, ...args].map((a) => expand(String(a), env));
    for (let i = 0; i < argv.length; i++) {
      if (argv[i] === '--port' && i + 1 < argv.length) argv[i + 1] = String(port);
      else if (argv[i] === '--host' && i + 1 < argv.length) argv[i + 1] = LOOPBACK;
      else if (/^--port=/.test(argv[i] as string)) argv[i] = `--port=${port}`;
      else if (/^--host=/.test(argv[i] as string)) argv[i] = `--host=${LOOPBACK}`;
    }
    if (!argv.length) throw new Error(`no command for ${image}`);
    const sc = { ...spec.securityContext, ...c.securityContext } as Obj;
    const flags: string[] = ['--network', 'host', '--label', `svc-pod-runner=${run}`, '--name', `svc-pod-${run}-${pod.metadata.name}`.slice(0, 120)];
    if (sc.readOnlyRootFilesystem) flags.push('--read-only', '--read-only-tmpfs=false');
    if (sc.runAsUser !== undefined) flags.push('--user', `${sc.runAsUser}${sc.runAsGroup !== undefined ? `:${sc.runAsGroup}` : ''}`);
    for (const cap of sc.capabilities?.drop ?? []) flags.push('--cap-drop', String(cap).toLowerCase());
    for (const cap of sc.capabilities?.add ?? []) flags.push('--cap-add', String(cap).toLowerCase());
    if (sc.allowPrivilegeEscalation === false) flags.push('--security-opt', 'no-new-privileges');
    const volumes = new Map<string, Obj>(((spec.volumes ?? []) as Obj[]).map((v) => [v.name, v]));
    for (const m of (c.volumeMounts ?? []) as Obj[]) {
      const v = volumes.get(m.name);
      if (!v?.emptyDir) throw new Error(`the pod runner mounts emptyDir volumes only, not ${m.name} (${JSON.stringify(v)})`);
      flags.push('--tmpfs', `${m.mountPath}:rw,nosuid,nodev,mode=1777${v.emptyDir.sizeLimit ? `,size=${Math.floor(quantity(v.emptyDir.sizeLimit))}` : ''}`);
    }
    const limits = c.resources?.limits ?? {};
    if (limits.memory) flags.push('--memory', String(Math.floor(quantity(limits.memory))));
    if (limits.cpu) flags.push('--cpus', String(quantity(limits.cpu)));
    if (c.workingDir) flags.push('--workdir', c.workingDir);
    // The environment through a file of this process's own (credentials stay out of argv), removed once podman read it.
    const dir = mkdtempSync(join(tmpdir(), 'svc-pod-env-'));
    const envFile = join(dir, 'env');
    for (const [k, v] of env) if (/[\r\n]/.test(v)) throw new Error(`env ${k}: a value with a line break cannot go through an env file`);
    writeFileSync(envFile, [...env].map(([k, v]) => `${k}=${v}\n`).join(''), { mode: 0o600 });
    let id: string;
    try {
      id = (await podman.ok(['run', '-d', ...flags, '--env-file', envFile, '--entrypoint', JSON.stringify(argv.slice(0, 1)), image, ...argv.slice(1)], { timeoutMs: 60_000 })).trim();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const record: PodContainer = { namespace: ns, pod: pod.metadata.name, image, id, port, startedAt: Date.now() };
    containers.push(record);
    const r: Running = { namespace: ns, pod: pod.metadata.name, labels: pod.metadata.labels ?? {}, ports: new Map<string | number, number>([[containerPort, port]]), stopping: false };
    for (const p of (c.ports ?? []) as Obj[]) if (p.name) r.ports.set(p.name, port);
    running.set(pod.metadata.uid, r);
    let exitCode: number | undefined;
    void podman.run(['wait', id]).then((w) => {
      const code = Number(w.stdout.trim());
      if (w.code === 0 && Number.isInteger(code) && !r.stopping) exitCode = code;
    });
    // Readiness: httpGet as the probe says, no more often than its period (the kubelet's poll asks every tick).
    const probe = c.readinessProbe?.httpGet as Obj | undefined;
    const probePort = probe ? (typeof probe.port === 'number' ? (r.ports.get(probe.port) ?? probe.port) : r.ports.get(probe.port)) : undefined;
    const delayMs = Number(c.readinessProbe?.initialDelaySeconds ?? 0) * 1000;
    const periodMs = Number(c.readinessProbe?.periodSeconds ?? 10) * 1000;
    const timeoutMs = Number(c.readinessProbe?.timeoutSeconds ?? 1) * 1000;
    const failureThreshold = Number(c.readinessProbe?.failureThreshold ?? 3);
    let ready = !probe;
    let failures = 0;
    let lastProbe = 0;
    const check = async (): Promise<boolean> => {
      if (!probe || r.stopping || exitCode !== undefined) return ready && !r.stopping && exitCode === undefined;
      const now = Date.now();
      if (now < record.startedAt + delayMs || now - lastProbe < periodMs) return ready;
      lastProbe = now;
      const answer = await fetch(`http://${LOOPBACK}:${probePort}${probe.path ?? '/'}`, { signal: AbortSignal.timeout(timeoutMs) }).catch(() => undefined);
      await answer?.arrayBuffer().catch(() => undefined);
      if (answer && answer.status >= 200 && answer.status < 400) {
        failures = 0;
        ready = true;
        record.readyAt ??= Date.now();
      } else if (++failures >= failureThreshold || !ready) {
        ready = false;
      }
      return ready;
    };
    let stopping: Promise<void> | undefined;
    return {
      ready: check,
      exited: () => exitCode,
      logs: async () => {
        const l = await podman.run(['logs', id]);
        return record.stopped?.logs ?? l.stdout + l.stderr;
      },
      stop: (grace) => {
        stopping ??= (async () => {
          r.stopping = true;
          record.deletedAt = Date.now();
          const deadline = Date.now() + grace * 1000;
          let preStop = 'none';
          const hook = c.lifecycle?.preStop as Obj | undefined;
          // A forced deletion (grace 0, as the fake's close does it) runs no hook.
          if (grace <= 0) preStop = 'skipped (grace 0)';
          else if (hook?.exec) {
            const ran = await podman.run(['exec', id, ...hook.exec.command], { timeoutMs: Math.max(0, deadline - Date.now()) });
            preStop =
              ran.code === 0
                ? `exec ${JSON.stringify(hook.exec.command)}: done`
                : `FailedPreStopHook: exec ${JSON.stringify(hook.exec.command)} exited with ${ran.code}: ${(ran.stderr || ran.stdout).trim()}`;
          } else if (hook?.httpGet) {
            const hp = typeof hook.httpGet.port === 'number' ? (r.ports.get(hook.httpGet.port) ?? hook.httpGet.port) : r.ports.get(hook.httpGet.port);
            const answer = await fetch(`http://${LOOPBACK}:${hp}${hook.httpGet.path ?? '/'}`, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) }).catch((e: Error) => e);
            preStop = answer instanceof Error ? `FailedPreStopHook: httpGet: ${answer.message}` : `httpGet ${answer.status}`;
          }
          const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
          await podman.run(['stop', '--time', String(left), id], { timeoutMs: (left + 30) * 1000 });
          const code = Number((await podman.run(['inspect', '--format', '{{.State.ExitCode}}', id])).stdout.trim());
          const l = await podman.run(['logs', id]);
          record.stopped = { exitCode: code, logs: l.stdout + l.stderr, preStop, ms: Date.now() - (record.deletedAt as number) };
          await podman.run(['rm', '-f', '--time', '0', id]);
          running.delete(pod.metadata.uid);
        })();
        return stopping;
      },
    };
  };

  const ingress = async (namespace: string, service: string, lagMs = 0): Promise<PodIngress> => {
    const served = new Map<string, number>();
    const refused: PodIngress['refused'] = [];
    const agent = new Agent({ keepAlive: true });
    const sockets = new Set<Socket>();
    let turn = 0;
    /** The Service's ready endpoints as the fake's endpoints controller lists them now, with their host ports. */
    const endpoints = (): { pod: string; port: number }[] => {
      const targets: { pod: string; port: number }[] = [];
      for (const subset of (fake().get('v1', 'Endpoints', namespace, service)?.subsets ?? []) as Obj[]) {
        const epPort = Number((subset.ports ?? [])[0]?.port);
        for (const a of (subset.addresses ?? []) as Obj[]) {
          const r = [...running.values()].find((x) => x.namespace === namespace && x.pod === a.targetRef?.name);
          const hostPort = r?.ports.get(epPort);
          if (hostPort !== undefined) targets.push({ pod: r!.pod, port: hostPort });
        }
      }
      return targets;
    };
    // With a lag, the proxy routes by the endpoints as they were `lagMs` ago (a proxy watching the API hears late).
    const history: { at: number; targets: { pod: string; port: number }[] }[] = [];
    const sampler = lagMs > 0 ? setInterval(() => history.push({ at: Date.now(), targets: endpoints() }), 20) : undefined;
    sampler?.unref();
    const view = (): { pod: string; port: number }[] => {
      if (!lagMs) return endpoints();
      const seen = Date.now() - lagMs;
      while (history.length > 1 && (history[1] as { at: number }).at <= seen) history.shift();
      return history[0] && history[0].at <= seen ? history[0].targets : [];
    };
    /** The next endpoint, round robin. */
    const pick = (): { pod: string; port: number } | undefined => {
      const targets = view();
      return targets.length ? targets[turn++ % targets.length] : undefined;
    };
    const forwarded = (req: IncomingMessage): Record<string, string> => ({
      'x-forwarded-for': req.socket.remoteAddress ?? LOOPBACK,
      'x-forwarded-host': req.headers.host ?? '',
      'x-forwarded-proto': 'http',
    });
    const server: Server = createServer((req, res) => {
      const target = pick();
      if (!target) {
        refused.push({ status: 503, why: 'no ready endpoint', at: Date.now() });
        res.writeHead(503, { 'content-type': 'text/plain' }).end('no available server');
        return;
      }
      served.set(target.pod, (served.get(target.pod) ?? 0) + 1);
      const up = request({ host: LOOPBACK, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, ...forwarded(req) }, agent }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', (error) => {
        refused.push({ status: 502, why: `${target.pod}: ${error.message}`, at: Date.now() });
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
        else res.destroy();
      });
      req.pipe(up);
    });
    server.on('upgrade', (req: IncomingMessage, client: Socket, head: Buffer) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      const target = pick();
      if (!target) {
        refused.push({ status: 503, why: 'no ready endpoint (upgrade)', at: Date.now() });
        client.end('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        return;
      }
      served.set(target.pod, (served.get(target.pod) ?? 0) + 1);
      // Once connected, the relay is the pod's: an error as the pod ends it (its drain closes WebSockets) is a close, not a refusal.
      let connected = false;
      const upstream = connect(target.port, LOOPBACK, () => {
        connected = true;
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        for (const [k, v] of Object.entries(forwarded(req))) lines.push(`${k}: ${v}`);
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      sockets.add(upstream);
      upstream.on('close', () => (sockets.delete(upstream), client.destroy()));
      upstream.on('error', (error) => {
        if (!connected) refused.push({ status: 502, why: `${target.pod} (upgrade): ${error.message}`, at: Date.now() });
        client.destroy();
      });
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
    });
    for (let attempt = 0; ; attempt++) {
      server.listen(30000 + Math.floor(Math.random() * 2768), LOOPBACK);
      const outcome = await Promise.race([once(server, 'listening').then(() => 'ok'), once(server, 'error').then(([e]) => e as Error)]);
      if (outcome === 'ok') break;
      if (attempt > 50) throw outcome;
    }
    const port = (server.address() as { port: number }).port;
    let closed: Promise<void> | undefined;
    const handle: PodIngress = {
      port,
      url: `http://${LOOPBACK}:${port}`,
      served,
      refused,
      close: () => {
        closed ??= (async () => {
          clearInterval(sampler);
          for (const s of sockets) s.destroy();
          agent.destroy();
          server.closeAllConnections();
          await new Promise((r) => server.close(r));
        })();
        return closed;
      },
    };
    ingresses.push(handle);
    return handle;
  };

  let closing: Promise<void> | undefined;
  return {
    runner: (pod) => {
      const component = pod.metadata?.labels?.[COMPONENT];
      if (component === 'app') return appContainer(pod);
      if (component === 'docdb' && pod.spec?.containers?.[0]?.name === 'postgres') return standIn(pod, 'postgres');
      if (component === 'kv') return standIn(pod, 'redis');
      return undefined;
    },
    attach: (a) => {
      api = a;
    },
    containers,
    standIns,
    ingress,
    close: () => {
      closing ??= (async () => {
        await Promise.allSettled(ingresses.map((i) => i.close()));
        const left = containers.filter((c) => !c.stopped).map((c) => c.id);
        if (left.length) await podman.run(['rm', '-f', '--time', '0', ...left]);
        const strays = (await podman.run(['ps', '-aq', '--filter', `label=svc-pod-runner=${run}`])).stdout.split('\n').filter(Boolean);
        if (strays.length) await podman.run(['rm', '-f', '--time', '0', ...strays]);
        for (const fn of teardowns.reverse()) await Promise.resolve(fn()).catch(() => undefined);
        process.removeListener('exit', onExit);
      })();
      return closing;
    },
  };
}
