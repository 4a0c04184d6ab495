/**
 * `svc start <entry> --scale` against a cluster: check the cluster answers and
 * the ingress node port is free (nothing is created otherwise), read back the
 * credentials a first deploy made, apply the plan, follow the app's rollout to
 * its end (rolling back a failed one), probe the app through the ingress, and
 * say where it is served.
 */
import { lookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { buildManifests } from '../manifests/index.ts';
import { conditionOf, type DeploySpec, type Json, type K8sObject } from '../spec.ts';
import { assertValid } from '../validate/index.ts';
import { adoptCredentials, applyObjects, provisionedOnce, type ApplyReport } from './apply.ts';
import { ClusterError, KubeApiError, nodeAddress, poll, reachCluster, type Kube } from './kube.ts';
import { awaitRollout, revisionOf, rollback, type RolloutOutcome } from './rollout.ts';
import { readStatus } from './observe.ts';
import { carryTls, dnsRecord, enableTls, liveTls } from './tls.ts';

export interface DeployResult {
  url: string;
  apply: ApplyReport;
  rollout: RolloutOutcome;
  /** ms: checks before anything is created, the apply, the rollout, the ingress probe. */
  timings: { preflight: number; apply: number; rollout: number; probe: number };
}

/**
 * The Service (other than this app's own proxy) holding `nodePort`, or undefined. A user who may not list Services
 * cluster-wide gets undefined and a warning: the API server refuses a taken port anyway (422).
 */
export async function nodePortHolder(kube: Kube, spec: DeploySpec, warn: (line: string) => void): Promise<string | undefined> {
  let services: K8sObject[];
  try {
    services = await kube.list('v1', 'Service');
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 403) {
      warn(`cannot list the cluster's Services to check node port ${spec.nodePort} is free (403); the API server will refuse it if it is taken`);
      return undefined;
    }
    throw error;
  }
  for (const s of services) {
    const ports = ((s.spec as Json | undefined)?.ports as { nodePort?: number }[] | undefined) ?? [];
    if (!ports.some((p) => p.nodePort === spec.nodePort)) continue;
    if (s.metadata.namespace === spec.namespace && s.metadata.name === `${spec.app}-ingress`) continue;
    return `${s.metadata.namespace}/${s.metadata.name}`;
  }
  return undefined;
}

/** The address of the node running a ready ingress proxy pod (the node port answers there: externalTrafficPolicy Local), else any node's. */
async function ingressAddress(kube: Kube, spec: DeploySpec): Promise<string | undefined> {
  const pods = await kube.list('v1', 'Pod', spec.namespace, `app.kubernetes.io/name=${spec.app},app.kubernetes.io/component=ingress`).catch(() => [] as K8sObject[]);
  const ready = pods.find((p) => conditionOf(p, 'Ready')?.status === 'True');
  const hostIP = (ready?.status as Json | undefined)?.hostIP as string | undefined;
  return hostIP ?? (await nodeAddress(kube));
}

/** Where the app is reached from outside and how to probe it: the URL to print, the URL to request and its Host header. */
async function ingressTarget(kube: Kube, spec: DeploySpec): Promise<{ url: string; probe?: string; host?: string; note?: string }> {
  const path = spec.probes.readinessPath;
  if (spec.ingress.className !== '') {
    if (spec.ingress.domain === '') return { url: `(through the cluster's ${spec.ingress.className} controller)`, note: `no domain: svc cannot know the address of the cluster's ${spec.ingress.className} controller, so the app was not probed through it` };
    const resolves = await lookup(spec.ingress.domain).then(
      () => true,
      () => false,
    );
    if (!resolves) return { url: `http://${spec.ingress.domain}/`, note: `${spec.ingress.domain} does not resolve yet, so the app was not probed through the ${spec.ingress.className} controller` };
    return { url: `http://${spec.ingress.domain}/`, probe: `http://${spec.ingress.domain}${path}` };
  }
  const address = await ingressAddress(kube, spec);
  if (!address) return { url: `http://<node address>:${spec.nodePort}/`, note: 'the cluster reports no node address: the app was not probed through the ingress' };
  const hostPart = address.includes(':') ? `[${address}]` : address;
  const url = spec.ingress.domain !== '' ? `http://${spec.ingress.domain}:${spec.nodePort}/` : `http://${hostPart}:${spec.nodePort}/`;
  return { url, probe: `http://${hostPart}:${spec.nodePort}${path}`, host: spec.ingress.domain || undefined };
}

