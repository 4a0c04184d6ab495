/**
 * One walker run: executes walkers (and functions) for one caller inside the
 * caller's partition. The graph operations of their nodes, with access
 * checks, are in `graph-ops.ts`; loading is in `run-loading.ts`. Everything
 * changed goes through the run's {@link Transaction}: a failed run puts
 * memory back as it was, a failed nested walker puts it back as it was
 * before that walker, a successful run hands its changes to the partition to
 * commit.
 */
import { abilitiesOf, matches, type Ability } from './abilities.ts';
import type { Anchor } from './anchor.ts';
import { ANCHOR, Node, type Root, viewOf } from './archetype.ts';
import { validateFields } from './class-info.ts';
import { graphError } from './errors.ts';
import type { Caller, FnContext } from './fn.ts';
import { GraphOps } from './graph-ops.ts';
import { silentLogger, type WalkerLogger } from './log.ts';
import { type OutboxRun, trackRun } from './outbox.ts';
import type { RunHost } from './run-loading.ts';
import type { RunChanges } from './transaction.ts';
import type { ConnectionInfo, RoomSpec, SocketEffects } from './rooms.ts';
import { type LogSource, NodeQueue, Signal, type SocketSource, STATE, type Walker, type WalkerClass, walkerInfo } from './walker.ts';


interface Plan {
  /** In order: the walker's entry abilities, the node's entry, the node's exit, the walker's exit; `onWalker` when the walker is `this`. */
  steps: { ability: Ability; onWalker: boolean }[];
}

const plans = new WeakMap<Function, WeakMap<Function, Plan>>();

function planFor(walkerCls: Function, walker: object, nodeCls: Function, node: object): Plan {
  let byNode = plans.get(walkerCls);
  if (!byNode) plans.set(walkerCls, (byNode = new WeakMap()));
  let plan = byNode.get(nodeCls);
  if (!plan) {
    const w = abilitiesOf(walkerCls).filter((a) => matches(a, node));
    const n = abilitiesOf(nodeCls).filter((a) => matches(a, walker));
    const steps = (list: Ability[], kind: 'entry' | 'exit', onWalker: boolean) => list.filter((a) => a.kind === kind).map((ability) => ({ ability, onWalker }));
    plan = { steps: [...steps(w, 'entry', true), ...steps(n, 'entry', false), ...steps(n, 'exit', false), ...steps(w, 'exit', true)] };
    byNode.set(nodeCls, plan);
  }
  return plan;
}

/**
 * Run a node's abilities from step `from`: undefined once all ran
 * synchronously; a promise of the rest from the first that returned one.
 * Signals (skip, disengage) are thrown, or reject the promise.
 */
function visitNode(plan: Plan, walker: Walker, here: Node, from: number): Promise<void> | undefined {
  const steps = plan.steps;
  for (let i = from; i < steps.length; i++) {
    const { ability, onWalker } = steps[i] as Plan['steps'][number];
    const r: unknown = onWalker ? ability.fn.call(walker, here) : ability.fn.call(here, walker);
    if (r instanceof Promise) return visitRest(r, plan, walker, here, i + 1);
  }
  return undefined;
}

async function visitRest(r: Promise<unknown>, plan: Plan, walker: Walker, here: Node, from: number): Promise<void> {
  await r;
  const more = visitNode(plan, walker, here, from);
  if (more !== undefined) await more;
}

/** What a function handler gets: its logger is made when first read. */
class FnCall implements FnContext {
  readonly root: Root;
  readonly caller: Caller;
  readonly traceId: string | undefined;
  readonly spawn: FnContext['spawn'];
  private logger: WalkerLogger | undefined = undefined;

  constructor(
    private readonly run: WalkerRun,
    private readonly name: string,
    root: Root,
  ) {
    this.root = root;
    this.caller = run.caller;
    this.traceId = run.traceId;
    // An own function, not a method: handlers may take it out of the context (`{ spawn }`).
    this.spawn = (w, f, a) => run.spawnWalker(w as string | WalkerClass, f ?? {}, a, true);
  }

  get log(): WalkerLogger {
    return (this.logger ??= this.run.loggerFor('function', this.name));
  }
}

