/**
 * Kernel benchmark: svc actors side by side with baselines, in one run.
 *
 *   node --import tsx bench/kernel.ts            (npm run bench:kernel)
 *
 * - in-thread tell throughput and ask round trips: svc vs a hand-written
 *   queue/promise pattern (the floor of any mailbox) vs nact;
 * - cross-thread one-way messages/s: svc (batched msgpackr frames) vs raw
 *   `postMessage` of the same payloads, one message each;
 * - cross-thread ask latency: svc vs a raw MessagePort ping-pong;
 * - time to restart a crashed actor.
 * Writes bench/results/kernel-<time>.json and prints a table of ratios.
 */
import { Worker } from 'node:worker_threads';
import nact from 'nact';
import { ActorSystem, fromReceive, type ActorRef } from 'svc/kernel';
import { WorkerPool } from '../transports/worker/index.ts';
import { latency, machine, now, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const TELLS = quick ? 200_000 : 2_000_000;
const ASKS = quick ? 20_000 : 200_000;
const XTELLS = quick ? 100_000 : 1_000_000;
const XASKS = quick ? 5_000 : 20_000;
const RESTARTS = quick ? 2_000 : 10_000;
const ROUNDS = 3;

type Row = Record<string, number | string>;
const results: Record<string, Row> = {};

/** Best of `ROUNDS` runs (higher is better) of an ops/s measurement. */
async function best(fn: () => Promise<number>): Promise<number> {
  let top = 0;
  for (let i = 0; i < ROUNDS; i++) top = Math.max(top, await fn());
  return top;
}

// ---- in-thread tell -------------------------------------------------------

async function svcTell(): Promise<number> {
  const system = new ActorSystem();
  let count = 0;
  const ref = system.spawn(
    fromReceive((m: number) => {
      if (m < 0) return count;
      count++;
      return undefined;
    }, { capacity: TELLS + 1 }),
  );
  const t0 = now();
  for (let i = 0; i < TELLS; i++) ref.tell(i);
  await ref.ask(-1, 60_000);
  const ops = TELLS / ((now() - t0) / 1e9);
  await system.shutdown();
  return ops;
}

/** The same pattern with nothing but an array and a microtask. */
class PlainQueue<M, R> {
  private q: { m: M; resolve?: (r: R) => void }[] = [];
  private scheduled = false;
  constructor(private readonly handler: (m: M) => R) {}
  tell(m: M): void {
    this.q.push({ m });
    this.kick();
  }
  ask(m: M): Promise<R> {
    return new Promise((resolve) => {
      this.q.push({ m, resolve });
      this.kick();
    });
  }
  private kick(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      const q = this.q;
      this.q = [];
      for (const item of q) {
        const r = this.handler(item.m);
        item.resolve?.(r);
      }
    });
  }
}

async function plainTell(): Promise<number> {
  let count = 0;
  const q = new PlainQueue((m: number) => (m < 0 ? count : void count++));
  const t0 = now();
  for (let i = 0; i < TELLS; i++) q.tell(i);
  await q.ask(-1);
  return TELLS / ((now() - t0) / 1e9);
}

async function nactTell(): Promise<number> {
  const system = nact.start();
  let count = 0;
  const actor = nact.spawnStateless(system, (msg: { n: number; sender?: nact.Ref<unknown> }) => {
    if (msg.n < 0 && msg.sender) nact.dispatch(msg.sender, count);
    else count++;
  });
  const t0 = now();
  for (let i = 0; i < TELLS; i++) nact.dispatch(actor, { n: i });
  await nact.query(actor, (sender) => ({ n: -1, sender }), 120_000);
  const ops = TELLS / ((now() - t0) / 1e9);
  nact.stop(system);
  return ops;
}

// ---- in-thread ask ----------------------------------------------------------