/** One GET with an explicit Host header (fetch would replace it): the status, or the error. */
function getOnce(target: string, host: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(target);
    const req = httpRequest({ hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || 80, path: `${url.pathname}${url.search}`, method: 'GET', headers: host ? { host } : {} }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** GET the health path through the ingress until it answers 2xx (true) or `timeoutMs` passes (the last error). */
async function probe(target: string, host: string | undefined, timeoutMs: number): Promise<true | string> {
  let last = '';
  const answered = await poll(async () => {
    try {
      const status = await getOnce(target, host);
      if (status >= 200 && status < 300) return true;
      last = `${status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    return undefined;
  }, timeoutMs, 500);
  return answered ?? last;
}

/**
 * Check, before anything is created, that the cluster answers and the ingress node port is free.
 *
 * @example
 * await preflight(kube, spec, warn); // throws ClusterError SVC_ERR_CLUSTER_UNREACHABLE / SVC_ERR_NODE_PORT_TAKEN
 */
export async function preflight(kube: Kube, spec: DeploySpec, warn: (line: string) => void): Promise<void> {
  await reachCluster(kube);
  if (spec.ingress.className === '') {
    const holder = await nodePortHolder(kube, spec, warn);
    if (holder) throw new ClusterError('SVC_ERR_NODE_PORT_TAKEN', `node port ${spec.nodePort} is used by ${holder}: choose another [scale.orchestrator] ingress_node_port (SVC_SCALE_INGRESS_NODE_PORT); nothing was created`);
  }
}

/**
 * Deploy: preflight, credentials read back, apply, rollout (rolled back on failure), ingress probe, TLS when asked.
 * The objects are built here, after the credentials are read back: `build(spec)` is buildManifests unless a test
 * gives another.
 *
 * @example
 * const result = await deployToCluster(kube, spec, { log: (l) => process.stderr.write(`svc: ${l}\n`) });
 * console.log(`Deployment complete: ${result.url}`);
 */
export async function deployToCluster(
  kube: Kube,
  spec: DeploySpec,
  options: { log: (line: string) => void; enableTls?: boolean; probeTimeoutMs?: number; tlsTimeoutMs?: number; build?: (spec: DeploySpec) => K8sObject[] },
): Promise<DeployResult> {
  const log = options.log;
  const t0 = Date.now();
  await preflight(kube, spec, (w) => log(`warning: ${w}`));
  const { adopted, warnings } = await adoptCredentials(kube, spec);
  for (const w of warnings) log(`warning: ${w}`);
  if (adopted.length > 0) log(`credentials read back from the cluster (kept as they are): ${adopted.join(', ')}`);
  else log('first deploy: the databases and their credentials are provisioned now');
  const objects = await carryTls(kube, spec, (options.build ?? buildManifests)(spec));
  assertValid(objects);
  const t1 = Date.now();
  const before = revisionOf(await kube.read('apps/v1', 'Deployment', spec.namespace, spec.app));
  const report = await applyObjects(kube, objects, log, provisionedOnce(spec));
  const t2 = Date.now();
  const appId = `Deployment/${spec.namespace}/${spec.app}`;
  const appChanged = report.created.includes(appId) || report.updated.includes(appId);
  if (report.failed.length > 0) {
    const lines = report.failed.map((f) => `  ${f.object}: ${f.error}`);
    const done = report.created.length + report.updated.length + report.kept.length;
    let message = `${report.failed.length} object${report.failed.length === 1 ? '' : 's'} of the plan could not be applied (${done === 0 ? 'nothing else was' : `the other ${done} were`}; run the deploy again to finish):\n${lines.join('\n')}`;
    // The app's Deployment may already be rolling: follow it, and roll it back if it fails, before saying so.
    if (appChanged) {
      const outcome = await followRollout(kube, spec, before, log);
      message += outcome.ok ? `\nthe app itself rolled out (revision ${outcome.rollout.revision})` : `\n${outcome.message}`;
    }
    throw new ClusterError('SVC_ERR_APPLY', message);
  }
  let following = true;
  // A progress line per component while the app rolls out (the app's own lines come from the rollout).
  const components = followComponents(kube, spec, log, () => following);
  const followed = await followRollout(kube, spec, before, log).finally(() => (following = false));
  await components;
  const t3 = Date.now();
  if (!followed.ok) throw new ClusterError('SVC_ERR_ROLLOUT', followed.message);
  const rollout = followed.rollout;
  log(`app: revision ${rollout.revision} rolled out in ${(rollout.ms / 1000).toFixed(1)} s`);
  const target = await ingressTarget(kube, spec);
  let url = target.url;
  if (target.probe) {
    const answered = await probe(target.probe, target.host, options.probeTimeoutMs ?? 60_000);
    if (answered !== true) {
      throw new ClusterError('SVC_ERR_INGRESS_PROBE', `the app is rolled out, but ${target.probe}${target.host ? ` (Host: ${target.host})` : ''} did not answer 2xx through the ingress: ${answered}`);
    }
    log(`ingress: ${target.probe} answers`);
  } else if (target.note) {
    log(`note: ${target.note}`);
  }
  const t4 = Date.now();
  let bound = await liveTls(kube, spec);
  if (options.enableTls) {
    url = await enableTls(kube, spec, log, { timeoutMs: options.tlsTimeoutMs });
    bound = { domain: spec.ingress.domain, secretName: '' };
  } else if (bound) {
    url = `https://${bound.domain}/`;
    if (spec.ingress.domain !== '' && spec.ingress.domain !== bound.domain) {
      log(`warning: TLS is bound to ${bound.domain} (its certificate's domain), not to domain = ${spec.ingress.domain}: svc start <entry> --scale --enable-tls binds the new one`);
    }
  }
  if (spec.ingress.domain !== '' && !bound) {
    const address = await dnsTarget(kube, spec);
    const record = dnsRecord(spec.ingress.domain, address);
    log(`DNS: ${record ? `create the record ${record}` : `point ${spec.ingress.domain} at the cluster's ingress`}; the app answers at the node's address meanwhile. HTTPS: svc start <entry> --scale --enable-tls`);
  }
  return { url, apply: report, rollout, timings: { preflight: t1 - t0, apply: t2 - t1, rollout: t3 - t2, probe: t4 - t3 } };
}

/**
 * Follow the app's rollout; when it fails, roll back — only a revision this deploy made (a deploy that changed nothing
 * does not roll back the version that was serving).
 */
async function followRollout(kube: Kube, spec: DeploySpec, before: number, log: (line: string) => void): Promise<{ ok: true; rollout: RolloutOutcome } | { ok: false; message: string }> {
  const rollout = await awaitRollout(kube, spec.namespace, spec.app, { onProgress: log });
  if (rollout.ok) return { ok: true, rollout };
  const failure = rollout.failure!;
  const logs = failure.logs?.trim() ? `\nlast lines of ${failure.pod}'s log:\n${failure.logs.trimEnd().split('\n').map((l) => `  | ${l}`).join('\n')}` : '';
  let undo: string;
  if (rollout.revision === before) {
    undo = `not rolled back: this deploy did not change the app's pods (revision ${before} is the one that was running)`;
  } else {
    try {
      const { from, to } = await rollback(kube, spec.namespace, spec.app);
      const back = await awaitRollout(kube, spec.namespace, spec.app, { onProgress: log });
      undo = `rolled back from revision ${from} to revision ${to}${back.ok ? ', which is serving again' : ` (the rollback did not become healthy either: ${back.failure?.reason})`}`;
    } catch (error) {
      undo = error instanceof ClusterError && error.code === 'SVC_ERR_ROLLBACK' ? 'not rolled back: this was the first revision (nothing earlier to return to)' : `the rollback failed: ${(error as Error).message}`;
    }
  }
  return { ok: false, message: `the new version did not become healthy: ${failure.reason}${logs}\n${undo}` };
}

/** Log each component's status (but the app's) when it changes, every 500 ms while `going()`. */
async function followComponents(kube: Kube, spec: DeploySpec, log: (line: string) => void, going: () => boolean): Promise<void> {
  const said = new Map<string, string>();
  while (going()) {
    try {
      for (const row of (await readStatus(kube, spec)).rows) {
        if (row.key === 'app' || row.status === 'Not Deployed') continue;
        const line = `${row.component}: ${row.status} ${row.ready}/${row.desired}${row.reason ? ` (${row.reason})` : ''}`;
        if (said.get(row.key) !== line) log(line);
        said.set(row.key, line);
      }
    } catch {
      // Progress lines only: a failed read is tried again.
    }
    // A snapshot is a dozen LIST calls: once a second is progress enough, and spares the API server during a long rollout.
    for (let i = 0; i < 20 && going(); i++) await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the domain's DNS record points at: the ingress Service's load balancer (address or host name), else a node. */
async function dnsTarget(kube: Kube, spec: DeploySpec): Promise<{ ip?: string; hostname?: string }> {
  if (spec.ingress.className === '') {
    const svc = await kube.read('v1', 'Service', spec.namespace, `${spec.app}-ingress`);
    const lb = (((svc?.status as Json | undefined)?.loadBalancer as Json | undefined)?.ingress as { ip?: string; hostname?: string }[] | undefined)?.[0];
    if (lb?.hostname || lb?.ip) return lb;
  }
  const ip = await nodeAddress(kube);
  return ip ? { ip } : {};
}
