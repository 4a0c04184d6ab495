/**
 * One generator thread's load: keep-alive HTTP/1.1 connections on raw
 * `node:net` sockets, the closed or open loop, and per-second partial results
 * for the main thread (engine.ts).
 *
 * Raw sockets because the generator must outrun a uWebSockets.js server on
 * one core: undici/fetch spend several µs per request on machinery a bench
 * does not need. One request in flight per connection (no pipelining), so a
 * latency is one request's.
 */
import { connect, type Socket } from 'node:net';
import { createHistogram, encodeHistogram, recordUs, type Histogram } from './histogram.ts';
import type { ThreadMessage, ThreadPlan } from './engine-messages.ts';
import { envelopeCode, ResponseParser, type ResponseSink } from './response-parser.ts';
import { wire, type Wire } from './request-wire.ts';
import type { BodyContext } from './types.ts';

/** One socket's life: replaced by a new `Conn` when it closes. */
class Conn implements ResponseSink {
  readonly socket: Socket;
  readonly parser: ResponseParser;
  /** The request in flight (index into the plan's requests), or -1. */
  req = -1;
  /**
   * The request chosen for this connection before it connected (sent first on it), or -1: a
   * connection failing before anything was sent is that request's failure.
   */
  next = -1;
  /** When it was written (timeouts), and where its latency starts (the due time, open loop). */
  sentAt = 0;
  startAt = 0;
  connected = false;
  dead = false;

  constructor(
    private readonly gen: Generator,
    host: string,
    port: number,
    readBuffer: Buffer,
  ) {
    const parser = new ResponseParser(this);
    this.parser = parser;
    // Reads land in the thread's one buffer, straight to the parser: no Buffer per read, no stream machinery.
    const socket = connect({ host, port, noDelay: true, onread: { buffer: readBuffer, callback: (n) => (parser.execute(readBuffer, n), true) } });
    this.socket = socket;
    socket.on('connect', () => {
      this.connected = true;
      gen.opened(this);
    });
    // EOF: a body delimited by the close ends; a request still in flight was cut.
    socket.on('end', () => {
      this.parser.end();
      gen.broken(this, 'socket');
    });
    socket.on('error', () => gen.broken(this, 'socket'));
    socket.on('close', () => gen.broken(this, 'socket'));
  }

  onResponse(status: number, body: Buffer | null, close: boolean): void {
    this.gen.answered(this, status, body, close);
  }

  onProtocolError(): void {
    this.gen.broken(this, 'protocol');
  }
}

/** Ends of the intervals reported to the main thread, from the start (ms). */
interface Bound {
  at: number;
  t: number;
  measured: boolean;
}

/** Seconds of warm-up, then of the measured part (the last one may be shorter). */
function bounds(warmup_s: number, duration_s: number): Bound[] {
  const out: Bound[] = [];
  const w = warmup_s * 1000;
  const e = w + duration_s * 1000;
  for (let from = 0; from < e; ) {
    const at = Math.min(from + 1000, from < w ? w : e);
    out.push({ at, t: (at - w) / 1000, measured: from >= w });
    from = at;
  }
  return out;
}

interface Tally {
  requests: number;
  errors: number;
  status: Uint32Array;
  codes: Map<string, number>;
  second: Histogram;
  total: Histogram;
}

const inc = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);

/** Retry a refused connection after this long (ms), not in a busy loop. */
const CONNECT_RETRY_MS = 100;

/**
 * One thread's load: `prepare()` (bodies, first connections), `start()`,
 * then `report` gets a tick per interval and a final tally; `stop()`
 * closes everything early.
 * @example const g = new Generator(plan, (m) => port.postMessage(m)); await g.prepare(); g.start();
 */