async function askLoop(ask: (i: number) => Promise<unknown>, n: number): Promise<{ ops: number; samples: Float64Array }> {
  const samples = new Float64Array(n);
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const s = now();
    await ask(i);
    samples[i] = now() - s;
  }
  return { ops: n / ((now() - t0) / 1e9), samples };
}

async function svcAsk(): Promise<{ ops: number; samples: Float64Array }> {
  const system = new ActorSystem();
  const ref = system.spawn(fromReceive((m: number) => m + 1));
  await askLoop((i) => ref.ask(i), ASKS / 10); // warm up
  const r = await askLoop((i) => ref.ask(i), ASKS);
  await system.shutdown();
  return r;
}

async function plainAsk(): Promise<{ ops: number; samples: Float64Array }> {
  const q = new PlainQueue((m: number) => m + 1);
  await askLoop((i) => q.ask(i), ASKS / 10);
  return askLoop((i) => q.ask(i), ASKS);
}

async function nactAsk(): Promise<{ ops: number; samples: Float64Array }> {
  const system = nact.start();
  const actor = nact.spawnStateless(system, (msg: { n: number; sender: nact.Ref<unknown> }) => nact.dispatch(msg.sender, msg.n + 1));
  const ask = (i: number) => nact.query(actor, (sender) => ({ n: i, sender }), 10_000);
  await askLoop(ask, ASKS / 10);
  const r = await askLoop(ask, ASKS);
  nact.stop(system);
  return r;
}

// ---- cross-thread -----------------------------------------------------------

async function svcCrossTell(pool: WorkerPool): Promise<number> {
  const sink = pool.system.refFromAddress({ node: 'w1', path: '/user/sink' }) as ActorRef<{ kind: string; n: number } | 'count', number>;
  const before = (await sink.ask('count')) as number;
  const t0 = now();
  for (let i = 0; i < XTELLS; i++) sink.tell({ kind: 'inc', n: i });
  const count = await sink.ask('count', 120_000);
  const ops = XTELLS / ((now() - t0) / 1e9);
  if (count - before !== XTELLS) throw new Error(`sink counted ${count - before} of ${XTELLS}`);
  return ops;
}

function rawWorker(): Promise<Worker> {
  const w = new Worker(new URL('./fixtures/raw-worker.mjs', import.meta.url), { execArgv: [] });
  return new Promise((resolve, reject) => {
    w.once('online', () => resolve(w));
    w.once('error', reject);
  });
}

function nextMessage(w: Worker): Promise<unknown> {
  return new Promise((resolve) => w.once('message', resolve));
}

async function rawCrossTell(w: Worker): Promise<number> {
  w.postMessage({ kind: 'count' });
  const before = (await nextMessage(w)) as number;
  const t0 = now();
  for (let i = 0; i < XTELLS; i++) w.postMessage({ kind: 'inc', n: i });
  w.postMessage({ kind: 'count' });
  const count = (await nextMessage(w)) as number;
  const ops = XTELLS / ((now() - t0) / 1e9);
  if (count - before !== XTELLS) throw new Error(`raw worker counted ${count - before} of ${XTELLS}`);
  return ops;
}

async function svcCrossAsk(pool: WorkerPool): Promise<{ ops: number; samples: Float64Array }> {
  const echo = pool.system.refFromAddress({ node: 'w1', path: '/user/echo' });
  await askLoop((i) => echo.ask({ kind: 'ping', i }), XASKS / 10);
  return askLoop((i) => echo.ask({ kind: 'ping', i }), XASKS);
}

async function rawCrossAsk(w: Worker): Promise<{ ops: number; samples: Float64Array }> {
  const ping = (i: number) => {
    const p = nextMessage(w);
    w.postMessage({ kind: 'ping', i });
    return p;
  };
  await askLoop(ping, XASKS / 10);
  return askLoop(ping, XASKS);
}

// ---- restart ------------------------------------------------------------------

