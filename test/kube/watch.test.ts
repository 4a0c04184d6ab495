// watchObjects against the fake Kubernetes API server: the first list told as ADDED, then the watch's ADDED,
// MODIFIED and DELETED (a label selector's entries and exits included); a dropped connection resumed from the last
// resourceVersion; a 410 Gone answered by a relist told as the difference; no polling; close() ends it.
import t from 'tap';
import { createConnection, createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import { KubeConfig } from '@kubernetes/client-node';
import { connectCluster, Kube, watchObjects, type WatchEventType } from '../../kube/index.ts';
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeObject } from '../kit/index.ts';

const NS = 'svc-sandboxes';

function pod(name: string, labels: Record<string, string> = { 'svc-sandbox': 'true' }): FakeKubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, labels }, spec: { containers: [{ name: 'dev', image: 'node:20' }] } };
}

/** The events told, and a way to wait for one without sleeping. */
function recorder() {
  const events: { type: WatchEventType; name: string; labels: Record<string, string> }[] = [];
  const waiters: { test: () => boolean; resolve: () => void }[] = [];
  const onEvent = (type: WatchEventType, o: { metadata: { name: string; labels?: Record<string, string> } }) => {
    events.push({ type, name: o.metadata.name, labels: { ...o.metadata.labels } });
    for (const w of [...waiters]) if (w.test()) waiters.splice(waiters.indexOf(w), 1) && w.resolve();
  };
  const waitFor = (test: () => boolean, what: string, ms = 10_000): Promise<void> =>
    test()
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(events)}`)), ms);
          waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
        });
  const has = (type: WatchEventType, name: string) => events.some((e) => e.type === type && e.name === name);
  return { events, onEvent, waitFor, has };
}

/** A TCP relay in front of the fake whose connections a test can cut. */
async function relayTo(api: FakeKubeApi): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const target = new URL(api.url);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const watchRequests = (api: FakeKubeApi) => api.requests.filter((r) => r.path.endsWith('/pods') && r.query.watch === 'true');
const listRequests = (api: FakeKubeApi) => api.requests.filter((r) => r.path.endsWith('/pods') && r.query.watch === undefined && r.method === 'GET');

t.test('fake Kubernetes API server: watchObjects lists, then follows ADDED, MODIFIED and DELETED by label', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  api.put(pod('sbx-a'));
  api.put(pod('other', { app: 'web' }));
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  const r = recorder();
  const errors: Error[] = [];
  const watch = watchObjects(kube, 'v1', 'Pod', NS, 'svc-sandbox=true', r.onEvent, { onError: (e) => errors.push(e) });
  t.teardown(() => watch.close());
  await watch.synced;
  t.ok(r.has('ADDED', 'sbx-a'), 'the listed pod is ADDED');
  t.notOk(r.events.some((e) => e.name === 'other'), 'a pod outside the selector is not told');
  await api.until(() => watchRequests(api).length === 1, 5000, 'the watch request');
  t.equal(watchRequests(api)[0]?.query.allowWatchBookmarks, 'true', 'bookmarks asked for');
  t.ok(watchRequests(api)[0]?.query.resourceVersion, 'the watch resumes from the list');

  api.put(pod('sbx-b'));
  await r.waitFor(() => r.has('ADDED', 'sbx-b'), 'ADDED sbx-b');
  api.put(pod('sbx-b', { 'svc-sandbox': 'true', 'svc-sandbox-id': 'sbx-0123456789abcdef' }));
  await r.waitFor(() => r.events.some((e) => e.type === 'MODIFIED' && e.labels['svc-sandbox-id'] === 'sbx-0123456789abcdef'), 'MODIFIED sbx-b');
  api.put(pod('other', { 'svc-sandbox': 'true' }));
  await r.waitFor(() => r.has('ADDED', 'other'), 'a pod entering the selection is ADDED');
  api.put(pod('other', { app: 'web' }));
  await r.waitFor(() => r.has('DELETED', 'other'), 'a pod leaving the selection is DELETED');
  t.ok(api.delete('v1', 'Pod', NS, 'sbx-a'));
  await r.waitFor(() => r.has('DELETED', 'sbx-a'), 'DELETED sbx-a');
  t.same([...watch.objects.keys()].sort(), [`${NS}/sbx-b`], 'the objects known now');
  t.equal(listRequests(api).length, 1, 'one list');
  t.equal(watchRequests(api).length, 1, 'one watch request for all of it: nothing polls');
  t.same(errors, [], 'no error');

  watch.close();
  const told = r.events.length;
  api.put(pod('sbx-c'));
  await api.until(() => api.get('v1', 'Pod', NS, 'sbx-c')?.status?.phase === 'Running', 5000, 'sbx-c running');
  t.equal(r.events.length, told, 'nothing is told after close()');
});

t.test('fake Kubernetes API server: a dropped watch resumes from its resourceVersion; a 410 Gone relists and tells the difference', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  const relay = await relayTo(api);
  t.teardown(() => relay.close());
  for (const name of ['sbx-1', 'sbx-2', 'sbx-3']) api.put(pod(name));
  const kc = new KubeConfig();
  kc.loadFromFile(api.kubeconfig);
  const kube = new Kube(kc, relay.url);
  const r = recorder();
  const errors: Error[] = [];
  const watch = watchObjects(kube, 'v1', 'Pod', NS, 'svc-sandbox=true', r.onEvent, { onError: (e) => errors.push(e), backoffMs: { initial: 20, max: 200 } });
  t.teardown(() => watch.close());
  await watch.synced;
  await api.until(() => watchRequests(api).length === 1, 5000, 'the first watch');

  // Cut, then change while no watch is open: the next watch replays what it missed from its resourceVersion.
  relay.cut();
  api.put(pod('sbx-4'));
  api.delete('v1', 'Pod', NS, 'sbx-1');
  await r.waitFor(() => r.has('ADDED', 'sbx-4') && r.has('DELETED', 'sbx-1'), 'the replayed changes');
  t.ok(errors.length >= 1, 'the cut is reported');
  t.equal(listRequests(api).length, 1, 'resumed without a relist');
  t.ok(watchRequests(api).length >= 2, 'a new watch request');

  // Cut again; the resourceVersion is now "too old" (410): a relist, told as the difference.
  let gone = 0;
  const stop = api.failWhen((req) => req.query.watch === 'true' && gone++ === 0, 410, 'too old resource version');
  t.teardown(stop);
  const before = r.events.length;
  relay.cut();
  api.put(pod('sbx-5'));
  api.delete('v1', 'Pod', NS, 'sbx-2');
  api.put(pod('sbx-3', { 'svc-sandbox': 'true', 'svc-sandbox-pool': 'active' }));
  await r.waitFor(() => r.has('ADDED', 'sbx-5') && r.has('DELETED', 'sbx-2') && r.events.slice(before).some((e) => e.type === 'MODIFIED' && e.name === 'sbx-3'), 'the relist difference');
  t.equal(listRequests(api).length, 2, 'one relist');
  const after = r.events.slice(before);
  t.notOk(after.some((e) => e.name === 'sbx-4' || e.name === 'sbx-1'), 'what did not change is not told again');
  t.same([...watch.objects.keys()].sort(), ['sbx-3', 'sbx-4', 'sbx-5'].map((n) => `${NS}/${n}`));
  // The stream after the relist follows changes again.
  api.put(pod('sbx-6'));
  await r.waitFor(() => r.has('ADDED', 'sbx-6'), 'ADDED after the relist');
});

t.test('fake Kubernetes API server: a watch that cannot list retries with a backoff, then syncs', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  api.put(pod('sbx-x'));
  let refused = 0;
  const stop = api.failWhen((req) => req.path.endsWith('/pods') && req.query.watch === undefined && refused++ < 2, 503);
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  const r = recorder();
  const errors: Error[] = [];
  const watch = watchObjects(kube, 'v1', 'Pod', NS, 'svc-sandbox=true', r.onEvent, { onError: (e) => errors.push(e), backoffMs: { initial: 20, max: 100 } });
  t.teardown(() => watch.close());
  await watch.synced;
  stop();
  t.equal(errors.length, 2, 'each refused list reported');
  t.ok(r.has('ADDED', 'sbx-x'), 'then the list is told');
  const aborted = new AbortController();
  const second = watchObjects(kube, 'v1', 'Pod', NS, 'svc-sandbox=true', () => undefined, { signal: aborted.signal });
  await second.synced;
  aborted.abort();
  t.pass('an aborted signal ends a watch');
});
