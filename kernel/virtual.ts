/**
 * Virtual actors: addressed by `(kind, key)`, never spawned by hand.
 * `activate(kind, key)` gives a ref; the first message creates the single
 * live activation for that key, and it is deactivated (stopped gracefully)
 * after an idle timeout. A new activation never starts before the previous
 * one for the same key has finished stopping, so state handed to a store in
 * `postStop` is there when the next one loads it in `preStart`.
 */
import type { ActorCell } from './cell.ts';
import type { Props } from './logic.ts';
import type { SupervisorSpec } from './supervision.ts';
import type { Placement } from './placement.ts';
import type { ActivationLease } from './leases.ts';

/**
 * How to build the actor for a key, and where it lives.
 *
 * @example
 * system.defineKind('counter', { props: (key) => counterProps(key), idleAfterMs: 60_000 })
 */
export interface KindSpec<M = unknown, R = unknown> {
  props: (key: string) => Props<M, R>;
  /** Deactivate an activation after this long without messages (default: never). */
  idleAfterMs?: number;
  /**
   * Which node hosts `key`: a {@link Placement} (told of nodes joining and
   * leaving; share one object between kinds placed alike), or a function of the
   * live nodes (stable order). Must give the same answer on every node.
   * Default: this node.
   */
  placement?: Placement | ((key: string, nodes: readonly string[]) => string);
  /**
   * One activation of a key across nodes: an activation starts only once it
   * holds the key's lease, and gives it back when it has stopped (see
   * {@link ActivationLease}). Default: none (one activation per node).
   */
  lease?: ActivationLease;
  /**
   * How the kind's guardian supervises activations. Default: each activation
   * has its own restart limit (`scope: 'child'`), past which that activation
   * is stopped and the failure reported (`onLimit: 'stop-child'`); the next
   * message for its key starts a fresh one.
   */
  supervision?: Partial<SupervisorSpec>;
}

/** The live activations of one kind in this thread. */
export class KindActivations {
  /** The newest activation per key; an entry stays until its cell has stopped. */
  private live = new Map<string, ActorCell>();
  private seq = 0;

  constructor(
    readonly kind: string,
    readonly spec: KindSpec,
    private readonly guardian: ActorCell,
    readonly placement: Placement | undefined = undefined,
  ) {}

  /** Live activations by key. */
  *entries(): IterableIterator<[string, ActorCell]> {
    for (const [key, cell] of this.live) if (isLive(cell)) yield [key, cell];
  }

  /** Activations not stopping. */
  get size(): number {
    let n = 0;
    for (const cell of this.live.values()) if (isLive(cell)) n++;
    return n;
  }

  /**
   * Destroy every activation here now — started or not, stopping included:
   * what they had queued, were handling or waited to start with fails with
   * `reason`. Resolves once all have stopped.
   */
  destroyAll(reason: Error): Promise<void> {
    return Promise.all([...this.live.values()].map((cell) => cell.destroy(reason))).then(() => undefined);
  }

  /** The live activation for `key`, if any. */
  get(key: string): ActorCell | undefined {
    const cell = this.live.get(key);
    return cell && isLive(cell) ? cell : undefined;
  }

  /** The live activation for `key`, created now if there is none. */
  getOrActivate(key: string): ActorCell {
    const previous = this.live.get(key);
    if (previous && isLive(previous)) return previous;
    const encoded = encodeURIComponent(key);
    // `$` never appears in an encoded key, so a suffixed name cannot collide with another key.
    const name = this.guardian.kids.has(encoded) ? `${encoded}$${++this.seq}` : encoded;
    const lease = this.spec.lease;
    const stopped = previous?.whenTerminated();
    // With a lease, the activation waits for it too (held elsewhere until that activation stopped); a keeper out of reach does not keep it from starting.
    const held = lease ? lease.acquire(this.kind, key) : undefined;
    const cell = this.guardian.spawnCell(this.spec.props(key), name, {
      startAfter: held ? Promise.all([stopped, held]).then(() => undefined) : stopped,
      idleMs: this.spec.idleAfterMs,
      onIdle: stopWhenIdle,
      // The same function for every activation of the kind without a lease (no closure per activation).
      onTerminated: held ? (c) => this.terminated(c, key, held) : this.ended,
      kind: this.kind,
      key,
    });
    this.live.set(key, cell);
    this.guardian.host.observers.activation('activation', this.kind, key, cell.path);
    return cell;
  }

  /** An activation (without a lease) has stopped. */
  private readonly ended = (cell: ActorCell): void => this.terminated(cell, cell.key as string, undefined);

  private terminated(cell: ActorCell, key: string, held: Promise<unknown> | undefined): void {
    if (this.live.get(key) === cell) this.live.delete(key);
    const lease = this.spec.lease;
    if (held && lease) void held.then(() => lease.release(this.kind, key), () => undefined);
    this.guardian.host.observers.activation('deactivation', this.kind, key, cell.path);
  }
}

/** An activation idle for its kind's `idleAfterMs`: stopped gracefully. */
function stopWhenIdle(cell: ActorCell): void {
  void cell.stopGracefully(cell.host.stopTimeoutMs);
}

function isLive(cell: ActorCell): boolean {
  return cell.status !== 'stopping' && cell.status !== 'stopped';
}