async function restartTimes(): Promise<Float64Array> {
  const system = new ActorSystem({ guardian: { maxRestarts: 1e9, withinMs: 1000, backoff: { minMs: 0, maxMs: 0, factor: 1 } } });
  let started: (() => void) | undefined;
  const ref = system.spawn<string, void>({
    logic: () => ({
      preStart: () => started?.(),
      receive: (m: string) => {
        if (m === 'boom') throw new Error('boom');
      },
    }),
  });
  await ref.ask('warm');
  const samples = new Float64Array(RESTARTS);
  for (let i = 0; i < RESTARTS; i++) {
    const up = new Promise<void>((resolve) => (started = resolve));
    const t0 = now();
    ref.tell('boom');
    await up;
    samples[i] = now() - t0;
  }
  await system.shutdown();
  return samples;
}

// ---- run ------------------------------------------------------------------------

async function main(): Promise<void> {
  const t: Record<string, number> = {};
  t.svc_tell = await best(svcTell);
  t.plain_tell = await best(plainTell);
  t.nact_tell = await best(nactTell);
  results.in_thread_tell = {
    svc_msgs_per_s: Math.round(t.svc_tell),
    plain_queue_msgs_per_s: Math.round(t.plain_tell),
    nact_msgs_per_s: Math.round(t.nact_tell),
    svc_vs_nact: round(t.svc_tell / t.nact_tell, 2),
    svc_vs_plain: round(t.svc_tell / t.plain_tell, 2),
    goal: 'svc >= 2x nact',
  };

  const sa = await svcAsk();
  const pa = await plainAsk();
  const na = await nactAsk();
  results.in_thread_ask = {
    svc_asks_per_s: Math.round(sa.ops),
    plain_asks_per_s: Math.round(pa.ops),
    nact_asks_per_s: Math.round(na.ops),
    ...prefix('svc_', latency(sa.samples)),
    ...prefix('plain_', latency(pa.samples)),
    ...prefix('nact_', latency(na.samples)),
    svc_vs_nact: round(sa.ops / na.ops, 2),
    svc_vs_plain: round(sa.ops / pa.ops, 2),
    goal: 'svc p50 <= 10 us',
  };

  const pool = await WorkerPool.start({ size: 1, module: new URL('./fixtures/kernel-worker.ts', import.meta.url) });
  const raw = await rawWorker();
  const sx = await best(() => svcCrossTell(pool));
  const rx = await best(() => rawCrossTell(raw));
  const link = pool.transport.link('w1');
  results.cross_thread_tell = {
    svc_msgs_per_s: Math.round(sx),
    raw_postmessage_msgs_per_s: Math.round(rx),
    svc_vs_raw: round(sx / rx, 2),
    svc_frames_per_batch: link ? round(link.frames / link.batches, 1) : 0,
    goal: 'svc >= 1x raw (stretch 3x)',
  };
  const sxa = await svcCrossAsk(pool);
  const rxa = await rawCrossAsk(raw);
  const sl = latency(sxa.samples);
  const rl = latency(rxa.samples);
  results.cross_thread_ask = {
    svc_asks_per_s: Math.round(sxa.ops),
    raw_pingpong_per_s: Math.round(rxa.ops),
    ...prefix('svc_', sl),
    ...prefix('raw_', rl),
    svc_vs_raw_p50_latency: round(sl.p50_us / rl.p50_us, 2),
    goal: 'svc p50 <= 1.5x raw ping-pong',
  };
  await raw.terminate();
  await pool.close();

  const rs = latency(await restartTimes());
  results.restart = { restarts: RESTARTS, ...rs, goal: 'p99 <= 1000 us' };

  const out = { bench: 'kernel', at: new Date().toISOString(), quick, machine: machine(), results };
  const file = save('kernel', out);
  for (const [scenario, row] of Object.entries(results)) {
    console.log(`\n${scenario}`);
    console.table(row);
  }
  console.log(`written ${file}`);
}

function prefix(p: string, o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [`${p}${k}`, v]));
}

await main();
