/**
 * One thread's metrics: the HTTP and run recorders, and the runtime's own
 * figures from its observers (kernel and store diagnostics channels, the
 * front, the WebSocket hub, the broker) in a prom-client registry of this
 * thread. Gauges are read when scraped; counters and histograms are fed by
 * the observers. {@link ThreadMetrics.snapshot} hands everything over as
 * prom-client metric JSON, which the scraping thread merges with the other
 * threads' ({@link renderMetrics}).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram as PromHistogram, Registry } from 'prom-client';
import { KERNEL_CHANNELS, type ActivationEvent, type MailboxFullEvent, type RestartEvent } from '../../kernel/index.ts';
import { FORWARD_CHANNEL, type ForwardEvent, RUN_CHANNEL, type RunEvent, STORE_COMMIT_CHANNEL, type StoreCommitEvent } from '../../actors/graph/index.ts';
import { Histogram, HttpRecorder, type MetricJson, RunRecorder } from './recorder.ts';

export interface MetricsSettings {
  namespace: string;
  /** Upper bounds of the duration histograms, in seconds. */
  buckets: readonly number[];
  /** `{ns}_walker_duration_seconds` per run. */
  walkerMetrics: boolean;
}

/** What a thread's runtime figures are read from (each looked up when scraped: a service may come later, or not at all). */
export interface ThreadSources {
  thread: string;
  /** Requests in hand on this thread's front. */
  inFlight?: () => number | undefined;
  actors?: () => number;
  /** Each live actor's mailbox high-water mark, by label (the kernel's). */
  mailboxes?: () => Map<string, number>;
  partitions?: () => number;
  websockets?: () => { connections: number; broadcasts: number; sessions: number; rooms?: { rooms: number; members: number; sent: number; delivered: number; joins: number; leaves: number; dropped: number } } | undefined;
  broker?: () => { kind: string; counters: object } | undefined;
  /** Event-stream lag by topic and group (asked of one thread only: the figures are the cluster's). */
  lag?: () => Promise<{ topic: string; group: string; lag: number | null; pending: number }[]>;
}

export class ThreadMetrics {
  readonly http: HttpRecorder;
  readonly runs: RunRecorder | undefined;
  readonly registry = new Registry();
  /** Runs asked of a partition on another thread or member, by target and outcome (a hot path: plain numbers). */
  private readonly forwarded = new Map<string, Histogram>();
  private readonly offs: (() => void)[] = [];
  private readonly refusals: Counter;

