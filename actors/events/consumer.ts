/**
 * Event consumers as actors: one per subscription per process, under a
 * supervisor. The actor owns its subscription's delivery loop; a handler that
 * throws is a retry inside the loop, while a fault of the loop itself crashes
 * the actor and the supervisor restarts it with backoff (a fresh loop that
 * reads its own pending entries again first).
 *
 * @example
 * const consumers = startConsumers(system, broker, [{ name: 'onOrder', spec }]);
 * await consumers.ready;            // every consumer group exists
 * await consumers.drain(10_000);    // stop fetching, finish handlers in hand
 */
import { type ActorRef, type ActorSystem, type Props } from '../../kernel/index.ts';
import type { Broker } from './broker.ts';
import { type RunnerSpec, SubscriptionRunner } from './subscription-runner.ts';

/** The supervisor's name under `/user`. */
export const CONSUMERS_ACTOR = 'consumers';

type ConsumerMsg = { t: 'crashed'; error: unknown } | { t: 'drain'; deadlineMs: number } | { t: 'status' };
type SupervisorMsg = { t: 'drain'; deadlineMs: number } | { t: 'status' };

export interface ConsumerStatus {
  name: string;
  topic: string;
  group: string;
  /** Entries held (fetched ahead, running, waiting for a retry or for their acknowledgement). */
  holding: number;
  /** Incarnations so far: 1 + restarts. */
  starts: number;
}

export interface Consumers {
  /** The supervisor (its children are the consumers). */
  ref: ActorRef;
  /** Stop fetching; handlers in hand finish and are acknowledged within the deadline. */
  drain(deadlineMs: number): Promise<void>;
  status(): Promise<ConsumerStatus[]>;
}

function consumerProps(broker: Broker, name: string, spec: RunnerSpec, starts: { n: number }): Props<ConsumerMsg, unknown> {
  // What this consumer holds, across its restarts: a new incarnation does not take again what the last one still handles.
  const held = new Set<string>();
  return {
    restart: 'permanent',
    logic: () => {
      let runner: SubscriptionRunner | undefined;
      return {
        preStart(ctx) {
          starts.n++;
          const mine = new SubscriptionRunner(broker, { ...spec, held });
          runner = mine;
          mine.run().catch((error: unknown) => {
            if (runner === mine) ctx.self.tell({ t: 'crashed', error });
          });
        },
        async receive(msg) {
          if (msg.t === 'crashed') throw msg.error; // the supervisor restarts this consumer
          if (msg.t === 'drain') return runner?.stopAndDrain(msg.deadlineMs);
          return { name, topic: spec.topic, group: spec.group, holding: runner?.holding ?? 0, starts: starts.n } satisfies ConsumerStatus;
        },
        async postStop() {
          const old = runner;
          runner = undefined;
          await old?.stopAndDrain(0);
        },
      };
    },
  };
}

/** Start the supervisor and one consumer per subscription. */
export function startConsumers(system: ActorSystem, broker: Broker, subscriptions: { name: string; spec: RunnerSpec }[]): Consumers {
  const children: ActorRef<ConsumerMsg, unknown>[] = [];
  const ref = system.spawn(
    {
      logic: () => ({
        preStart(ctx) {
          for (const { name, spec } of subscriptions) children.push(ctx.spawn(consumerProps(broker, name, spec, { n: 0 }), encodeURIComponent(name)));
        },
        receive: async (msg: SupervisorMsg) => {
          if (msg.t === 'drain') {
            await Promise.all(children.map((c) => c.ask({ t: 'drain', deadlineMs: msg.deadlineMs }, msg.deadlineMs + 1000).catch(() => undefined)));
            return true;
          }
          return Promise.all(children.map((c) => c.ask({ t: 'status' }, 5000)));
        },
      }),
      // A consumer that keeps failing is restarted with growing waits, never given up on.
      supervision: { strategy: 'one-for-one', scope: 'child', maxRestarts: 1_000_000, withinMs: 60_000, backoff: { minMs: 200, maxMs: 30_000, factor: 2 }, onLimit: 'stop-child' },
    },
    CONSUMERS_ACTOR,
  );
  return {
    ref,
    drain: async (deadlineMs) => {
      await ref.ask({ t: 'drain', deadlineMs } satisfies SupervisorMsg, deadlineMs + 2000);
    },
    status: () => ref.ask({ t: 'status' } satisfies SupervisorMsg, 5000) as Promise<ConsumerStatus[]>,
  };
}
