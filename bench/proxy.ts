/**
 * The sandbox proxy's overhead on loopback, side by side in one run: a stand-in dev server (node:http + ws,
 * bench/fixtures/proxy-backend.mjs) on 127.0.0.21, reached directly and through `startSandboxProxy` (its own
 * process, one route). Rows:
 *
 *  - HTTP latency: one keep-alive connection, one request at a time (p50/p99, requests/s);
 *  - HTTP throughput: N keep-alive connections in a closed loop (requests/s, p50/p99), through the load engine of
 *    `svc bench` (bench/harness), POST with a small JSON body;
 *  - WebSocket echo: C clients each keeping W messages in flight (messages/s echoed), small text (an HMR message)
 *    and 64 KB binary; direct, through the proxy (raw socket pipe after the handshake), and through a relay that
 *    terminates WebSockets with `ws` on both sides (the alternative design, bench/fixtures/ws-terminating-relay.mjs).
 *
 * Goals: p50 at most +1 ms, throughput at least 0.8x direct, WebSocket messages/s at least 0.8x direct.
 *
 * CPU per request: the server's CPU time (user + system, /proc) over the measured part divided by the requests
 * answered — the stand-in's in the direct rows, the proxy's own in the proxied rows.
 *
 * The load generator, the proxy and the stand-in share the machine's cores. `--pin` (with taskset) puts this process
 * and its generator threads on core 1 and every server on core 0, the same for direct and proxied runs: the proxied
 * run then shows what the proxy adds on the servers' core.
 *
 *   npm run bench:proxy            (--quick for 2 s runs, --pin to pin as above)
 *
 * Writes bench/results/proxy-<time>.json.
 */
import WebSocket from 'ws';
import { freePort, hasTaskset, machine, maxLoad, pinned, pinSelf, type Proc, round, save, serve } from './lib.ts';

const quick = process.argv.includes('--quick');
const pin = process.argv.includes('--pin') && hasTaskset;
/** A server's command line: on core 0 with --pin. */
const server = (args: string[]): [string, string[]] => (pin ? pinned(0, process.execPath, args) : [process.execPath, args]);
const SECONDS = quick ? 2 : 5;
const WARMUP = 1;
const CONNECTIONS = Number(process.env.BENCH_PROXY_CONNECTIONS ?? 32);
const WS_CLIENTS = 8;
const WS_WINDOW = 32;
const POD_IP = '127.0.0.21';
const SANDBOX = 'sbx-00000000000000be';
const HOST = `${SANDBOX}.preview.bench.test`;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;

interface HttpRow {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  /** CPU µs per request of the server measured (the stand-in directly, the proxy when proxied). */
  cpu_us_per_req: number;
}

async function http(origin: string, connections: number, host: string | undefined, cpuPid: number | undefined): Promise<HttpRow> {
  const l = await maxLoad(origin, [{ path: '/api/echo', body: '{"hello":"world"}', ...(host ? { headers: { host } } : {}) }], { seconds: SECONDS, warmup: WARMUP, connections, ...(cpuPid ? { cpuPid } : {}) });
  return { rps: round(l.rps, 0), p50_ms: round(l.p50_ms, 3), p99_ms: round(l.p99_ms, 3), errors: l.errors, cpu_us_per_req: round(l.cpu_us_per_req, 1) };
}

/** Messages per second echoed back to C clients each keeping W in flight. */
async function wsEcho(url: string, host: string | undefined, message: string | Buffer): Promise<{ msgs_per_s: number }> {
  const clients = await Promise.all(
    Array.from(
      { length: WS_CLIENTS },
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(url, ['vite-hmr'], { perMessageDeflate: false, ...(host ? { headers: { host } } : {}) });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        }),
    ),
  );
  let counting = false;
  let echoed = 0;
  let stop = false;
  for (const ws of clients) {
    ws.on('message', () => {
      if (counting) echoed++;
      if (!stop) ws.send(message);
    });
    for (let i = 0; i < WS_WINDOW; i++) ws.send(message);
  }
  await new Promise((r) => setTimeout(r, WARMUP * 1000));
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const seconds = (performance.now() - t0) / 1000;
  counting = false;
  stop = true;
  const n = echoed;
  await Promise.all(clients.map((ws) => new Promise((r) => (ws.once('close', r), ws.close()))));
  return { msgs_per_s: round(n / seconds, 0) };
}

