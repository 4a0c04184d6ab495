/**
 * The loading half of a walker run: anchors come from the partition's memory
 * when they are there, else from the store through the partition; anchors of
 * other roots become copies held by the run for its length only.
 */
import type { Anchor, AnchorHome, AnchorRun } from './anchor.ts';
import { graphError } from './errors.ts';
import type { WalkerLoggerFactory } from './log.ts';
import type { Registry } from './registry.ts';

/** What a run needs from the partition it runs in. */
export interface RunHost extends AnchorHome {
  readonly rootId: string;
  readonly registry: Registry;
  /** An owned anchor held in memory. */
  resident(id: string): Anchor | undefined;
  /** The root held in memory; throws the store's error when it is not (it could not be loaded). */
  residentRoot(): Anchor;
  /**
   * Load anchors not in memory. Owned ones become resident; foreign ones
   * come back as copies for this run only. Missing ids are absent from the map.
   */
  fetch(ids: string[]): Promise<Map<string, Anchor>>;
  /** The edges touching a node (owned ones become resident; foreign ones are copies). */
  fetchEdges(nodeId: string): Promise<Anchor[]>;
  /** Hold a new anchor in memory. */
  adopt(anchor: Anchor): void;
  /** Forget an anchor (dropped on rollback, or deleted on commit). */
  evict(anchor: Anchor): void;
  /** Makes the loggers of walkers and functions (none: they log nowhere). */
  readonly logger?: WalkerLoggerFactory | undefined;
}

/** A run's loading: the base of {@link WalkerRun} (see `run.ts`). */
export abstract class RunLoading implements AnchorHome {
  protected readonly foreign = new Map<string, Anchor>();
  protected closed = false;

  constructor(protected readonly host: RunHost) {}

  /** Foreign copies live in the run: changes to them are allowed while it is open. */
  abstract get currentRun(): AnchorRun | null;

  protected get registry(): Registry {
    return this.host.registry;
  }

  /** Refuse work once the run has ended (an operation that was not awaited, a timer firing later). */
  protected open(): void {
    if (this.closed) throw graphError('SVC_ERR_NOT_IN_RUN', 'the walker run has ended; await graph operations inside the ability');
  }

  /** Anchors by id (undefined where missing), from memory when possible. */
  async anchors(ids: readonly string[]): Promise<(Anchor | undefined)[]> {
    const out: (Anchor | undefined)[] = new Array(ids.length);
    let missing: string[] | undefined;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const a = this.host.resident(id) ?? this.foreign.get(id);
      if (a) out[i] = a;
      else (missing ??= []).push(id);
    }
    if (!missing) return out;
    const fetched = await this.host.fetch(missing);
    this.open();
    for (let i = 0; i < ids.length; i++) {
      if (out[i]) continue;
      const a = fetched.get(ids[i] as string);
      if (a) out[i] = this.own(a);
    }
    return out;
  }

  /** A fetched anchor as this run holds it: foreign ones become the run's copies (one per id). */
  protected own(a: Anchor): Anchor {
    if (a.root === this.host.rootId) return a;
    const cached = this.foreign.get(a.id);
    if (cached) return cached;
    a.foreign = true;
    a.home = this;
    this.foreign.set(a.id, a);
    return a;
  }

  /** Make sure a node's edge list is complete (stored nodes load it on first use). */
  protected async ensureEdges(node: Anchor): Promise<void> {
    if (node.edgesLoaded) return;
    const edges = await this.host.fetchEdges(node.id);
    this.open();
    if (node.edgesLoaded) return; // loaded meanwhile
    node.edges = edges.map((e) => this.own(e).id);
    node.edgesLoaded = true;
  }
}