export class WalkerRun extends GraphOps implements LogSource, OutboxRun, SocketSource {
  constructor(
    host: RunHost,
    readonly caller: Caller,
    /** The trace id of the request, carried into walkers (`this.traceId`), logs and outbox entries. */
    readonly traceId?: string,
    /** The request id of the HTTP request that started the run (its log lines carry it as `req_id`). */
    readonly requestId?: string,
    /** The request's `Authorization` header, when the app calls other services (forwarded by `sv` calls). */
    readonly authorization?: string,
  ) {
    super(host, caller.rootId);
  }

  /** The WebSocket connection whose frame started the run (set by the partition). */
  connection: ConnectionInfo | undefined;
  /** What the run asks of connections, once it commits (made on first use). */
  effects: SocketEffects | undefined;

  get roomSpecs(): readonly RoomSpec[] {
    return this.registry.rooms;
  }

  socketEffects(): SocketEffects {
    return (this.effects ??= { rooms: [], sends: [] });
  }

  /**
   * Run `work` (the run's walker or function) so that {@link afterCommit}
   * finds this run, from its code and whatever that awaits; once per run.
   */
  enter<T>(work: () => T): T {
    return trackRun(this, work);
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** A logger bound to a walker or function of this run (the graph's factory; silent without one). */
  loggerFor(key: 'walker' | 'function', name: string): WalkerLogger {
    const factory = this.host.logger;
    if (factory === undefined) return silentLogger;
    const bindings: Record<string, unknown> = { [key]: name };
    if (this.requestId !== undefined) bindings.req_id = this.requestId;
    if (this.traceId !== undefined) bindings.trace_id = this.traceId;
    bindings.root = this.host.rootId;
    return factory(bindings);
  }

  /** Hold a side effect until the run's changes are durable (stamped with its trace id and root). */
  /** Whether the graph releases outbox entries (set by the partition); without it {@link addOutbox} takes nothing. */
  holdsOutbox = false;

  addOutbox(kind: string, data: unknown): boolean {
    if (this.closed || !this.holdsOutbox) return false;
    this.tx.addOutbox({ kind, data, traceId: this.traceId, rootId: this.host.rootId });
    return true;
  }

  /**
   * The nodes among `ids` this run's caller may read — as a walker's reads
   * are checked — as this run's own views (its changes to them commit with
   * it). Missing, deleted and unreadable ids are left out; order kept.
   */
  async readableNodes(ids: readonly string[]): Promise<Node[]> {
    this.open();
    const out: Node[] = [];
    for (const a of await this.anchors(ids)) if (a !== undefined && a.kind === 'node' && this.readable(a)) out.push(viewOf<Node>(a));
    return out;
  }

  private rootView(): Root {
    return viewOf<Root>(this.host.residentRoot());
  }

  // ---- running walkers and functions ---------------------------------------

  /**
   * Spawn a walker (by exported name or class) at `at` (the caller's root by
   * default); resolves to its reports. A nested walker that fails leaves no
   * change behind, even if its parent catches the error.
   */
  async spawnWalker(walker: string | WalkerClass, fields: unknown, at?: Node | string, nested = false): Promise<unknown[]> {
    this.open();
    const made = this.instantiate(walker, fields);
    const savepoint = nested ? this.tx.savepoint() : undefined;
    try {
      const start = at === undefined ? this.rootView() : await this.startNode(at);
      return await this.walk(made, start);
    } catch (error) {
      if (savepoint && !this.closed) this.tx.rollbackTo(savepoint);
      throw error;
    }
  }

  /**
   * The run's own walker (not nested): its reports, or a promise of them.
   * With its start node in memory and no ability awaiting, the whole walk
   * happens in this call — no promise, no microtask (the hot path of a
   * request). Errors are thrown, or the promise rejects.
   */
  spawnTop(walker: string, fields: unknown, at?: string): unknown[] | Promise<unknown[]> {
    this.open();
    const made = this.instantiate(walker, fields);
    if (at === undefined) return this.walk(made, this.rootView());
    const resident = this.host.resident(at);
    if (resident === undefined) return this.startNode(at).then((start) => this.walk(made, start));
    return this.walk(made, this.checkedStart(resident, at));
  }

  private instantiate(walker: string | WalkerClass, fields: unknown): { instance: Walker; name: string } {
    const cls = typeof walker === 'string' ? this.registry.walker(walker) : walker;
    if (!cls) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no walker named ${String(walker)}`);
    const name = typeof walker === 'string' ? walker : (this.registry.nameOf(cls) ?? cls.name);
    const info = walkerInfo(cls);
    const values = validateFields(info, fields ?? {}, name);
    const instance = new cls();
    for (const f of info.fields) if (Object.hasOwn(values, f)) (instance as unknown as Record<string, unknown>)[f] = values[f];
    return { instance, name };
  }

  /** Walk from `start`: the reports, at once when every ability was synchronous. */
  private walk({ instance, name }: { instance: Walker; name: string }, start: Node): unknown[] | Promise<unknown[]> {
    const state = {
      queue: new NodeQueue(),
      reports: [] as unknown[],
      disengaged: false,
      root: this.rootView(),
      caller: this.caller,
      spawn: (w: string | WalkerClass, f: Record<string, unknown>, a: Node | string | undefined) => this.spawnWalker(w, f, a, true),
      name,
      traceId: this.traceId,
      log: undefined,
      logs: this,
      sockets: this,
    };
    instance[STATE] = state;
    state.queue.push([start]);
    const pending = this.execute(instance, state.queue);
    return pending === undefined ? state.reports : pending.then(() => state.reports);
  }

  /** The run's own function call: its return value as the handler gives it (a value, or a promise). Errors are thrown. */
  callTop(name: string, args: unknown): unknown {
    this.open();
    const def = this.registry.fn(name);
    if (!def) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no function named ${name}`);
    const values = validateFields(def.info, args ?? {}, name);
    return def.handler(values, new FnCall(this, name, this.rootView()));
  }

  private async startNode(at: Node | string): Promise<Node> {
    if (at instanceof Node) return at;
    const [anchor] = await this.anchors([at]);
    return this.checkedStart(anchor, at);
  }

  private checkedStart(anchor: Anchor | undefined, at: string): Node {
    // The same answer whether the node is missing or not readable: its existence is not revealed.
    if (!anchor || anchor.kind !== 'node' || !this.readable(anchor)) {
      throw graphError('SVC_ERR_NODE_NOT_FOUND', `no node ${at} readable by this caller`);
    }
    return viewOf<Node>(anchor);
  }

  /**
   * Visit the queue's nodes. Synchronous abilities are not awaited: while
   * none returns a promise, the walk ends in this call (undefined); from the
   * first one that does, it goes on in {@link executeAsync} (its promise).
   */
  private execute(walker: Walker, queue: NodeQueue): Promise<void> | undefined {
    const walkerCls = walker.constructor;
    const state = walker[STATE];
    for (let here = queue.shift(); here && !state.disengaged; here = queue.shift()) {
      if (here[ANCHOR].deleted) continue;
      const plan = planFor(walkerCls, walker, here.constructor, here);
      let pending: Promise<void> | undefined;
      try {
        pending = visitNode(plan, walker, here, 0);
      } catch (error) {
        if (error instanceof Signal) {
          if (error.kind === 'disengage') break;
          continue;
        }
        throw error;
      }
      if (pending !== undefined) return this.executeAsync(walker, queue, pending);
    }
    return undefined;
  }

  /** The rest of a walk once an ability awaited: `pending` is the node under way; {@link execute} goes on from the next. */
  private async executeAsync(walker: Walker, queue: NodeQueue, pending: Promise<void>): Promise<void> {
    for (let node: Promise<void> | undefined = pending; node !== undefined; node = this.execute(walker, queue)) {
      try {
        await node;
      } catch (error) {
        if (!(error instanceof Signal)) throw error;
        if (error.kind === 'disengage') return;
      }
    }
  }

  // ---- the end of a run ------------------------------------------------------------

  /** What to commit; throws `SVC_ERR_BAD_WRITE` when a changed anchor no longer fits its schema. */
  changes(): RunChanges {
    return this.tx.changes(this.callerRoot);
  }

  /** Put memory back as it was before the run, and close it. */
  rollback(): void {
    this.tx.rollback();
    this.close();
  }

  /** The commit is under way: versions move on; the run closes. */
  committed(changes: RunChanges): void {
    this.tx.committed(changes);
    this.close();
  }

  private close(): void {
    this.closed = true;
    this.foreign.clear();
  }
}
