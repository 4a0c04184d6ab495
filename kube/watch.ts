/**
 * Following a set of objects as the API server changes them: a list, then one long watch request whose
 * newline-delimited JSON events keep a local copy current, as client-go's informers do.
 *
 * Decisions:
 * - List first, then watch from the list's resourceVersion with bookmarks on: a bookmark only moves the
 *   resourceVersion, so a reconnect resumes where the last event (or bookmark) left off and misses nothing.
 * - An ERROR event (410 Gone: the resourceVersion was compacted away) or a 410 answer means relist: the new list is
 *   compared with the local copy and the difference is told as DELETED, ADDED and MODIFIED events.
 * - The handler sees one consistent story: ADDED for an object it does not know is told as MODIFIED when it knows
 *   it, and a DELETED of an object it never saw is not told.
 * - A watch the server ends (its `timeoutSeconds`) is reopened at once; a dropped or refused one after a backoff
 *   (250 ms doubling to 30 s, with jitter), reset once a watch has lived a while. Nothing polls: without changes
 *   the only traffic is one reopened watch every few minutes.
 * - Auth and TLS as {@link Kube.request}: the KubeConfig fills in the request options.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { K8sObject } from './object.ts';
import { KubeApiError, type Kube, type KubeList } from './client.ts';

/** The change an event tells. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** How a watch behaves beyond its selection. */
export interface WatchOptions {
  /** Aborting ends the watch (as `close()` does). */
  signal?: AbortSignal;
  /** A failed list or watch (it is retried after a backoff): for a log line, never a reason to stop. */
  onError?(error: Error): void;
  /** How long the server keeps one watch request open, in seconds (300, with up to 10 % more at random). */
  timeoutSeconds?: number;
  /** The first and the largest wait before retrying after a failure, in ms (250 and 30 000). */
  backoffMs?: { initial: number; max: number };
}

/** A running watch. */
export interface ObjectWatch {
  /** Resolves once the first list has been told (every object there is ADDED), or at `close()`. */
  readonly synced: Promise<void>;
  /** The objects known now, by `namespace/name`. */
  readonly objects: ReadonlyMap<string, K8sObject>;
  /** Stop: the open request is ended and no event is told after this. */
  close(): void;
}

/** A watch event as the API server writes it (one JSON document per line). */
interface WireEvent {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: K8sObject & { code?: number; message?: string; reason?: string };
}

