/**
 * Where a virtual actor lives. A {@link Placement} answers `ownerOf(kind, key)`
 * from the members it was told about; every node must give the same answer
 * for the same members. The kernel tells it of members joining and leaving
 * (a thread replaced, a pod joining) and, after a change, stops local
 * activations it no longer owns so the next message activates them at their
 * new owner.
 *
 * Rendezvous (highest-random-weight) hashing is the default: when a member
 * leaves, only the keys it owned move (spread over the others); when one
 * joins, only the keys it now wins move to it. `hash % members` moved ~88% of
 * keys when one of 8 threads died, most of them between threads still alive.
 */

/**
 * @example
 * const placement = new RendezvousPlacement({ accepts: (node) => threadOf(node) !== 'main' });
 * placement.join('p1/w1'); placement.join('p1/w2');
 * placement.ownerOf('partition', rootId); // 'p1/w1' or 'p1/w2', the same on every node
 */
export interface Placement {
  /** The member that hosts `(kind, key)` now; `undefined` when there is no member. */
  ownerOf(kind: string, key: string): string | undefined;
  /** A node is reachable (joined, or came back). Ignored when the placement does not accept it. */
  join(node: string): void;
  /** A node is gone. */
  leave(node: string): void;
  /** Members, in a stable order. */
  members(): readonly string[];
}

export interface RendezvousOptions {
  /** Which nodes may host actors of this placement (default: all). */
  accepts?: (node: string) => boolean;
  /** Members to start with. */
  members?: Iterable<string>;
}

/** 32-bit FNV-1a of a string. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** murmur3's finalizer: a good 32-bit mix, so one key hash can be combined with each member cheaply. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Highest random weight: each member scores `mix(hash(key) ^ seed(member))`,
 * the highest wins. The key is hashed once per lookup, the members' seeds
 * once per join.
 */
export class RendezvousPlacement implements Placement {
  private readonly accepts: (node: string) => boolean;
  private list: string[] = [];
  private seeds: number[] = [];

  constructor(options: RendezvousOptions = {}) {
    this.accepts = options.accepts ?? (() => true);
    for (const node of options.members ?? []) this.join(node);
  }

  ownerOf(_kind: string, key: string): string | undefined {
    const n = this.list.length;
    if (n <= 1) return this.list[0];
    const h = fnv1a(key);
    let best = 0;
    let bestScore = -1;
    for (let i = 0; i < n; i++) {
      const score = mix(h ^ (this.seeds[i] as number));
      // Ties (vanishingly rare) go to the member first in sorted order, the same everywhere.
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    }
    return this.list[best];
  }

  join(node: string): void {
    if (!this.accepts(node) || this.list.includes(node)) return;
    this.list = [...this.list, node].sort();
    this.seeds = this.list.map((m) => mix(fnv1a(m)));
  }

  leave(node: string): void {
    const i = this.list.indexOf(node);
    if (i < 0) return;
    this.list = this.list.filter((m) => m !== node);
    this.seeds = this.list.map((m) => mix(fnv1a(m)));
  }

  members(): readonly string[] {
    return this.list;
  }
}

/**
 * A placement from a plain function of the live nodes (the older form of
 * `KindSpec.placement`); it is told nothing and asks for the nodes each time.
 */
export class FunctionPlacement implements Placement {
  constructor(
    private readonly fn: (key: string, nodes: readonly string[]) => string,
    private readonly nodes: () => readonly string[],
  ) {}
  ownerOf(_kind: string, key: string): string {
    return this.fn(key, this.nodes());
  }
  join(): void {}
  leave(): void {}
  members(): readonly string[] {
    return this.nodes();
  }
}

/**
 * Node ids carry their process: `<process>/<thread>` (`a1b2/w3`, `a1b2/main`).
 * The thread part of an id (the whole id when it has no process part).
 */
export function threadOf(node: string): string {
  const i = node.lastIndexOf('/');
  return i < 0 ? node : node.slice(i + 1);
}

/** The process part of a node id (`''` when it has none). */
export function processOf(node: string): string {
  const i = node.lastIndexOf('/');
  return i < 0 ? '' : node.slice(0, i);
}

/** The thread name of a process's main thread (it supervises; worker threads serve). */
export const MAIN_THREAD = 'main';

/** True for a node that is not a process's main thread. */
export function isWorkerNode(node: string): boolean {
  return threadOf(node) !== MAIN_THREAD;
}

/** Worker threads only, or the only node there is: the default placement of partitions and limiter shards. */
export function workerPlacement(): RendezvousPlacement {
  return new RendezvousPlacement({ accepts: isWorkerNode });
}
