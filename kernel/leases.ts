/**
 * Activation leases: a virtual actor's key is active on one node at a time,
 * across the nodes of a process (and, with a cluster implementation, across
 * pods). When placement moves a key (a thread joined), the new owner's
 * activation waits for the lease, which the old owner's activation gives back
 * only once it has stopped — after it finished the messages it had queued. So
 * the two never serve one key at the same time; reads included.
 */
import { fromReceive, replyLater } from './logic.ts';
import type { ActorSystem } from './system.ts';

/**
 * @example
 * system.defineKind('partition', { props, placement, lease: remoteLeases(system) });
 */
export interface ActivationLease {
  /** Resolves once this node holds the key (rejects when the lease keeper cannot be reached). */
  acquire(kind: string, key: string): Promise<void>;
  /** This node's activation of the key has stopped. */
  release(kind: string, key: string): void;
}

/** The keeper's name under `/user`. */
export const LEASES_ACTOR = 'activation-leases';

type LeaseMsg = { t: 'acquire'; id: string; node: string } | { t: 'release'; id: string; node: string };

export interface ServeLeasesOptions {
  /**
   * A lease across processes (a cluster): a key is taken from it before the
   * first node of this process holds it, and given back once no node here
   * holds or waits for it.
   */
  backing?: ActivationLease;
  /**
   * A backing acquire failed (the node's acquire is refused with it): the
   * first failure of a run of them — the next is reported only once a backing
   * acquire succeeded again (an outage of the backing fails every key: one
   * report, not one per key).
   */
  onError?: (error: unknown, id: string) => void;
}

function split(id: string): [kind: string, key: string] {
  const i = id.indexOf('/');
  return [id.slice(0, i), id.slice(i + 1)];
}

/**
 * Keep the leases of the nodes of `system`'s transport (on the main thread of
 * a process). A node that goes down gives back every lease it held.
 *
 * @example
 * serveActivationLeases(pool.system);
 */
export function serveActivationLeases(system: ActorSystem, options: ServeLeasesOptions = {}): void {
  // A node may hold a key more than once at a time: its next activation asks before the previous one has given it back.
  const holders = new Map<string, { node: string; count: number }>();
  const waiting = new Map<string, { node: string; grant: (answer: boolean | Promise<boolean>) => void }[]>();
  const backing = options.backing;
  /** Keys this process holds from the backing lease (or is taking). */
  const taken = new Map<string, Promise<void>>();
  /** A backing failure was reported and no backing acquire succeeded since. */
  let failing = false;
  const takeBacking = (id: string): Promise<void> => {
    if (!backing) return Promise.resolve();
    let pending = taken.get(id);
    if (!pending) {
      const [kind, key] = split(id);
      pending = backing.acquire(kind, key);
      taken.set(id, pending);
      pending.then(
        () => void (failing = false),
        (error: unknown) => {
          if (taken.get(id) === pending) taken.delete(id);
          if (failing) return;
          failing = true;
          options.onError?.(error, id);
        },
      );
    }
    return pending;
  };
  /** `node` holds `id` here: true once the key is also this process's across the cluster (with a backing lease). */
  const granted = (id: string, node: string): boolean | Promise<boolean> => {
    if (!backing) return true;
    return takeBacking(id).then(
      () => true,
      (error: unknown) => {
        // Not taken across the cluster: nobody here may hold it; the next waiter tries again.
        if (holders.get(id)?.node === node) handOn(id);
        throw error;
      },
    );
  };
  const handOn = (id: string): void => {
    const queue = waiting.get(id);
    const next = queue?.shift();
    if (queue && queue.length === 0) waiting.delete(id);
    if (next) {
      holders.set(id, { node: next.node, count: 1 });
      next.grant(granted(id, next.node));
    } else {
      holders.delete(id);
      if (backing && taken.delete(id)) {
        const [kind, key] = split(id);
        backing.release(kind, key);
      }
    }
  };
  system.watchNodes((event, node) => {
    if (event !== 'down') return;
    for (const [id, waiters] of waiting) {
      const kept = waiters.filter((w) => w.node !== node);
      if (kept.length) waiting.set(id, kept);
      else waiting.delete(id);
    }
    for (const [id, holder] of [...holders]) if (holder.node === node) handOn(id);
  });
  system.spawn(
    fromReceive((msg: LeaseMsg) => {
      const holder = holders.get(msg.id);
      if (msg.t === 'release') {
        if (holder?.node === msg.node && --holder.count === 0) handOn(msg.id);
        return undefined;
      }
      if (holder?.node === msg.node) {
        holder.count++;
        const answer = granted(msg.id, msg.node);
        return answer === true ? true : replyLater(answer as Promise<boolean>);
      }
      if (holder === undefined || !system.nodes().includes(holder.node)) {
        holders.set(msg.id, { node: msg.node, count: 1 });
        // The key must be this process's across the cluster too (taken once, kept while someone here holds it).
        const answer = granted(msg.id, msg.node);
        return answer === true ? true : replyLater(answer as Promise<boolean>);
      }
      return replyLater(
        new Promise<boolean>((resolve) => {
          const queue = waiting.get(msg.id) ?? [];
          queue.push({ node: msg.node, grant: resolve });
          waiting.set(msg.id, queue);
        }),
      );
    }, { capacity: 100_000 }),
    LEASES_ACTOR,
  );
}

/**
 * Leases from the keeper on `node` (the main thread of this process).
 *
 * @example
 * const lease = remoteLeases(system, 'main');
 */
export function remoteLeases(system: ActorSystem, node: string, timeoutMs = 30_000): ActivationLease {
  const keeper = () => system.refFromAddress({ node, path: `/user/${LEASES_ACTOR}` });
  return {
    acquire: (kind, key) => keeper().ask({ t: 'acquire', id: `${kind}/${key}`, node: system.nodeId } satisfies LeaseMsg, timeoutMs).then(() => undefined),
    release: (kind, key) => void keeper().tell({ t: 'release', id: `${kind}/${key}`, node: system.nodeId } satisfies LeaseMsg),
  };
}
