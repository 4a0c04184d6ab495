/**
 * The fake's etcd: objects by resource type, namespace and name; one resourceVersion counter for every write;
 * the history of changes a watch replays from a resourceVersion; and the watches open now.
 */
import { typeKey, type Resource } from './resources.ts';
import { clone, KubeStatusError, same, type Obj } from './types.ts';

/** One change, as a watch sends it. */
export interface Change {
  rv: number;
  /** The resource type's store key. */
  key: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
  /** The object before a MODIFIED. */
  old?: Obj;
}

/** An open watch: the changes of one resource type. */
export interface Watcher {
  key: string;
  deliver(change: Change): void;
}

/** How many changes a watch may replay from (an older resourceVersion is 410 Expired, as after etcd compaction). */
const HISTORY = 50_000;

/**
 * What a watch with a selector sees of a change: an object entering the selection is ADDED, one leaving it is
 * DELETED, as the real server reports them.
 */
export function project(change: Change, matches: (object: Obj) => boolean): Change['type'] | undefined {
  if (change.type !== 'MODIFIED') return matches(change.object) ? change.type : undefined;
  const now = matches(change.object);
  const before = change.old !== undefined && matches(change.old);
  return (
    now && before ? 'MODIFIED'
    : now ? 'ADDED'
    : before ? 'DELETED'
    : undefined
  );
}

/** Objects, resourceVersions, history and watches. */
export class Store {
  rv = 0;
  private readonly types = new Map<string, Map<string, Obj>>();
  private readonly history: Change[] = [];
  readonly watchers = new Set<Watcher>();
  /** Called after every write (the controller schedules a pass). */
  onWrite: () => void = () => undefined;

  private bucket(res: Resource): Map<string, Obj> {
    const key = typeKey(res);
    let bucket = this.types.get(key);
    if (!bucket) this.types.set(key, (bucket = new Map()));
    return bucket;
  }

  /** The stored object itself (do not change it), or undefined. */
  peek(res: Resource, namespace: string | undefined, name: string): Obj | undefined {
    return this.bucket(res).get(`${res.namespaced ? (namespace ?? '') : ''}/${name}`);
  }

  /** A copy of the object, or undefined. */
  get(res: Resource, namespace: string | undefined, name: string): Obj | undefined {
    return clone(this.peek(res, namespace, name));
  }

  /** The stored objects themselves (do not change them), in one namespace or all, ordered by namespace and name. */
  peekList(res: Resource, namespace?: string): Obj[] {
    const out = [...this.bucket(res).values()].filter((o) => namespace === undefined || !res.namespaced || o.metadata.namespace === namespace);
    return out.sort((a, b) => `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`));
  }

  /** Copies of the objects, in one namespace or all. */
  list(res: Resource, namespace?: string): Obj[] {
    return clone(this.peekList(res, namespace));
  }

  /** Every stored object of every type (themselves: do not change them). */
  *everything(): Generator<Obj> {
    for (const bucket of this.types.values()) yield* bucket.values();
  }

  /**
   * Store `object` (ADDED when new, MODIFIED otherwise) with the next resourceVersion, unless it equals what is
   * stored (a no-op write changes nothing, as on the real server). Returns a copy of what is stored.
   */
  write(res: Resource, object: Obj): Obj {
    const bucket = this.bucket(res);
    const id = `${res.namespaced ? (object.metadata.namespace ?? '') : ''}/${object.metadata.name}`;
    const old = bucket.get(id);
    if (old) {
      const { resourceVersion: _a, ...before } = old.metadata;
      const { resourceVersion: _b, ...after } = object.metadata ?? {};
      if (same({ ...old, metadata: before }, { ...object, metadata: after })) return clone(old);
    }
    const stored = clone(object);
    stored.metadata.resourceVersion = String(++this.rv);
    bucket.set(id, stored);
    this.emit({ rv: this.rv, key: typeKey(res), type: old ? 'MODIFIED' : 'ADDED', object: clone(stored), ...(old ? { old: clone(old) } : {}) });
    return clone(stored);
  }

  /** Remove an object (DELETED, carrying a new resourceVersion); returns it, or undefined when absent. */
  remove(res: Resource, namespace: string | undefined, name: string): Obj | undefined {
    const bucket = this.bucket(res);
    const id = `${res.namespaced ? (namespace ?? '') : ''}/${name}`;
    const old = bucket.get(id);
    if (!old) return undefined;
    bucket.delete(id);
    old.metadata.resourceVersion = String(++this.rv);
    this.emit({ rv: this.rv, key: typeKey(res), type: 'DELETED', object: clone(old) });
    return clone(old);
  }

  private emit(change: Change): void {
    this.history.push(change);
    if (this.history.length > HISTORY) this.history.splice(0, this.history.length - HISTORY);
    for (const w of this.watchers) if (w.key === change.key) w.deliver(change);
    this.onWrite();
  }

  /** The changes of a type after `rv`; 410 Expired when the history no longer reaches back that far. */
  since(key: string, rv: number): Change[] {
    const oldest = this.history[0]?.rv ?? this.rv + 1;
    if (rv < oldest - 1 && rv < this.rv) throw new KubeStatusError(410, 'Expired', `too old resource version: ${rv} (${oldest - 1})`);
    return this.history.filter((c) => c.key === key && c.rv > rv);
  }
}
