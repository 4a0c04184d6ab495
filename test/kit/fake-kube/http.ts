/**
 * The HTTP face of the fake: authentication, discovery, routing of `/api/v1/…` and `/apis/{group}/{version}/…`
 * to the registry (collections, objects, `status`, `scale` and `log` subresources), watches as chunked
 * newline-delimited JSON, injected failures, and the record of every request. Upgrades (`upgrade`) serve the
 * pods' `exec` subresource over WebSocket (fake-kube/exec.ts runs the command).
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PodExec } from './exec.ts';
import { parse as parseYaml } from 'yaml';
import type { Kubelet } from './kubelet.ts';
import type { Answer, Query, Registry } from './registry.ts';
import { typeKey, type Resource } from './resources.ts';
import { project, type Change } from './store.ts';
import { clone, KubeStatusError, reasonOf, type FakeKubeRequest, type Obj } from './types.ts';

/** An injected failure: requests it matches get a Status with its code. */
export interface Failure {
  when: (req: FakeKubeRequest) => boolean;
  status: number;
  message?: string;
}

/** What a request is about, once its path is read. */
type Target =
  | { kind: 'discovery'; body: Obj }
  | { kind: 'collection'; res: Resource; version: string; namespace?: string }
  | { kind: 'object'; res: Resource; version: string; namespace?: string; name: string; sub?: string };

const NOT_FOUND = new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource', {});

/** The HTTP handler. */
export class FakeKubeHttp {
  readonly requests: FakeKubeRequest[] = [];
  readonly failures = new Set<Failure>();
  /** Open watch responses (ended when the server closes). */
  readonly watches = new Set<ServerResponse>();
  address = '';

  constructor(
    private readonly registry: Registry,
    private readonly kubelet: Kubelet,
    private readonly token: string,
    private readonly exec?: PodExec,
  ) {}

