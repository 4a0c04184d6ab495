/**
 * The runtime of one actor: its mailbox loop, lifecycle, timers, children and
 * the supervision of those children. The behaviour itself is the
 * {@link ActorLogic} it was given; the cell never looks inside it.
 */
import type { Clock, TimerHandle } from './clock.ts';
import { IncarnationContext, LocalRef } from './context.ts';
import type { DeadLetterReason, DeadLetters } from './dead-letters.ts';
import { kernelError } from './errors.ts';
import { type ActorLogic, Later, type Props, Rejection } from './logic.ts';
import { Mailbox, PushResult, type Reply } from './mailbox.ts';
import type { ActorLabel, Observers, SupervisorDecision } from './observer.ts';
import type { ActorRef } from './refs.ts';
import { backoffDelay, RestartLog, shouldRestart, type SupervisorSpec, supervisorSpec } from './supervision.ts';
import type { ActorSystem } from './system.ts';
import { ActorTimers } from './timers.ts';

export type CellStatus = 'starting' | 'running' | 'suspended' | 'stopping' | 'stopped';

/** What a cell needs from the system that houses it. */
export interface CellHost {
  readonly system: ActorSystem;
  readonly nodeId: string;
  readonly clock: Clock;
  readonly deadLetters: DeadLetters;
  readonly stopTimeoutMs: number;
  register(cell: ActorCell): void;
  unregister(cell: ActorCell): void;
  ask(cell: ActorCell, msg: unknown, timeoutMs: number | undefined): Promise<unknown>;
  /** A failure nobody supervises: never swallowed. */
  unhandledFailure(error: unknown, path: string): void;
  /** An error that cannot be passed to a supervisor (postStop, a crash while stopping): reported. */
  reportError(error: unknown, path: string): void;
  readonly observers: Observers;
}

/** Options a system gives a cell beyond its props (virtual actors use these). */
export interface CellOptions {
  /** Wait for this before the first start (a previous activation still stopping). */
  startAfter?: Promise<void>;
  /** Deactivate after this long without messages. */
  idleMs?: number;
  onIdle?: (cell: ActorCell) => void;
  onTerminated?: (cell: ActorCell) => void;
  /** The virtual actor kind this cell is an activation of (its label is `$<kind>`). */
  kind?: string;
  /** The key of that activation. */
  key?: string;
}

const DEFAULT_CAPACITY = 1024;
const DEFAULT_THROUGHPUT = 256;

const resolved = Promise.resolve();

/**
 * Run `fn` as a microtask. Not `queueMicrotask`: Node wraps each of those in
 * an AsyncResource, which costs a microsecond per message.
 */