  constructor(
    readonly settings: MetricsSettings,
    sources: ThreadSources,
  ) {
    const ns = settings.namespace;
    const reg = [this.registry];
    this.http = new HttpRecorder(ns, settings.buckets);
    this.runs = settings.walkerMetrics ? new RunRecorder(ns, settings.buckets) : undefined;
    if (this.runs) {
      const runs = this.runs;
      this.on(RUN_CHANNEL, (e) => runs.record((e as RunEvent).name, (e as RunEvent).ok, (e as RunEvent).durationMs / 1000));
    }

    new Gauge({
      name: `${ns}_http_requests_in_progress`,
      help: 'HTTP requests being handled (the metrics endpoint left out)',
      registers: reg,
      collect() {
        this.set(sources.inFlight?.() ?? 0);
      },
    });
    new Gauge({
      name: `${ns}_actors`,
      help: 'Live actors by kind: partition (one per active graph), session (one per WebSocket connection), other (guardians, consumers, writers, ...)',
      labelNames: ['kind'],
      registers: reg,
      collect() {
        const all = sources.actors?.() ?? 0;
        const partitions = sources.partitions?.() ?? 0;
        const sessions = sources.websockets?.()?.sessions ?? 0;
        this.set({ kind: 'partition' }, partitions);
        this.set({ kind: 'session' }, sessions);
        this.set({ kind: 'other' }, Math.max(0, all - partitions - sessions));
      },
    });
    new Gauge({
      name: `${ns}_partitions_active`,
      help: 'Graph partitions (one per root) active in memory',
      registers: reg,
      collect() {
        this.set(sources.partitions?.() ?? 0);
      },
    });
    new Gauge({
      name: `${ns}_thread_heap_used_bytes`,
      help: 'V8 heap in use, by thread',
      labelNames: ['thread'],
      registers: reg,
      collect() {
        this.set({ thread: sources.thread }, process.memoryUsage().heapUsed);
      },
    });

    // This thread's event loop: a walker that blocks it shows here (prom-client's nodejs_* figures are the main thread's).
    const delay = monitorEventLoopDelay({ resolution: 20 });
    delay.enable();
    this.offs.push(() => delay.disable());
    new Gauge({
      name: `${ns}_thread_event_loop_delay_seconds`,
      help: 'Event-loop delay of each thread since the previous scrape (p50, p99, max)',
      labelNames: ['thread', 'stat'],
      registers: reg,
      collect() {
        const thread = sources.thread;
        if (delay.count > 0) {
          this.set({ thread, stat: 'p50' }, delay.percentile(50) / 1e9);
          this.set({ thread, stat: 'p99' }, delay.percentile(99) / 1e9);
          this.set({ thread, stat: 'max' }, delay.max / 1e9);
        }
        delay.reset();
      },
    });

    this.refusals = new Counter({
      name: `${ns}_requests_refused_total`,
      help: 'Requests answered 503 because this member or what it needs could not serve them then (not a member, a member down, Redis or the database unreachable, a graph moved), by error code: counted here, not logged one by one',
      labelNames: ['code'],
      registers: reg,
    });
    const activations = new Counter({ name: `${ns}_actor_activations_total`, help: 'Virtual actors activated (partitions: a graph loaded into memory), by kind', labelNames: ['kind'], registers: reg });
    const deactivations = new Counter({ name: `${ns}_actor_deactivations_total`, help: 'Virtual actors deactivated (idle, moved or stopped), by kind', labelNames: ['kind'], registers: reg });
    this.on(KERNEL_CHANNELS.activation, (e) => activations.inc({ kind: (e as ActivationEvent).kind }));
    this.on(KERNEL_CHANNELS.deactivation, (e) => deactivations.inc({ kind: (e as ActivationEvent).kind }));
    const restarts = new Counter({ name: `${ns}_actor_failures_total`, help: 'Supervised actors that crashed, by actor and what their supervisor decided', labelNames: ['actor', 'decision'], registers: reg });
    this.on(KERNEL_CHANNELS.restart, (e) => restarts.inc({ actor: (e as RestartEvent).label, decision: (e as RestartEvent).decision }));
    const full = new Counter({ name: `${ns}_mailbox_rejections_total`, help: 'Messages shed by a full mailbox, by actor', labelNames: ['actor'], registers: reg });
    this.on(KERNEL_CHANNELS.mailboxFull, (e) => full.inc({ actor: (e as MailboxFullEvent).label }));
    // Mailbox depth: the kernel keeps each mailbox's high-water mark (one comparison per message); read when scraped,
    // kept here past the actor's end.
    const depths = new Map<string, number>();
    const hwm = new Gauge({
      name: `${ns}_mailbox_depth_high_water`,
      help: 'Most messages one mailbox has held at once, by actor (high-water mark since start; the highest of the threads)',
      labelNames: ['actor'],
      registers: reg,
      aggregator: 'max',
      collect: () => {
        for (const [actor, depth] of sources.mailboxes?.() ?? []) if (depth > (depths.get(actor) ?? 0)) depths.set(actor, depth);
        for (const [actor, depth] of depths) hwm.set({ actor }, depth);
      },
    });

    this.on(FORWARD_CHANNEL, (e) => {
      const { target, ok, durationMs } = e as ForwardEvent;
      const key = `${target} ${ok}`;
      let h = this.forwarded.get(key);
      if (h === undefined) this.forwarded.set(key, (h = new Histogram(settings.buckets)));
      h.observe(durationMs / 1000);
    });

    const commits = new PromHistogram({ name: `${ns}_store_commit_duration_seconds`, help: 'Graph store commits (one per writing run or batch), by backend and outcome', labelNames: ['store', 'outcome'], buckets: [...settings.buckets], registers: reg });
    this.on(STORE_COMMIT_CHANNEL, (e) => commits.observe({ store: (e as StoreCommitEvent).store, outcome: (e as StoreCommitEvent).outcome }, (e as StoreCommitEvent).durationMs / 1000));

    new Gauge({
      name: `${ns}_websocket_connections`,
      help: 'Open WebSocket connections',
      registers: reg,
      collect() {
        this.set(sources.websockets?.()?.connections ?? 0);
      },
    });
    new Counter({
      name: `${ns}_websocket_broadcasts_total`,
      help: 'Broadcast replies sent to the clients of a broadcast WebSocket walker',
      registers: reg,
      collect() {
        this.reset();
        this.inc(sources.websockets?.()?.broadcasts ?? 0);
      },
    });

    new Gauge({
      name: `${ns}_websocket_rooms`,
      help: 'Rooms with connections on this worker thread',
      registers: reg,
      collect() {
        this.set(sources.websockets?.()?.rooms?.rooms ?? 0);
      },
    });
    new Gauge({
      name: `${ns}_websocket_room_members`,
      help: 'Connections in rooms on this worker thread (a connection in three rooms counts three times)',
      registers: reg,
      collect() {
        this.set(sources.websockets?.()?.rooms?.members ?? 0);
      },
    });
    const roomMessages = new Counter({
      name: `${ns}_websocket_room_messages_total`,
      help: 'Messages to rooms, users and connections: sent from this thread, fanned out to its connections (one publish to a topic, whatever the number of receivers), dropped (a room actor that could not take it)',
      labelNames: ['outcome'],
      registers: reg,
      collect: () => {
        const r = sources.websockets?.()?.rooms;
        roomMessages.reset();
        if (!r) return;
        roomMessages.inc({ outcome: 'sent' }, r.sent);
        roomMessages.inc({ outcome: 'delivered' }, r.delivered);
        roomMessages.inc({ outcome: 'dropped' }, r.dropped);
      },
    });
    const roomChanges = new Counter({
      name: `${ns}_websocket_room_changes_total`,
      help: 'Connections joining and leaving rooms on this thread',
      labelNames: ['op'],
      registers: reg,
      collect: () => {
        const r = sources.websockets?.()?.rooms;
        roomChanges.reset();
        if (!r) return;
        roomChanges.inc({ op: 'join' }, r.joins);
        roomChanges.inc({ op: 'leave' }, r.leaves);
      },
    });

    const events = new Counter({
      name: `${ns}_events_total`,
      help: 'Event streaming: events published, failed to publish, dropped (buffer full), refused (over max_event_bytes), delivered, handled, retried and dead-lettered',
      labelNames: ['outcome'],
      registers: reg,
      collect: () => {
        const b = sources.broker?.();
        events.reset();
        if (!b || b.kind === 'disabled') return;
        for (const [outcome, n] of Object.entries(b.counters as Record<string, number>)) if (outcome !== 'buffered' && outcome !== 'buffered_bytes') events.inc({ outcome }, n);
      },
    });
    new Gauge({
      name: `${ns}_events_buffered`,
      help: 'Published events held in memory while the broker cannot be reached',
      registers: reg,
      collect() {
        this.set((sources.broker?.()?.counters as { buffered?: number } | undefined)?.buffered ?? 0);
      },
    });
    new Gauge({
      name: `${ns}_events_buffered_bytes`,
      help: 'Bytes of the published events held in memory while the broker cannot be reached',
      registers: reg,
      collect() {
        this.set((sources.broker?.()?.counters as { buffered_bytes?: number } | undefined)?.buffered_bytes ?? 0);
      },
    });
    if (sources.lag) {
      const lag = sources.lag;
      // prom-client collects a registry's metrics at once (their gets run side by side): a gauge set from another's
      // collect would be read before it is set. Each gauge sets its own values, from one read of the lag per scrape.
      let reading: ReturnType<typeof lag> | undefined;
      const read = () => (reading ??= lag().catch(() => []).finally(() => (reading = undefined)));
      new Gauge({
        name: `${ns}_event_stream_lag`,
        help: 'Entries of a topic not yet delivered to a consumer group',
        labelNames: ['topic', 'group'],
        registers: reg,
        async collect() {
          const groups = await read();
          this.reset();
          for (const g of groups) if (g.lag !== null) this.set({ topic: g.topic, group: g.group }, g.lag);
        },
      });
      new Gauge({
        name: `${ns}_event_stream_pending`,
        help: 'Entries of a topic delivered to a consumer group and not acknowledged yet',
        labelNames: ['topic', 'group'],
        registers: reg,
        async collect() {
          const groups = await read();
          this.reset();
          for (const g of groups) this.set({ topic: g.topic, group: g.group }, g.pending);
        },
      });
    }
  }

  /** A request answered 503 `code` because of an outage it expects (see `requests_refused_total`). */
  refused(code: string): void {
    this.refusals.inc({ code });
  }

  private on(name: string, fn: (message: unknown) => void): void {
    subscribe(name, fn);
    this.offs.push(() => unsubscribe(name, fn));
  }

  /** Everything this thread measured, as prom-client metric JSON. */
  async snapshot(): Promise<MetricJson[]> {
    const own = await this.registry.getMetricsAsJSON();
    const name = `${this.settings.namespace}_forwarded_request_duration_seconds`;
    const forwarded: MetricJson = { name, help: 'Walker and function runs handed to the partition owner on another thread or cluster member, by target and success', type: 'histogram', values: [], aggregator: 'sum' };
    for (const [key, h] of this.forwarded) {
      const [target, ok] = key.split(' ') as [string, string];
      forwarded.values.push(...h.values(name, { target, success: ok }));
    }
    return [...this.http.toJSON(), ...(this.runs?.toJSON() ?? []), forwarded, ...(own as unknown as MetricJson[])];
  }

  /** Stop listening to the observers. */
  close(): void {
    for (const off of this.offs.splice(0)) off();
  }
}