const keyOf = (o: K8sObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const versionOf = (o: K8sObject): string | undefined => (o.metadata as { resourceVersion?: string }).resourceVersion;

/** A relist is needed: the resourceVersion the watch resumed from is gone. */
class Expired extends Error {}

/**
 * Follow the objects of a kind (in `namespace`, or every namespace when undefined; `labelSelector` as kubectl's `-l`).
 *
 * @example
 * const watch = watchObjects(kube, 'v1', 'Pod', 'svc-sandboxes', 'svc-sandbox=true', (type, pod) => console.log(type, pod.metadata.name), {
 *   onError: (e) => console.error(`watch: ${e.message}`),
 * });
 * await watch.synced;
 * watch.close();
 */
export function watchObjects(
  kube: Kube,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  labelSelector: string | undefined,
  onEvent: (type: WatchEventType, object: K8sObject) => void,
  options: WatchOptions = {},
): ObjectWatch {
  const known = new Map<string, K8sObject>();
  const backoff = options.backoffMs ?? { initial: 250, max: 30_000 };
  const timeoutSeconds = options.timeoutSeconds ?? 300;
  let resourceVersion = '';
  let closed = false;
  let current: ClientRequest | undefined;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let delay = backoff.initial;
  let resolveSynced!: () => void;
  const synced = new Promise<void>((resolve) => (resolveSynced = resolve));

  const tell = (type: WatchEventType, object: K8sObject): void => {
    const key = keyOf(object);
    if (type === 'DELETED') {
      if (!known.delete(key)) return;
    } else {
      type = known.has(key) ? 'MODIFIED' : 'ADDED';
      known.set(key, object);
    }
    onEvent(type, object);
  };

  /** List, and tell what differs from what is known (everything, the first time). */
  const relist = async (): Promise<void> => {
    const path = await kube.collectionPath(apiVersion, kind, namespace);
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    const list = (await kube.request('GET', `${path}${query}`)) as KubeList;
    if (closed) return;
    const items = (list.items ?? []).map((item) => ({ ...item, apiVersion, kind }) as K8sObject);
    const seen = new Set(items.map(keyOf));
    for (const [key, old] of [...known]) if (!seen.has(key)) tell('DELETED', old);
    for (const item of items) {
      const old = known.get(keyOf(item));
      if (!old || versionOf(old) !== versionOf(item)) tell('ADDED', item);
    }
    resourceVersion = list.metadata?.resourceVersion ?? '';
  };

  /** One watch request, until it ends; rejects with {@link Expired} when a relist is needed. */
  const stream = async (): Promise<{ events: number }> => {
    const collection = await kube.collectionPath(apiVersion, kind, namespace);
    const q = new URLSearchParams({ watch: 'true', allowWatchBookmarks: 'true', timeoutSeconds: String(Math.round(timeoutSeconds * (1 + Math.random() / 10))) });
    if (resourceVersion) q.set('resourceVersion', resourceVersion);
    if (labelSelector) q.set('labelSelector', labelSelector);
    const base = new URL(kube.server);
    const url = new URL(kube.server);
    const opts: RequestOptions = {
      method: 'GET',
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || undefined,
      path: `${base.pathname.replace(/\/+$/, '')}${collection}?${q}`,
      headers: { accept: 'application/json' },
    };
    await kube.config.applyToHTTPSOptions(opts);
    if (closed) return { events: 0 };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let events = 0;
      const req = send(opts, (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8').slice(0, 500);
            reject(res.statusCode === 410 ? new Expired(text) : new KubeApiError(res.statusCode ?? 0, '', `watch ${kind}: ${res.statusCode}: ${text}`));
          });
          res.on('error', reject);
          return;
        }
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let nl: number;
          while ((nl = buffer.indexOf('\n')) >= 0) {
            const line = buffer.slice(0, nl).trim();
            buffer = buffer.slice(nl + 1);
            if (line === '' || closed) continue;
            let event: WireEvent;
            try {
              event = JSON.parse(line) as WireEvent;
            } catch {
              req.destroy(new Error(`watch ${kind}: a line that is not JSON: ${line.slice(0, 100)}`));
              return;
            }
            events++;
            if (event.type === 'ERROR') {
              // 410 Gone (Expired) is the common one; for any other the safest way on is a fresh list too.
              req.destroy(new Expired(event.object?.message ?? 'watch error'));
              return;
            }
            const rv = versionOf(event.object);
            if (rv) resourceVersion = rv;
            if (event.type === 'BOOKMARK') continue;
            tell(event.type, { ...event.object, apiVersion, kind });
          }
        });
        res.on('end', () => resolve({ events }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error(`watch ${kind}: the connection was cut`)));
      });
      current = req;
      // A connection that went silent (no bookmark, no end) past the server's own timeout is dead.
      req.setTimeout((timeoutSeconds * 1.1 + 30) * 1000, () => req.destroy(new Error(`watch ${kind}: no word from the API server`)));
      req.on('error', reject);
      req.end();
    });
  };

  const loop = async (): Promise<void> => {
    let needList = true;
    while (!closed) {
      const started = Date.now();
      const listed = needList;
      try {
        if (needList) {
          await relist();
          needList = false;
          resolveSynced();
        }
        const { events } = await stream();
        // A watch that ended soon without a word is no better than a failure: wait before the next.
        if (events > 0 || Date.now() - started > 1000) {
          delay = backoff.initial;
          continue;
        }
      } catch (error) {
        if (closed) return;
        if (error instanceof Expired) {
          needList = true;
          resourceVersion = '';
          // Expired right after a fresh list: something is wrong with the server; wait before listing again.
          if (!listed) continue;
          options.onError?.(error);
        } else options.onError?.(error as Error);
      }
      if (closed) return;
      const wait = Math.min(backoff.max, delay) * (0.8 + Math.random() * 0.4);
      delay = Math.min(backoff.max, delay * 2);
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, wait);
      });
    }
  };

  const close = (): void => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    wake?.();
    current?.destroy();
    resolveSynced();
    options.signal?.removeEventListener('abort', close);
  };
  if (options.signal?.aborted) close();
  options.signal?.addEventListener('abort', close);
  void loop();
  return { synced, objects: known, close };
}