function microtask(fn: () => void): void {
  void resolved.then(fn);
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return x instanceof Promise || (typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function');
}

function answer(reply: Reply, result: unknown): void {
  if (result instanceof Rejection) reply.reject(result.error);
  else if (result instanceof Later) {
    result.promise.then(
      (value) => answer(reply, value),
      (error: unknown) => reply.reject(error),
    );
  } else reply.resolve(result);
}

export class ActorCell<M = unknown, R = unknown> {
  readonly ref: LocalRef<M, R>;
  readonly mailbox: Mailbox;
  /** Made on first use (most actors never arm a timer). */
  private timersMade: ActorTimers<M> | undefined;
  readonly path: string;
  readonly restartType;
  readonly spec: SupervisorSpec;
  /** Children in start order (a permanent child waiting to be revived keeps its place). */
  readonly kids = new Map<string, ActorCell>();
  status: CellStatus = 'starting';
  /** Incarnations started so far (1 after the first start). */
  incarnations = 0;
  /** This cell's own restarts, for backoff and per-child limits (decided by the parent). */
  readonly ownRestarts = new RestartLog();

  private logic: ActorLogic<M, R> | undefined;
  private ctx: IncarnationContext<M> | undefined;
  private ready = false;
  private scheduled = false;
  private inFlight = false;
  private inFlightReply: Reply | undefined;
  /** Bumped whenever in-flight work must be ignored (crash, restart, forced stop). */
  private epoch = 0;
  private readonly throughput: number;
  private nameSeq = 0;
  /** Restarts of children (scope `supervisor`). */
  private readonly restarts = new RestartLog();
  /** A pending restart or revive of this cell, or a pending one-for-all start of its children. */
  private restartTimer: TimerHandle | null = null;
  private startAllTimer: TimerHandle | null = null;
  private restartingAll = false;
  private tearingDown: Promise<void> | null = null;
  private termination: { promise: Promise<void>; resolve: () => void } | null = null;
  private stopDeadline: TimerHandle | null = null;
  private stopUntil = Infinity;
  private drainFinished = false;
  private selfStopped = false;
  private idleTimer: TimerHandle | null = null;
  private lastActive = 0;
  /** Why it was destroyed ({@link destroy}): what it still had, or gets from now on, fails with this. */
  private stopReason: Error | undefined;
  private cachedLabel: ActorLabel | undefined;

  constructor(
    readonly host: CellHost,
    readonly parentCell: ActorCell | null,
    readonly name: string,
    readonly props: Props<M, R>,
    private readonly options: CellOptions = {},
  ) {
    this.path = parentCell ? `${parentCell.path}/${name}` : `/${name}`;
    this.mailbox = new Mailbox(props.capacity ?? DEFAULT_CAPACITY, props.overflow ?? 'reject');
    this.restartType = props.restart ?? 'permanent';
    this.spec = supervisorSpec(props.supervision);
    this.throughput = props.throughput ?? DEFAULT_THROUGHPUT;
    this.ref = new LocalRef(this);
    host.register(this as ActorCell);
    if (options.startAfter) {
      options.startAfter.then(
        () => this.start(),
        () => this.start(),
      );
    } else {
      this.start();
    }
  }

  /** The actor's timers: each sends its message to this cell's mailbox. */
  get timers(): ActorTimers<M> {
    return (this.timersMade ??= new ActorTimers(this.host.clock, (msg) => {
      this.enqueue(msg, undefined);
    }));
  }

  /** The key of the virtual actor this cell is an activation of (none for a plain actor). */
  get key(): string | undefined {
    return this.options.key;
  }

  get currentEpoch(): number {
    return this.epoch;
  }

  /** Bounded name for observers (see {@link ActorLabel}); built on first use. */
  get label(): ActorLabel {
    if (this.cachedLabel === undefined) {
      const kind = this.options.kind;
      const own = this.name.startsWith('$') ? '$' : this.name;
      this.cachedLabel = kind !== undefined ? `$${kind}` : this.parentCell ? `${this.parentCell.label}/${own}` : this.path;
    }
    return this.cachedLabel;
  }

  spawnCell<CM, CR>(props: Props<CM, CR>, name?: string, options?: CellOptions): ActorCell<CM, CR> {
    if (this.status === 'stopping' || this.status === 'stopped') {
      throw kernelError('SVC_ERR_ACTOR_STOPPED', `${this.path} is stopping and cannot start children`);
    }
    const childName = name ?? `$${++this.nameSeq}`;
    if (childName.includes('/') || childName === '') {
      throw new TypeError(`actor name must be non-empty and contain no '/': ${JSON.stringify(childName)}`);
    }
    if (this.kids.has(childName)) {
      throw kernelError('SVC_ERR_NAME_TAKEN', `${this.path} already has a child named ${childName}`);
    }
    const cell = new ActorCell<CM, CR>(this.host, this as ActorCell, childName, props, options);
    this.kids.set(childName, cell as ActorCell);
    return cell;
  }

  /** `ctx.stop()`: without a child, this actor stops itself (a normal exit). */
  stopFromContext(child?: ActorRef): Promise<void> {
    if (child === undefined) {
      this.selfStopped = true;
      return this.stopGracefully(this.host.stopTimeoutMs);
    }
    const cell = child instanceof LocalRef ? (child.cell as ActorCell) : undefined;
    if (!cell || cell.parentCell !== (this as ActorCell)) {
      return Promise.reject(new TypeError(`${child.path} is not a child of ${this.path}`));
    }
    return cell.stopGracefully(this.host.stopTimeoutMs);
  }

  liveChildren(): ActorRef[] {
    return [...this.kids.values()].filter((c) => c.status !== 'stopped').map((c) => c.ref);
  }

  // ---- mailbox ------------------------------------------------------------

  /** Queue a message; `false` when it was refused (its reply already rejected). */
  enqueue(msg: unknown, reply: Reply | undefined): boolean {
    if (this.status === 'stopping' || this.status === 'stopped') {
      this.dead(msg, reply, 'stopped', 'SVC_ERR_ACTOR_STOPPED');
      return false;
    }
    const result = this.mailbox.push(msg, reply);
    if (result !== PushResult.Ok && !this.overflowed(result, msg, reply)) return false;
    if (!this.scheduled && !this.inFlight && this.ready && this.status === 'running') {
      this.scheduled = true;
      microtask(this.run);
    }
    return true;
  }

  /**
   * The mailbox was full: shed a message (out of line, to keep `enqueue`
   * small enough to inline). `false` when `msg` itself was refused.
   */
  private overflowed(result: PushResult, msg: unknown, reply: Reply | undefined): boolean {
    const mailbox = this.mailbox;
    if (result === PushResult.Rejected) {
      this.host.observers.mailboxFull(this, mailbox.capacity, 'reject', msg);
      this.dead(msg, reply, 'mailbox-full', 'SVC_ERR_MAILBOX_FULL');
      return false;
    }
    const dropped = mailbox.droppedMsg;
    const droppedReply = mailbox.droppedReply;
    mailbox.droppedMsg = mailbox.droppedReply = undefined;
    this.host.observers.mailboxFull(this, mailbox.capacity, 'drop-oldest', dropped);
    this.dead(dropped, droppedReply, 'dropped-oldest', 'SVC_ERR_MESSAGE_DROPPED');
    return true;
  }

  private dead(msg: unknown, reply: Reply | undefined, reason: DeadLetterReason, code: Parameters<typeof kernelError>[0]): void {
    this.host.deadLetters.publish(this.path, msg, reason);
    if (!reply) return;
    const stopped = reason === 'stopped' || reason === 'forced-stop';
    reply.reject(stopped && this.stopReason !== undefined ? this.stopReason : kernelError(code, `${this.path}: ${reason}`));
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    microtask(this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const logic = this.logic;
    const ctx = this.ctx;
    if (!logic || !ctx || !this.ready) return;
    const epoch = this.epoch;
    let budget = this.throughput;
    // Looked up once a run: with nobody listening, each message pays one branch.
    const observe = this.host.observers.receiver();
    while (!this.inFlight && this.mailbox.size > 0 && (this.status === 'running' || this.status === 'stopping')) {
      if (this.status === 'stopping' && this.host.clock.now() >= this.stopUntil) {
        this.forceStop();
        return;
      }
      if (budget-- === 0) {
        this.scheduled = true;
        setImmediate(this.run);
        return;
      }
      const reply = this.mailbox.peekReply();
      const msg = this.mailbox.shift();
      if (observe !== undefined) observe(this, this.mailbox.size);
      let result: unknown;
      try {
        result = logic.receive(msg as M, ctx);
      } catch (error) {
        this.crash(error, reply);
        return;
      }
      if (isThenable(result)) {
        this.inFlight = true;
        this.inFlightReply = reply;
        result.then(
          (value) => this.settled(epoch, value, reply),
          (error: unknown) => this.failed(epoch, error, reply),
        );
        return;
      }
      if (reply) answer(reply, result);
    }
    this.idleCheckpoint();
  };

  private settled(epoch: number, value: unknown, reply: Reply | undefined): void {
    if (epoch !== this.epoch) return;
    this.inFlight = false;
    this.inFlightReply = undefined;
    if (reply) answer(reply, value);
    this.run();
  }

  private failed(epoch: number, error: unknown, reply: Reply | undefined): void {
    if (epoch !== this.epoch) return;
    this.inFlight = false;
    this.inFlightReply = undefined;
    this.crash(error, reply);
  }

  /** After the loop runs dry: finish a pending stop, or note the time for idleness. */
  private idleCheckpoint(): void {
    if (this.inFlight || this.mailbox.size > 0) return;
    if (this.status === 'stopping') {
      this.finishDrain();
      return;
    }
    if (this.options.idleMs !== undefined) {
      this.lastActive = this.host.clock.now();
      if (!this.idleTimer) this.idleTimer = this.host.clock.setTimeout(this.idleFired, this.options.idleMs, true);
    }
  }

  private readonly idleFired = (): void => {
    this.idleTimer = null;
    // Busy: the next idleCheckpoint (when the handler settles) re-arms.
    if (this.status !== 'running' || this.inFlight || this.mailbox.size > 0) return;
    const idleMs = this.options.idleMs as number;
    const quiet = this.host.clock.now() - this.lastActive;
    if (quiet >= idleMs) this.options.onIdle?.(this as ActorCell);
    else this.idleTimer = this.host.clock.setTimeout(this.idleFired, idleMs - quiet, true);
  };

  /** Drop the handler in flight (crash, restart, forced stop): its reply fails, its result is ignored. */
  private abandonInFlight(): void {
    this.epoch++;
    if (!this.inFlight) return;
    this.inFlight = false;
    const reply = this.inFlightReply;
    this.inFlightReply = undefined;
    reply?.reject(this.stopReason ?? kernelError('SVC_ERR_ACTOR_STOPPED', `${this.path} stopped while handling this message`));
  }

  // ---- lifecycle ----------------------------------------------------------

  private start(): void {
    if (this.status !== 'starting' && this.status !== 'suspended' && this.status !== 'stopping') return;
    if (this.status === 'stopping' && this.drainFinished) return;
    if (this.status === 'suspended') this.status = 'starting';
    this.incarnations++;
    this.ready = false;
    const epoch = this.epoch;
    const ctx = new IncarnationContext<M>(this, epoch);
    this.ctx = ctx;
    let started: void | Promise<void>;
    try {
      this.logic = this.props.logic();
      started = this.logic.preStart?.(ctx);
    } catch (error) {
      this.crash(error, undefined);
      return;
    }
    if (isThenable(started)) {
      started.then(
        () => epoch === this.epoch && this.started(),
        (error: unknown) => epoch === this.epoch && this.crash(error, undefined),
      );
    } else {
      this.started();
    }
  }

  private started(): void {
    this.ready = true;
    if (this.status === 'starting') this.status = 'running';
    if (this.mailbox.size > 0) this.schedule();
    else this.idleCheckpoint();
  }

  /** This actor failed: its asker gets the error, its parent decides what happens next. */
  crash(error: unknown, reply: Reply | undefined): void {
    reply?.reject(error);
    if (this.status === 'stopping') {
      // Nobody will restart a stopping actor: report, then finish the stop with what is left.
      this.host.reportError(error, this.path);
      this.forceStop();
      return;
    }
    if (this.status === 'stopped' || this.status === 'suspended') {
      this.host.reportError(error, this.path);
      return;
    }
    this.status = 'suspended';
    this.ready = false;
    this.timersMade?.cancelAll();
    this.abandonInFlight();
    if (this.parentCell) this.parentCell.childExited(this as ActorCell, true, error);
    else this.host.unhandledFailure(error, this.path);
  }

  /** Stop children (reverse start order) and run postStop; the mailbox is kept. */
  private teardown(deadlineMs: number): Promise<void> {
    if (!this.tearingDown) {
      this.tearingDown = this.tearDownInside(deadlineMs).finally(() => {
        this.tearingDown = null;
      });
    }
    return this.tearingDown;
  }

  private async tearDownInside(deadlineMs: number): Promise<void> {
    this.timersMade?.cancelAll();
    this.abandonInFlight();
    this.ready = false;
    if (this.startAllTimer) {
      this.host.clock.clearTimeout(this.startAllTimer);
      this.startAllTimer = null;
    }
    const until = this.host.clock.now() + deadlineMs;
    for (const kid of [...this.kids.values()].reverse()) {
      await kid.stopGracefully(Math.max(0, until - this.host.clock.now()));
      if (this.kids.get(kid.name) === kid) this.kids.delete(kid.name);
    }
    const logic = this.logic;
    const ctx = this.ctx;
    this.logic = undefined;
    if (logic?.postStop && ctx) {
      try {
        await logic.postStop(ctx);
      } catch (error) {
        this.host.reportError(error, this.path);
      }
    }
  }

  /** Restart after a crash, after `delayMs`: a fresh logic, a clean restart count, the same mailbox. */
  restartAfter(delayMs: number): void {
    const go = async (): Promise<void> => {
      this.restartTimer = null;
      await this.teardown(0);
      if (this.status !== 'suspended') return;
      this.restarts.clear();
      this.start();
    };
    if (delayMs <= 0) void go();
    else this.restartTimer = this.host.clock.setTimeout(() => void go(), delayMs);
  }

  /**
   * Stop: refuse new messages, drain the mailbox up to the deadline, then stop
   * children in reverse start order and run postStop. Past the deadline (at
   * once when it is 0: a forced stop), whatever is left fails with
   * `SVC_ERR_ACTOR_STOPPED` and counts as dead letters.
   */
  stopGracefully(deadlineMs: number): Promise<void> {
    if (this.restartTimer) {
      // A pending restart or revive is cancelled: the stop wins.
      this.host.clock.clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    if (this.termination) return this.termination.promise;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.termination = { promise, resolve };
    if (this.idleTimer) {
      this.host.clock.clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    const wasLive = this.status === 'running' || this.status === 'starting';
    this.stopUntil = this.host.clock.now() + deadlineMs;
    this.status = 'stopping';
    this.timersMade?.cancelAll();
    this.drainFinished = false;
    if (deadlineMs > 0 && wasLive && (this.mailbox.size > 0 || this.inFlight || !this.ready)) {
      this.stopDeadline = this.host.clock.setTimeout(() => {
        this.stopDeadline = null;
        this.forceStop();
      }, deadlineMs);
      this.schedule();
    } else {
      this.forceStop();
    }
    return promise;
  }

  /** Resolves when a stop under way has finished (undefined when not stopping). */
  whenTerminated(): Promise<void> | undefined {
    return this.termination?.promise;
  }

  /**
   * Forced stop: nothing more is processed, now — also when a graceful stop
   * is under way (its deadline becomes now), or the actor has not started
   * yet. With `reason`, what it still had (queued, in its handler, waiting
   * for it to start) and what reaches it from now on fails with `reason`
   * instead of `SVC_ERR_ACTOR_STOPPED`.
   */
  destroy(reason?: Error): Promise<void> {
    if (reason !== undefined) this.stopReason ??= reason;
    if (this.termination !== null && this.status === 'stopping' && !this.drainFinished) {
      this.stopUntil = this.host.clock.now();
      this.forceStop();
      return this.termination.promise;
    }
    return this.stopGracefully(0);
  }

  private forceStop(): void {
    this.abandonInFlight();
    this.finishDrain();
  }

  private finishDrain(): void {
    if (this.drainFinished) return;
    this.drainFinished = true;
    if (this.stopDeadline) {
      this.host.clock.clearTimeout(this.stopDeadline);
      this.stopDeadline = null;
    }
    this.ready = false;
    this.mailbox.drainTo((msg, reply) => this.dead(msg, reply, 'forced-stop', 'SVC_ERR_ACTOR_STOPPED'));
    const left = Math.max(0, this.stopUntil - this.host.clock.now());
    void this.teardown(Number.isFinite(left) ? left : 0).then(() => this.terminated());
  }

  private terminated(): void {
    this.status = 'stopped';
    // Anything that raced in while postStop ran.
    this.mailbox.drainTo((msg, reply) => this.dead(msg, reply, 'stopped', 'SVC_ERR_ACTOR_STOPPED'));
    this.host.unregister(this as ActorCell);
    this.options.onTerminated?.(this as ActorCell);
    const termination = this.termination;
    this.parentCell?.childTerminated(this as ActorCell, this.selfStopped);
    termination?.resolve();
  }

  /** Bring a permanent actor that exited normally back (same name, same mailbox object). */
  private revive(): void {
    this.restartTimer = null;
    const parent = this.parentCell;
    if (this.status !== 'stopped' || !parent || parent.kids.get(this.name) !== (this as ActorCell) || parent.status !== 'running') return;
    this.termination = null;
    this.selfStopped = false;
    this.drainFinished = false;
    this.stopUntil = Infinity;
    this.status = 'starting';
    this.restarts.clear();
    this.host.register(this as ActorCell);
    this.start();
  }

  // ---- supervision (this cell as parent) ----------------------------------

  private childTerminated(child: ActorCell, normalExit: boolean): void {
    const revive = normalExit && this.status === 'running' && shouldRestart(child.restartType, false);
    // A child about to be revived keeps its name and its place in the start order.
    if (!revive && this.kids.get(child.name) === child) this.kids.delete(child.name);
    if (revive) this.childExited(child, false, undefined);
  }

  /** A child crashed (`crashed`) or stopped itself: apply its restart type and this cell's strategy. */
  childExited(child: ActorCell, crashed: boolean, error: unknown): void {
    if (this.status !== 'running' && this.status !== 'starting') {
      // This supervisor is itself going down: the child goes with it.
      if (crashed) {
        this.decided(child, error, 'stop');
        this.host.reportError(error, child.path);
        void child.stopGracefully(0);
      }
      return;
    }
    if (this.restartingAll && crashed) {
      this.decided(child, error, 'restart-all'); // one-for-all under way: it restarts this child too
      return;
    }
    if (!shouldRestart(child.restartType, crashed)) {
      if (crashed) {
        this.decided(child, error, 'stop');
        void child.stopGracefully(0);
      }
      return;
    }
    const now = this.host.clock.now();
    const log = this.spec.scope === 'child' ? child.ownRestarts : this.restarts;
    if (log.count(now, this.spec.withinMs) >= this.spec.maxRestarts) {
      if (crashed) this.decided(child, error, this.spec.onLimit === 'stop-child' ? 'stop' : 'escalate');
      this.giveUp(child, error);
      return;
    }
    const delay = backoffDelay(this.spec.backoff, child.ownRestarts.count(now, this.spec.withinMs));
    this.restarts.record(now);
    child.ownRestarts.record(now);
    if (crashed) this.decided(child, error, this.spec.strategy === 'one-for-one' ? 'restart' : 'restart-all', delay);
    if (this.spec.strategy === 'one-for-one') this.restartChild(child, crashed, delay);
    else void this.restartAll(child, crashed, delay);
  }

  private restartChild(child: ActorCell, crashed: boolean, delay: number): void {
    if (crashed) child.restartAfter(delay);
    else if (delay <= 0) child.revive();
    else child.restartTimer = this.host.clock.setTimeout(() => child.revive(), delay);
  }

  /** one-for-all: stop everyone in reverse start order, then start everyone again in start order. */
  private async restartAll(failed: ActorCell, crashed: boolean, delay: number): Promise<void> {
    this.restartingAll = true;
    const everyone = [...this.kids.values()];
    for (const kid of [...everyone].reverse()) {
      if (kid !== failed && kid.restartType === 'temporary') {
        await kid.stopGracefully(0);
      } else if (kid.status !== 'stopped') {
        if (kid.status !== 'suspended') kid.status = 'suspended';
        await kid.teardown(0);
      }
    }
    const startAll = (): void => {
      this.startAllTimer = null;
      this.restartingAll = false;
      if (this.status !== 'running') return;
      for (const kid of everyone) {
        if (this.kids.get(kid.name) !== kid) continue;
        if (kid === failed && !crashed) kid.revive();
        else if (kid.status === 'suspended') {
          kid.restarts.clear();
          kid.start();
        }
      }
    };
    if (delay <= 0) startAll();
    else this.startAllTimer = this.host.clock.setTimeout(startAll, delay);
  }

  /** Tell observers what this supervisor does about a crashed child. */
  private decided(child: ActorCell, error: unknown, decision: SupervisorDecision, delayMs = 0): void {
    this.host.observers.restart(child, error, decision, delayMs);
  }

  /** Restart limit exceeded: stop the child, then escalate or report as the spec says. */
  private giveUp(child: ActorCell, error: unknown): void {
    const within = this.spec.scope === 'child' ? 'of its own' : 'under its supervisor';
    const escalated = kernelError(
      'SVC_ERR_RESTART_LIMIT',
      `${child.path} exceeded ${this.spec.maxRestarts} restarts ${within} within ${this.spec.withinMs} ms`,
      error,
    );
    if (this.kids.get(child.name) === child) this.kids.delete(child.name);
    void child.stopGracefully(0);
    if (this.spec.onLimit === 'stop-child') {
      this.host.reportError(escalated, child.path);
    } else if (this.parentCell) {
      this.crash(escalated, undefined);
    } else {
      this.restarts.clear();
      this.host.unhandledFailure(escalated, this.path);
    }
  }
}
