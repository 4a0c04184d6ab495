/**
 * The messages between the load engine (engine.ts) and its generator threads
 * (engine-worker.ts): the share of the plan a thread runs, what it reports,
 * and the start signal.
 */
import type { PreparedRequest } from './types.ts';

/** What one thread runs: its share of the plan. */
export interface ThreadPlan {
  thread: number;
  /** The origin's host and port, and the `host` header to send. */
  host: string;
  port: number;
  hostHeader: string;
  requests: PreparedRequest[];
  mode: 'closed' | 'open';
  /** Closed loop: this thread's connections; open loop: the most it may open. */
  connections: number;
  /** Open loop: this thread's requests per second, and its schedule's offset (ms) so threads interleave. */
  rate: number;
  phase_ms: number;
  warmup_s: number;
  duration_s: number;
  timeout_ms: number;
  /** Open loop: requests due but unsent beyond this are dropped (counted as `dropped`). */
  backlog_cap: number;
}

/** A thread's tallies for one request of the plan over the measured part. */
export interface RequestTally {
  requests: number;
  errors: number;
  by_status: Record<string, number>;
  by_code: Record<string, number>;
  /** Encoded (histogram.ts) latencies of the answers. */
  histogram: string;
}

export type ThreadMessage =
  | { type: 'ready' }
  /**
   * One interval ended: `t` is seconds since the measured part began (≤ 0 while warming up), by
   * the plan; `span_s` is how long it really lasted (a timer can fire late on a busy thread).
   */
  | { type: 'tick'; index: number; t: number; span_s: number; requests: number; errors: number; histogram: string; backlog: number }
  | {
      type: 'final';
      /** How long the measured part really lasted. */
      measured_s: number;
      requests: RequestTally[];
      /** Not tied to a request of the plan: `dropped` (open loop, never sent). */
      other: Record<string, number>;
      /** Requests still in flight at the end, younger than the timeout (older ones are counted as `timeout`). */
      in_flight_end: number;
      backlog_max: number;
      backlog_end: number;
    }
  | { type: 'failed'; message: string };

export type MainMessage = { type: 'start' };
