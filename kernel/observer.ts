/**
 * Watching the kernel from outside: a {@link KernelObserver} given to the
 * system (`new ActorSystem({ observer })`), and the same events on
 * `node:diagnostics_channel` channels ({@link KERNEL_CHANNELS}), the way undici
 * publishes its own. Metrics and traces subscribe; the kernel's code does not
 * call them.
 *
 * Cost: with no observer callback and no channel subscriber, an event builds
 * nothing. For messages, a mailbox run asks once whether anyone listens
 * (observers, `hasSubscribers`) and each message then pays one branch on a
 * local; so a channel subscriber added while an actor works through its
 * mailbox hears that actor's messages from its next run.
 */
import { channel } from 'node:diagnostics_channel';
import type { OverflowPolicy } from './mailbox.ts';

/**
 * An actor's bounded name for metrics: its path, with generated names (`$3`)
 * written `$` and a virtual actor's activation written `$<kind>` (no key).
 * Name children after roles, not ids, and it stays bounded.
 */
export type ActorLabel = string;

/** A message taken from a mailbox, about to be handled. */
export interface ReceiveEvent {
  label: ActorLabel;
  path: string;
  node: string;
  /** Messages still waiting in the mailbox behind this one. */
  depth: number;
}

/**
 * What a supervisor did about a crashed child: restart it (after `delayMs`),
 * restart all its children (one-for-all), stop it (a temporary child, a
 * supervisor going down, or past the restart limit with `onLimit:
 * 'stop-child'`), or escalate (past the limit: the supervisor fails in turn,
 * or, at the top, the system's `onFailure` gets it).
 */
export type SupervisorDecision = 'restart' | 'restart-all' | 'stop' | 'escalate';

/** A supervised actor crashed, and what its supervisor decided. */
export interface RestartEvent {
  label: ActorLabel;
  path: string;
  node: string;
  error: unknown;
  decision: SupervisorDecision;
  /** Backoff before the restart (0 unless `decision` restarts). */
  delayMs: number;
}

/** A message shed by a full mailbox: the new one (`reject`) or the oldest waiting (`drop-oldest`). */
export interface MailboxFullEvent {
  label: ActorLabel;
  path: string;
  node: string;
  capacity: number;
  overflow: OverflowPolicy;
  message: unknown;
}

/** A virtual actor activated here (its cell created), or deactivated (its cell stopped). */
export interface ActivationEvent {
  kind: string;
  key: string;
  node: string;
  path: string;
}

/**
 * Optional callbacks on kernel events. Each is called synchronously where the
 * event happens, so keep it short (count, record, hand off); one that throws
 * is caught, reported once through the system's `onError`, and called again
 * next time. `onReceive` runs for every message: leave it out unless needed.
 *
 * @example
 * const received = new Map<string, number>();
 * const system = new ActorSystem({
 *   observer: {
 *     onReceive: (e) => received.set(e.label, (received.get(e.label) ?? 0) + 1),
 *     onRestart: (e) => log.warn({ actor: e.path, decision: e.decision }, 'actor crashed'),
 *   },
 * });
 */
export interface KernelObserver {
  onReceive?(event: ReceiveEvent): void;
  onRestart?(event: RestartEvent): void;
  onMailboxFull?(event: MailboxFullEvent): void;
  onActivation?(event: ActivationEvent): void;
  onDeactivation?(event: ActivationEvent): void;
}

/**
 * The `node:diagnostics_channel` names, published only while the channel has
 * subscribers. Each message is the event object observers get.
 *
 * @example
 * import { subscribe } from 'node:diagnostics_channel';
 * subscribe(KERNEL_CHANNELS.restart, (e) => crashes.inc({ actor: (e as RestartEvent).label }));
 */
export const KERNEL_CHANNELS = {
  receive: 'svc:kernel:receive',
  restart: 'svc:kernel:restart',
  mailboxFull: 'svc:kernel:mailbox-full',
  activation: 'svc:kernel:activation',
  deactivation: 'svc:kernel:deactivation',
} as const;