export class Generator {
  private wires: Wire[] = [];
  private readonly cumulative: Float64Array;
  private readonly weight: number;
  private readonly tallies: Tally[];
  private readonly other = new Map<string, number>();
  private readonly conns = new Set<Conn>();
  private readonly idle: Conn[] = [];
  private readonly all = createHistogram();
  private readonly readBuffer = Buffer.allocUnsafe(64 * 1024);
  private addr = '';
  private running = false;
  private stopped = false;
  private measuring = false;
  private t0 = 0;
  /** When the last interval ended, and the measured time so far (ms). */
  private lastBound = 0;
  private measuredMs = 0;
  private sent = 0;
  private secRequests = 0;
  private secErrors = 0;
  /** Closed loop: connections to reopen; open loop: no new connection before `retryAt`. */
  private missing = 0;
  private retryAt = 0;
  private timers: NodeJS.Timeout[] = [];
  private boundary: NodeJS.Timeout | undefined;
  private bounds: Bound[] = [];
  private next = 0;
  // Open loop: request k is due at origin + k·period; `due` are due so far, `issued` sent or dropped.
  private readonly period: number;
  private origin = 0;
  private due = 0;
  private issued = 0;
  private backlogMax = 0;
  private readonly ctx: BodyContext;

  constructor(
    private readonly plan: ThreadPlan,
    private readonly report: (msg: ThreadMessage) => void,
  ) {
    this.weight = plan.requests.reduce((sum, r) => sum + Math.max(0, r.weight), 0);
    this.cumulative = new Float64Array(plan.requests.length);
    let acc = 0;
    plan.requests.forEach((r, i) => (this.cumulative[i] = acc += Math.max(0, r.weight)));
    this.tallies = plan.requests.map(() => ({ requests: 0, errors: 0, status: new Uint32Array(1000), codes: new Map(), second: createHistogram(), total: createHistogram() }));
    this.period = plan.rate > 0 ? 1000 / plan.rate : 0;
    this.ctx = { i: 0, user: -1, thread: plan.thread, random: Math.random };
  }

  /** Bodies ready and the first connections open (all of them, closed loop), or a clear error. */
  async prepare(): Promise<void> {
    const { plan } = this;
    this.wires = await Promise.all(plan.requests.map((r) => wire(r, plan.hostHeader)));
    this.wires.forEach((w) => (w.next = plan.thread % Math.max(1, w.bytes.length + w.heads.length)));
    // The first connection resolves the host (both families tried); the others reuse its address.
    this.addr = plan.host;
    const first = await this.connectOne();
    this.addr = first.socket.remoteAddress ?? plan.host;
    if (plan.mode === 'closed') await Promise.all(Array.from({ length: plan.connections - 1 }, () => this.connectOne()));
  }

  private connectOne(): Promise<Conn> {
    const conn = this.open();
    return new Promise<Conn>((resolve, reject) => {
      conn.socket.once('connect', () => resolve(conn));
      conn.socket.once('error', (error: NodeJS.ErrnoException) => reject(new Error(`cannot connect to ${this.plan.host}:${this.plan.port}: ${error.code ?? error.message}`)));
    });
  }

  start(): void {
    const { plan } = this;
    this.t0 = performance.now();
    this.lastBound = this.t0;
    this.origin = this.t0 + plan.phase_ms;
    this.running = true;
    this.bounds = bounds(plan.warmup_s, plan.duration_s);
    this.measuring = plan.warmup_s <= 0;
    const sweep = Math.min(100, Math.max(10, plan.timeout_ms / 4));
    this.timers.push(setInterval(() => this.sweep(), sweep));
    for (const conn of this.conns) if (conn.connected) this.opened(conn);
    // The first requests' timeout clocks start with the run (writing them all takes a few ms).
    for (const conn of this.conns) if (conn.req >= 0) conn.sentAt = this.t0;
    if (plan.mode === 'open') {
      this.timers.push(setInterval(() => this.tick(), 1));
      this.tick();
    }
    this.schedule();
  }