  /**
   * node:http's `upgrade` listener: `GET|POST …/pods/{name}/exec` with a WebSocket channel protocol, checked as the
   * API server and the kubelet check it (token, injected failures, the pod, its container running, the command);
   * a refusal is an HTTP answer with a Status, as the real handshake's.
   */
  upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://fake');
    const record: FakeKubeRequest = { method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), contentType: '', body: undefined };
    this.requests.push(record);
    try {
      if (req.headers.authorization !== `Bearer ${this.token}`) throw new KubeStatusError(401, 'Unauthorized', 'Unauthorized');
      for (const f of this.failures) {
        if (f.when(record)) throw new KubeStatusError(f.status, reasonOf(f.status), f.message ?? `the fake API server was told to fail ${record.method} ${record.path}`, {});
      }
      const target = this.route(record.path.replace(/\/+$/, '') || '/');
      if (target.kind !== 'object' || target.res.kind !== 'Pod' || target.sub !== 'exec' || !this.exec)
        throw new KubeStatusError(400, 'BadRequest', `the fake API server upgrades only pods/{name}/exec, not ${record.path}`);
      if (record.method !== 'GET' && record.method !== 'POST') throw new KubeStatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') throw new KubeStatusError(400, 'BadRequest', 'the fake API server upgrades to websocket only (no SPDY)');
      const pod = this.registry.read(target.res, target.namespace, target.name);
      const command = url.searchParams.getAll('command');
      const container = this.execContainer(pod, url.searchParams.get('container') ?? undefined);
      if (!command.length) throw new KubeStatusError(400, 'BadRequest', 'you must specify at least 1 command');
      const protocol = PodExec.choose(req);
      if (!protocol) throw new KubeStatusError(400, 'BadRequest', `the fake API server speaks ${['v5.channel.k8s.io', 'v4.channel.k8s.io'].join(' and ')} only`);
      record.exec = { command, container, protocol };
      const truthy = (v: string | null): boolean => v === 'true' || v === '1';
      this.exec.accept(req, socket, head, pod, container, command, truthy(url.searchParams.get('stdin')));
    } catch (error) {
      const e = error instanceof KubeStatusError ? error : new KubeStatusError(500, 'InternalError', `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`);
      const body = JSON.stringify(e.status());
      socket.end(
        `HTTP/1.1 ${e.code} ${STATUS_CODES[e.code] ?? ''}\r\ncontent-type: application/json\r\ncache-control: no-cache, private\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
  };

  /** The container an exec runs in: named or the only one, and running (the real server's 400s otherwise). */
  private execContainer(pod: Obj, named: string | undefined): string {
    const name = pod.metadata.name;
    const containers: string[] = (pod.spec?.containers ?? []).map((c: Obj) => c.name);
    if (!named && containers.length > 1) throw new KubeStatusError(400, 'BadRequest', `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`);
    const container = named ?? containers[0] ?? '';
    if (!containers.includes(container)) throw new KubeStatusError(400, 'BadRequest', `container ${container} is not valid for pod ${name}`);
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') throw new KubeStatusError(400, 'BadRequest', `cannot exec into a container in a completed pod; current phase is ${phase}`);
    const status = ((pod.status?.containerStatuses ?? []) as Obj[]).find((s) => s.name === container);
    if (phase !== 'Running' || !status?.state?.running) throw new KubeStatusError(400, 'BadRequest', `unable to upgrade connection: container not found ("${container}")`);
    return container;
  }

  /** node:http's request listener. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const text = Buffer.concat(chunks).toString('utf8');
      const contentType = String(req.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim()
        .toLowerCase() as string;
      let body: unknown;
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          try {
            body = contentType === 'application/apply-patch+yaml' || contentType.includes('yaml') ? parseYaml(text) : undefined;
          } catch {
            body = undefined;
          }
        }
      }
      const record: FakeKubeRequest = { method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), contentType, body };
      this.requests.push(record);
      this.answer(req, res, record, text).catch((error: unknown) => this.fail(res, error));
    });
  };

  private send(res: ServerResponse, code: number, body: Obj, warnings: string[] = []): void {
    const headers: Record<string, string | string[]> = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' };
    if (warnings.length) headers.warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    res.writeHead(code, headers);
    res.end(JSON.stringify(body));
  }

  private fail(res: ServerResponse, error: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof KubeStatusError) this.send(res, error.code, error.status());
    else this.send(res, 500, new KubeStatusError(500, 'InternalError', `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`).status());
  }

  private async answer(req: IncomingMessage, res: ServerResponse, record: FakeKubeRequest, text: string): Promise<void> {
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      this.send(res, 401, new KubeStatusError(401, 'Unauthorized', 'Unauthorized').status());
      return;
    }
    for (const f of this.failures) {
      if (f.when(record)) throw new KubeStatusError(f.status, reasonOf(f.status), f.message ?? `the fake API server was told to fail ${record.method} ${record.path}`, {});
    }
    const path = record.path.replace(/\/+$/, '') || '/';
    const query: Query = record.query;
    const method = record.method;
    if (['/healthz', '/readyz', '/livez'].includes(path)) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (path === '/version') {
      this.send(res, 200, {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-fake',
        gitCommit: '0000000000000000000000000000000000000000',
        gitTreeState: 'clean',
        buildDate: '2024-08-13T00:00:00Z',
        goVersion: 'go1.22.5',
        compiler: 'gc',
        platform: 'linux/amd64',
      });
      return;
    }
    const target = this.route(path);
    if (record.body === undefined && text && method !== 'GET' && method !== 'DELETE') {
      throw new KubeStatusError(400, 'BadRequest', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
    }
    if (target.kind === 'discovery') {
      if (method !== 'GET') throw new KubeStatusError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
      this.send(res, 200, target.body);
      return;
    }
    const r = this.registry;
    if (target.kind === 'collection') {
      const { res: type, version, namespace } = target;
      if (method === 'GET' && (query.watch === 'true' || query.watch === '1')) return this.watch(res, type, version, namespace, query);
      let answer: Answer;
      if (method === 'GET') answer = r.list(type, version, namespace, query);
      else if (method === 'POST') {
        if (type.namespaced && namespace === undefined) throw NOT_FOUND;
        answer = r.create(type, version, namespace, record.body, query);
      } else if (method === 'DELETE') answer = r.deleteCollection(type, version, namespace, query);
      else throw new KubeStatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      this.send(res, answer.code, answer.body, answer.warnings);
      return;
    }
    const { res: type, version, namespace, name, sub } = target;
    let answer: Answer;
    if (sub === 'log') {
      if (method !== 'GET') throw new KubeStatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      const pod = r.read(type, namespace, name);
      const logs = await this.kubelet.logs(pod, query);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(logs);
      return;
    }
    if (sub === 'scale') {
      if (method === 'GET') answer = { code: 200, body: r.scale(type, namespace, name) };
      else if (method === 'PUT') answer = r.setScale(type, version, namespace, name, record.body, undefined, query);
      else if (method === 'PATCH') answer = r.setScale(type, version, namespace, name, record.body, record.contentType, query);
      else throw new KubeStatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    } else if (sub === 'exec') {
      r.read(type, namespace, name);
      throw new KubeStatusError(400, 'BadRequest', 'Upgrade request required');
    } else if (sub !== undefined && sub !== 'status') {
      throw new KubeStatusError(400, 'BadRequest', `the fake API server does not serve ${type.plural}/${sub}`);
    } else if (method === 'GET') answer = r.get(type, version, namespace, name);
    else if (method === 'PUT') answer = r.replace(type, version, namespace, name, record.body, query, sub);
    else if (method === 'PATCH') answer = r.patch(type, version, namespace, name, record.body, record.contentType, query, sub);
    else if (method === 'DELETE' && sub === undefined) answer = r.delete(type, version, namespace, name, query, record.body);
    else throw new KubeStatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    this.send(res, answer.code, answer.body, answer.warnings);
  }

  /** Read a path: discovery, a collection, or an object (and its subresource); 404 for what is not served now. */
  private route(path: string): Target {
    const catalog = this.registry.catalog;
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'api') {
      if (parts.length === 1) return { kind: 'discovery', body: catalog.coreVersions(this.address) };
      if (parts[1] !== 'v1') throw NOT_FOUND;
      return this.resourcePath('', 'v1', parts.slice(2));
    }
    if (parts[0] === 'apis') {
      if (parts.length === 1) return { kind: 'discovery', body: catalog.groups() };
      const group = parts[1] as string;
      if (parts.length === 2) {
        const body = catalog.group(group);
        if (!body) throw NOT_FOUND;
        return { kind: 'discovery', body };
      }
      return this.resourcePath(group, parts[2] as string, parts.slice(3));
    }
    throw NOT_FOUND;
  }

  private resourcePath(group: string, version: string, rest: string[]): Target {
    const catalog = this.registry.catalog;
    if (rest.length === 0) {
      const body = catalog.resourceList(group, version);
      if (!body) throw NOT_FOUND;
      return { kind: 'discovery', body };
    }
    const find = (plural: string): Resource => {
      const res = catalog.byPlural(group, version, plural);
      if (!res) throw NOT_FOUND;
      return res;
    };
    // `namespaces/{ns}/{plural}…` is namespaced; `namespaces[/{name}[/status|finalize]]` is the Namespace itself.
    if (rest[0] === 'namespaces' && rest.length >= 3 && !(group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))) {
      const namespace = rest[1] as string;
      const res = find(rest[2] as string);
      if (!res.namespaced) throw NOT_FOUND;
      if (rest.length === 3) return { kind: 'collection', res, version, namespace };
      if (rest.length > 5 || (rest[4] !== undefined && !res.subresources.includes(rest[4]))) throw NOT_FOUND;
      return { kind: 'object', res, version, namespace, name: rest[3] as string, ...(rest[4] ? { sub: rest[4] } : {}) };
    }
    const res = find(rest[0] as string);
    if (rest.length === 1) return { kind: 'collection', res, version };
    if (res.namespaced || rest.length > 3 || (rest[2] !== undefined && !res.subresources.includes(rest[2]))) throw NOT_FOUND;
    return { kind: 'object', res, version, name: rest[1] as string, ...(rest[2] ? { sub: rest[2] } : {}) };
  }

  /**
   * A watch: ADDED for what exists when no resourceVersion (or "0") is given, then every change after it, as
   * newline-delimited JSON in one chunked answer; ends on `timeoutSeconds`, the client leaving or the server closing.
   */
  private watch(res: ServerResponse, type: Resource, version: string, namespace: string | undefined, query: Query): void {
    const store = this.registry.store;
    const matches = this.registry.matcher(type, namespace, query);
    const present = (o: Obj): Obj => this.registry.present(type, version, o);
    const rv = query.resourceVersion;
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache, private' });
    // The client's fetch resolves on the headers: send them now, not with the first event.
    res.flushHeaders();
    const write = (eventType: string, object: Obj): void => {
      res.write(`${JSON.stringify({ type: eventType, object })}\n`);
    };
    let replay: Change[] = [];
    try {
      replay = rv && rv !== '0' ? store.since(typeKey(type), Number(rv)) : [];
    } catch (error) {
      // An expired resourceVersion: one ERROR event (410 Gone) and the end, as the real watch cache answers.
      if (!(error instanceof KubeStatusError)) throw error;
      write('ERROR', error.status());
      res.end();
      return;
    }
    if (!rv || rv === '0') for (const o of this.registry.selected(type, namespace, query)) write('ADDED', present(o));
    for (const change of replay) {
      const t = project(change, matches);
      if (t) write(t, present(change.object));
    }
    const watcher = {
      key: typeKey(type),
      deliver: (change: Change) => {
        const t = project(change, matches);
        if (t) write(t, present(clone(change.object)));
      },
    };
    store.watchers.add(watcher);
    this.watches.add(res);
    const end = (): void => {
      store.watchers.delete(watcher);
      this.watches.delete(res);
      clearTimeout(timer);
      if (!res.writableEnded) res.end();
    };
    const timer = query.timeoutSeconds ? setTimeout(end, Number(query.timeoutSeconds) * 1000) : undefined;
    res.on('close', end);
  }
}