interface KernelEvents {
  receive: ReceiveEvent;
  restart: RestartEvent;
  mailboxFull: MailboxFullEvent;
  activation: ActivationEvent;
  deactivation: ActivationEvent;
}
type EventName = keyof KernelEvents;

const CALLBACKS = {
  receive: 'onReceive',
  restart: 'onRestart',
  mailboxFull: 'onMailboxFull',
  activation: 'onActivation',
  deactivation: 'onDeactivation',
} as const satisfies Record<EventName, keyof KernelObserver>;

const NAMES = Object.keys(KERNEL_CHANNELS) as EventName[];

// One set per process (diagnostics_channel keys channels by name): `subscribe(name, fn)` anywhere reaches these.
const channels = Object.fromEntries(NAMES.map((name) => [name, channel(KERNEL_CHANNELS[name])])) as {
  [K in EventName]: ReturnType<typeof channel>;
};

type Listener<E> = (event: E) => void;

/** The thing whose messages are observed (an actor cell, kept narrow to avoid an import cycle). */
export interface Observed {
  readonly path: string;
  readonly label: ActorLabel;
}

/**
 * The observers of one system, fanned out, each isolated: the kernel calls
 * this, never an observer directly.
 */
export class Observers {
  private readonly listeners: { [K in EventName]: Listener<KernelEvents[K]>[] } = {
    receive: [],
    restart: [],
    mailboxFull: [],
    activation: [],
    deactivation: [],
  };

  constructor(
    private readonly node: string,
    observer: KernelObserver | readonly KernelObserver[] | undefined,
    report: (error: unknown, where: string) => void,
  ) {
    const list: readonly KernelObserver[] = observer === undefined ? [] : Array.isArray(observer) ? observer : [observer as KernelObserver];
    list.forEach((o, i) => {
      for (const name of NAMES) {
        const callback = o[CALLBACKS[name]] as Listener<KernelEvents[typeof name]> | undefined;
        if (typeof callback !== 'function') continue;
        let reported = false;
        (this.listeners[name] as Listener<KernelEvents[typeof name]>[]).push((event) => {
          try {
            callback.call(o, event);
          } catch (error) {
            // Once: an observer failing on every message must not flood the log.
            if (reported) return;
            reported = true;
            report(error, `observer[${i}].${CALLBACKS[name]}`);
          }
        });
      }
    });
  }

  /**
   * Once per mailbox run: the function to call for each message, or
   * `undefined` when nobody listens (then the loop pays one branch a message).
   */
  receiver(): ((cell: Observed, depth: number) => void) | undefined {
    return this.listeners.receive.length > 0 || channels.receive.hasSubscribers ? this.received : undefined;
  }

  private readonly received = (cell: Observed, depth: number): void => {
    this.emit('receive', { label: cell.label, path: cell.path, node: this.node, depth });
  };

  /** Whether an event would reach anyone: build it only then. */
  wants(name: Exclude<EventName, 'receive'>): boolean {
    return this.listeners[name].length > 0 || channels[name].hasSubscribers;
  }

  restart(cell: Observed, error: unknown, decision: SupervisorDecision, delayMs = 0): void {
    if (this.wants('restart')) this.emit('restart', { label: cell.label, path: cell.path, node: this.node, error, decision, delayMs });
  }

  mailboxFull(cell: Observed, capacity: number, overflow: OverflowPolicy, message: unknown): void {
    if (this.wants('mailboxFull')) this.emit('mailboxFull', { label: cell.label, path: cell.path, node: this.node, capacity, overflow, message });
  }

  activation(name: 'activation' | 'deactivation', kind: string, key: string, path: string): void {
    if (this.wants(name)) this.emit(name, { kind, key, node: this.node, path });
  }

  private emit<K extends EventName>(name: K, event: KernelEvents[K]): void {
    for (const fn of this.listeners[name]) fn(event);
    const ch = channels[name];
    if (ch.hasSubscribers) ch.publish(event);
  }
}