async function main(): Promise<void> {
  const podPort = await freePort();
  const proxyPort = await freePort();
  const relayPort = await freePort();
  const procs: Proc[] = [];
  try {
    const backend = await serve(...server([`${fixtures}proxy-backend.mjs`]), /ready/, { HOST: POD_IP, PORT: String(podPort) });
    procs.push(backend);
    const env = { SANDBOX_ID: SANDBOX, POD_IP, POD_PORT: String(podPort) };
    const proxy = await serve(...server(['--import', 'tsx', `${fixtures}proxy-child.ts`]), /ready/, { ...env, PORT: String(proxyPort) });
    procs.push(proxy);
    procs.push(await serve(...server([`${fixtures}ws-terminating-relay.mjs`]), /ready/, { ...env, PORT: String(relayPort) }));
    // taskset starts the server as its own child with the same pid (it execs), so the pids are the servers'.
    if (pin) pinSelf(1);
    const direct = `http://${POD_IP}:${podPort}`;
    const proxied = `http://127.0.0.1:${proxyPort}`;

    process.stderr.write('bench: HTTP, one connection\n');
    const latency = { direct: await http(direct, 1, undefined, backend.proc.pid), proxy: await http(proxied, 1, HOST, proxy.proc.pid) };
    process.stderr.write(`bench: HTTP, ${CONNECTIONS} connections\n`);
    const throughput = { direct: await http(direct, CONNECTIONS, undefined, backend.proc.pid), proxy: await http(proxied, CONNECTIONS, HOST, proxy.proc.pid) };
    const small = JSON.stringify({ type: 'update', updates: [{ type: 'js-update', path: '/src/App.tsx', timestamp: 1 }] });
    const big = Buffer.alloc(64 * 1024, 7);
    const ws: Record<string, Record<string, { msgs_per_s: number }>> = {};
    for (const [name, message] of [
      ['text_small', small],
      ['binary_64k', big],
    ] as const) {
      process.stderr.write(`bench: WebSocket echo, ${name}\n`);
      ws[name] = {
        direct: await wsEcho(`ws://${POD_IP}:${podPort}/`, undefined, message),
        proxy_pipe: await wsEcho(`ws://127.0.0.1:${proxyPort}/`, HOST, message),
        ws_terminating: await wsEcho(`ws://127.0.0.1:${relayPort}/`, undefined, message),
      };
    }

    const ratio = (a: number, b: number) => round(a / b, 2);
    const rows: [string, string, string, string][] = [
      ['HTTP 1 conn p50 (ms)', String(latency.direct.p50_ms), String(latency.proxy.p50_ms), `+${round(latency.proxy.p50_ms - latency.direct.p50_ms, 3)} ms`],
      ['HTTP 1 conn p99 (ms)', String(latency.direct.p99_ms), String(latency.proxy.p99_ms), `+${round(latency.proxy.p99_ms - latency.direct.p99_ms, 3)} ms`],
      ['HTTP 1 conn req/s', String(latency.direct.rps), String(latency.proxy.rps), `${ratio(latency.proxy.rps, latency.direct.rps)}x`],
      [`HTTP ${CONNECTIONS} conns req/s`, String(throughput.direct.rps), String(throughput.proxy.rps), `${ratio(throughput.proxy.rps, throughput.direct.rps)}x`],
      [`HTTP ${CONNECTIONS} conns p50 (ms)`, String(throughput.direct.p50_ms), String(throughput.proxy.p50_ms), `+${round(throughput.proxy.p50_ms - throughput.direct.p50_ms, 3)} ms`],
      [`HTTP ${CONNECTIONS} conns p99 (ms)`, String(throughput.direct.p99_ms), String(throughput.proxy.p99_ms), `+${round(throughput.proxy.p99_ms - throughput.direct.p99_ms, 3)} ms`],
      [`HTTP ${CONNECTIONS} conns CPU µs/req (stand-in | proxy)`, String(throughput.direct.cpu_us_per_req), String(throughput.proxy.cpu_us_per_req), ''],
    ];
    for (const [name, r] of Object.entries(ws)) {
      rows.push([`WS ${name} msgs/s`, String(r.direct?.msgs_per_s), String(r.proxy_pipe?.msgs_per_s), `${ratio(r.proxy_pipe?.msgs_per_s ?? 0, r.direct?.msgs_per_s ?? 1)}x`]);
      rows.push([`WS ${name} msgs/s (ws-terminating relay)`, String(r.direct?.msgs_per_s), String(r.ws_terminating?.msgs_per_s), `${ratio(r.ws_terminating?.msgs_per_s ?? 0, r.direct?.msgs_per_s ?? 1)}x`]);
    }
    const width = [42, 12, 12, 12];
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(width[i] as number) : c.padStart(width[i] as number))).join(' ');
    console.log(line(['', 'direct', 'proxy', 'proxy/direct']));
    for (const r of rows) console.log(line(r));
    const errors = latency.direct.errors + latency.proxy.errors + throughput.direct.errors + throughput.proxy.errors;
    if (errors) console.log(`(${errors} requests failed)`);
    const file = save('proxy', {
      bench: 'proxy',
      at: new Date().toISOString(),
      setup: { seconds: SECONDS, warmup_s: WARMUP, connections: CONNECTIONS, ws_clients: WS_CLIENTS, ws_window: WS_WINDOW, load: 'svc bench engine (bench/harness), 1 generator thread, closed loop; ws clients in the bench process', pinned: pin ? 'load on core 1, stand-in, proxy and ws relay on core 0 (taskset)' : 'not pinned' },
      machine: machine(),
      http: { latency, throughput },
      ws,
      goals: {
        p50_added_ms: round(latency.proxy.p50_ms - latency.direct.p50_ms, 3),
        throughput_ratio: ratio(throughput.proxy.rps, throughput.direct.rps),
        cpu_us_per_req: { stand_in: throughput.direct.cpu_us_per_req, proxy: throughput.proxy.cpu_us_per_req },
        ws_ratio_small: ratio(ws.text_small?.proxy_pipe?.msgs_per_s ?? 0, ws.text_small?.direct?.msgs_per_s ?? 1),
        ws_ratio_64k: ratio(ws.binary_64k?.proxy_pipe?.msgs_per_s ?? 0, ws.binary_64k?.direct?.msgs_per_s ?? 1),
      },
    });
    console.log(`wrote ${file}`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

await main();