  /** Close every socket and timer now (abort, or the end). */
  stop(): void {
    this.running = false;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.boundary);
    for (const conn of this.conns) {
      conn.dead = true;
      conn.socket.destroy();
    }
    this.conns.clear();
    this.idle.length = 0;
  }

  // --- events of a connection

  opened(conn: Conn): void {
    if (!this.running || conn.dead) return;
    const now = performance.now();
    if (this.plan.mode === 'closed') this.send(conn, now, now);
    else this.dispatch(conn, now);
  }

  answered(conn: Conn, status: number, body: Buffer | null, close: boolean): void {
    const r = conn.req;
    if (r < 0 || conn.dead) return;
    conn.req = -1;
    const now = performance.now();
    const tally = this.tallies[r]!;
    recordUs(tally.second, (now - conn.startAt) * 1000);
    this.secRequests++;
    const error = status < 200 || status >= 400;
    if (error) this.secErrors++;
    if (this.measuring) {
      tally.requests++;
      tally.status[status]!++;
      if (error) {
        tally.errors++;
        const code = envelopeCode(body);
        if (code !== undefined) inc(tally.codes, code);
      }
    }
    if (close) return this.broken(conn, '');
    if (!this.running) return;
    if (this.plan.mode === 'closed') this.send(conn, now, now);
    else this.dispatch(conn, now);
  }

  /** The connection is done for (closed, reset, cut, timed out): count the request in flight, open another. */
  broken(conn: Conn, code: string): void {
    if (conn.dead) return;
    conn.dead = true;
    conn.socket.destroy();
    this.conns.delete(conn);
    if (this.stopped) return;
    if (conn.req >= 0 && code !== '') this.failed(conn.req, code);
    conn.req = -1;
    if (!conn.connected) {
      // Refused or unreachable: a failed attempt of the request meant for it, retried later.
      this.failed(conn.next >= 0 ? conn.next : this.pick(), 'socket');
      conn.next = -1;
      this.retryAt = performance.now() + CONNECT_RETRY_MS;
    }
    if (this.plan.mode === 'closed') {
      if (conn.connected) this.open();
      else this.missing++;
    } else {
      const i = this.idle.indexOf(conn);
      if (i >= 0) this.idle.splice(i, 1);
      this.fill();
    }
  }

  private failed(r: number, code: string): void {
    this.secRequests++;
    this.secErrors++;
    if (!this.measuring) return;
    if (r < 0) return inc(this.other, code);
    const tally = this.tallies[r]!;
    tally.requests++;
    tally.errors++;
    inc(tally.codes, code);
  }

  private open(): Conn {
    const conn = new Conn(this, this.addr, this.plan.port, this.readBuffer);
    // The request is chosen before connecting, so a failed connection is that request's failure.
    conn.next = this.pick();
    this.conns.add(conn);
    return conn;
  }

  // --- sending

  private pick(): number {
    const n = this.cumulative.length;
    if (n === 1) return 0;
    const x = Math.random() * this.weight;
    for (let i = 0; i < n - 1; i++) if (x < this.cumulative[i]!) return i;
    return n - 1;
  }

  /** Write a request on `conn`; its latency runs from `start` (now, or when it was due). */
  private send(conn: Conn, now: number, start: number): void {
    const r = conn.next >= 0 ? conn.next : this.pick();
    conn.next = -1;
    const w = this.wires[r]!;
    const v = w.next;
    conn.req = r;
    conn.sentAt = now;
    conn.startAt = start;
    conn.parser.noBody = w.noBody;
    if (w.body === null) {
      w.next = v + 1 === w.bytes.length ? 0 : v + 1;
      conn.socket.write(w.bytes[v]!);
    } else {
      w.next = v + 1 === w.heads.length ? 0 : v + 1;
      const ctx = this.ctx;
      ctx.i = this.sent;
      ctx.user = w.users[v]!;
      let body: string;
      try {
        body = JSON.stringify(w.body(ctx)) ?? '';
      } catch (error) {
        throw new Error(`${this.plan.requests[r]!.name}: the body function threw: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      conn.socket.write(`${w.heads[v]!}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    }
    this.sent++;
  }

  // --- open loop

  /** Issue what is due by now: to idle connections, new ones, or the backlog. */
  private tick(): void {
    if (!this.running) return;
    const now = performance.now();
    this.due = now < this.origin ? 0 : Math.floor((now - this.origin) / this.period) + 1;
    let backlog = this.due - this.issued;
    if (backlog > this.plan.backlog_cap) {
      // The oldest are dropped: they could only be sent later than anything still useful.
      const drop = backlog - this.plan.backlog_cap;
      this.issued += drop;
      backlog -= drop;
      // Never sent: neither a request nor an error of the second (the backlog shows them), only `dropped`.
      if (this.measuring) this.other.set('dropped', (this.other.get('dropped') ?? 0) + drop);
    }
    while (this.issued < this.due && this.idle.length > 0) this.dispatch(this.idle.pop()!, now);
    this.fill();
    if (this.measuring && this.due - this.issued > this.backlogMax) this.backlogMax = this.due - this.issued;
  }

  /** Send the oldest due request on `conn`, or keep it idle. */
  private dispatch(conn: Conn, now: number): void {
    if (this.issued < this.due) this.send(conn, now, this.origin + this.issued++ * this.period);
    else this.idle.push(conn);
  }

  /** Open connections for the backlog, up to the cap (connecting ones count: each takes one). */
  private fill(): void {
    if (!this.running || this.plan.mode !== 'open' || this.issued === this.due || performance.now() < this.retryAt) return;
    let connecting = 0;
    for (const c of this.conns) if (!c.connected) connecting++;
    while (connecting < this.due - this.issued && this.conns.size < this.plan.connections) {
      this.open();
      connecting++;
    }
  }

  // --- time

  /** Time out requests in flight too long; reopen refused connections (closed loop). */
  private sweep(): void {
    const now = performance.now();
    const limit = now - this.plan.timeout_ms;
    for (const conn of this.conns) if (conn.req >= 0 && conn.sentAt < limit) this.broken(conn, 'timeout');
    if (this.missing > 0 && now >= this.retryAt && this.running) {
      for (; this.missing > 0; this.missing--) this.open();
    }
    if (this.plan.mode === 'open') this.fill();
  }

  private schedule(): void {
    const b = this.bounds[this.next]!;
    this.boundary = setTimeout(() => this.interval(), Math.max(0, this.t0 + b.at - performance.now()));
  }

  /** An interval ended: report it; switch to measuring; or finish. */
  private interval(): void {
    const b = this.bounds[this.next]!;
    const now = performance.now();
    const span = now - this.lastBound;
    this.lastBound = now;
    if (b.measured) this.measuredMs += span;
    if (this.plan.mode === 'open') this.tick();
    const last = this.next + 1 === this.bounds.length;
    // The end: requests still in flight must not vanish. Those waiting ≥ the timeout are timeouts
    // (in this last second and the totals), the younger ones are reported apart.
    let inFlight = 0;
    if (last) {
      // The end by the plan when the timer came early (it counts from the loop's cached, whole-ms
      // clock), with 1 ms of slack: a request sent as the run began and unanswered when it ended
      // has waited a whole run.
      const end = Math.max(now, this.t0 + b.at);
      for (const conn of this.conns) {
        if (conn.req < 0 || conn.dead) continue;
        if (end - conn.sentAt >= this.plan.timeout_ms - 1) this.failed(conn.req, 'timeout');
        else inFlight++;
        conn.req = -1;
      }
    }
    const all = this.all;
    all.reset();
    for (const tally of this.tallies) {
      all.add(tally.second);
      if (b.measured) tally.total.add(tally.second);
      tally.second.reset();
    }
    const backlog = this.plan.mode === 'open' ? this.due - this.issued : 0;
    this.report({ type: 'tick', index: this.next, t: b.t, span_s: span / 1000, requests: this.secRequests, errors: this.secErrors, histogram: encodeHistogram(all), backlog });
    this.secRequests = 0;
    this.secErrors = 0;
    this.next++;
    if (this.next < this.bounds.length) {
      if (!b.measured && this.bounds[this.next]!.measured) this.measuring = true;
      return this.schedule();
    }
    this.running = false;
    this.measuring = false;
    this.report({
      type: 'final',
      measured_s: this.measuredMs / 1000,
      requests: this.tallies.map((t) => {
        const by_status: Record<string, number> = {};
        t.status.forEach((n, status) => n > 0 && (by_status[status] = n));
        return { requests: t.requests, errors: t.errors, by_status, by_code: Object.fromEntries(t.codes), histogram: encodeHistogram(t.total) };
      }),
      other: Object.fromEntries(this.other),
      in_flight_end: inFlight,
      backlog_max: this.backlogMax,
      backlog_end: backlog,
    });
    this.stop();
  }
}
