/**
 * The memory streams of a process, served by one actor (on the main thread
 * under `svc start`) to every worker thread: an event published on one thread
 * reaches a consumer on another, as with Redis. Blocking reads answer later
 * (`replyLater`) so the actor keeps serving the others meanwhile.
 *
 * @example
 * serveMemoryStreams(mainSystem, new MemoryStreams());                  // main thread
 * const streams = new ActorStreams(workerSystem, MAIN_THREAD);          // any worker thread
 * await streams.add('svc:events:orders', payload, 100_000);
 */
import { type ActorSystem, fromReceive, replyLater } from '../../kernel/index.ts';
import type { MemoryStreams } from './streams.ts';
import type { StartFrom, StreamBackend, StreamEntry, StreamInfo } from '../../actors/events/index.ts';

/** The actor's name under `/user`. */
export const EVENTS_MEMORY_ACTOR = 'events-memory';

type Op = 'add' | 'ensureGroup' | 'read' | 'ack' | 'claim' | 'touch' | 'info' | 'streams';
interface StreamsMsg {
  op: Op;
  args: unknown[];
}

/** Serve `streams` to the threads of this process (once per system). */
export function serveMemoryStreams(system: ActorSystem, streams: MemoryStreams): void {
  if (system.lookup(`/user/${EVENTS_MEMORY_ACTOR}`)) return;
  system.spawn(
    fromReceive(
      (msg: StreamsMsg) => {
        const call = (streams[msg.op] as (...args: unknown[]) => Promise<unknown>).apply(streams, msg.args);
        return replyLater(call);
      },
      { capacity: 100_000 },
    ),
    EVENTS_MEMORY_ACTOR,
  );
}

/** Whether this system serves the memory streams itself. */
export function servesMemoryStreams(system: ActorSystem): boolean {
  return system.lookup(`/user/${EVENTS_MEMORY_ACTOR}`) !== undefined;
}

/** The memory streams of the process, reached from any of its threads. */
export class ActorStreams implements StreamBackend {
  readonly kind = 'memory' as const;
  private closed = false;

  constructor(
    private readonly system: ActorSystem,
    private readonly node: string,
  ) {}

  private ask<T>(op: Op, args: unknown[], timeoutMs = 10_000): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the event streams are closed'));
    return this.system.refFromAddress({ node: this.node, path: `/user/${EVENTS_MEMORY_ACTOR}` }).ask({ op, args } satisfies StreamsMsg, timeoutMs) as Promise<T>;
  }

  add(stream: string, payload: string, maxLen: number, maxBytes = 0): Promise<string> {
    return this.ask('add', [stream, payload, maxLen, maxBytes]);
  }
  ensureGroup(stream: string, group: string, startFrom: StartFrom): Promise<boolean> {
    return this.ask('ensureGroup', [stream, group, startFrom]);
  }
  async read(stream: string, group: string, consumer: string, count: number, blockMs: number, pending = false): Promise<StreamEntry[]> {
    if (this.closed) return [];
    return this.ask('read', [stream, group, consumer, count, blockMs, pending], blockMs + 10_000);
  }
  ack(stream: string, group: string, ids: readonly string[]): Promise<number> {
    return this.ask('ack', [stream, group, [...ids]]);
  }
  claim(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    return this.ask('claim', [stream, group, consumer, minIdleMs, count]);
  }
  touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<void> {
    return this.ask('touch', [stream, group, consumer, [...ids]]);
  }
  info(stream: string): Promise<StreamInfo | undefined> {
    return this.ask('info', [stream]);
  }
  streams(prefix: string): Promise<string[]> {
    return this.ask('streams', [prefix]);
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}
