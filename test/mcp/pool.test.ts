// The compiler tools' killable pool: a deadline counted from when a call starts on a thread (not from when it was
// queued), a bounded queue, threads that take work only once warm, and a warm replacement for a stopped one.
import t, { type Test } from 'tap';
import { MAX_QUEUE, ToolBusyError, type ToolCallInfo, ToolInputError, ToolPool, ToolTimeoutError } from '../../mcp/index.ts';

// Each pool warms a TypeScript program per thread (seconds on a busy machine).
t.setTimeout(300_000);

/** A ~2,000-line module (about 60 KB): a check of it takes a good while on any machine. */
function bigModule(variant: number): string {
  const lines = [`import { Node, Walker, Root, entry, T } from 'svc';`];
  for (let i = 0; lines.length < 2000; i++) {
    lines.push(
      `export class Item${i} extends Node {`,
      `  static has = T.Object({ name: T.String(), count: T.Integer({ default: ${variant} }), tags: T.Array(T.String(), { default: [] }) });`,
      `  declare name: string;`,
      `  declare count: number;`,
      `  declare tags: string[];`,
      `}`,
      `export class Make${i} extends Walker {`,
      `  static has = T.Object({ name: T.String() });`,
      `  declare name: string;`,
      `  @entry(Root) async make(here: Root) {`,
      `    const made = await here.connect(new Item${i}({ name: this.name }));`,
      `    made.count += ${variant};`,
      `    this.report(made);`,
      `  }`,
      `}`,
    );
  }
  return lines.join('\n');
}

const SMALL = "import { Walker, Root, entry } from 'svc';\nexport class W extends Walker {\n  @entry(Root) go() { this.report(1); }\n}\n";

/** A pool and the record of its calls. */
async function pool(t: Test, options: { maxQueue?: number } = {}): Promise<{ pool: ToolPool; calls: ToolCallInfo[] }> {
  const calls: ToolCallInfo[] = [];
  const p = await ToolPool.start({ ...options, onCall: (info) => calls.push(info) });
  t.teardown(() => p.close());
  return { pool: p, calls };
}

t.test('a call stuck past its deadline is stopped; the next validate_svc is served warm, on a fresh thread', async (t) => {
  const { pool: p, calls } = await pool(t);
  t.equal((await p.run('validate_svc', { code: SMALL })).valid, true);
  const first = calls.at(-1) as ToolCallInfo;
  t.equal(first.warm, true, 'the first call on a new pool finds its thread warm (it warmed before taking work)');
  // 30 ms of running for a 2,000-line check: stopped, its thread terminated.
  await t.rejects(p.run('validate_svc', { code: bigModule(1) }, 30), ToolTimeoutError);
  t.match(calls.at(-1), { outcome: 'timeout' });
  const next = await p.run('validate_svc', { code: SMALL });
  t.equal(next.valid, true, 'the next call is served');
  const after = calls.at(-1) as ToolCallInfo;
  t.equal(after.outcome, 'ok');
  t.not(after.threadId, first.threadId, 'by the replacement thread');
  t.equal(after.warm, true, 'which had built its TypeScript program before taking the call');
  t.equal(p.threads, 1, 'one thread, as configured');
  // The rest of what the pool promised: errors keep their kind across the thread.
  await t.rejects(p.run('format_svc', { code: 'x'.repeat(101 * 1024) }), ToolInputError, 'refused input keeps its kind');
  await t.rejects(p.run('nope', {}), ToolInputError);
});

t.test('calls queued behind slow ones are not charged for the time they waited', async (t) => {
  const { pool: p, calls } = await pool(t);
  await p.run('check_syntax', { code: SMALL });
  // How long a big check runs here (on this machine, now; nothing else is queued).
  const before = performance.now();
  await p.run('validate_svc', { code: bigModule(2) });
  const big = performance.now() - before;
  // Two more big checks, then a parse of a small module whose deadline is a quarter of one big check's run:
  // it waits about two big checks for the thread, far past its deadline, and must still be served.
  const deadline = Math.max(50, big / 4);
  const slow = [p.run('validate_svc', { code: bigModule(3) }), p.run('validate_svc', { code: bigModule(4) })];
  const quick = p.run('check_syntax', { code: SMALL }, deadline);
  const [r] = await Promise.all([quick, ...slow]);
  t.equal((r as { valid: boolean }).valid, true, 'served');
  const info = calls.filter((c) => c.tool === 'check_syntax').at(-1) as ToolCallInfo;
  t.equal(info.outcome, 'ok');
  t.ok(info.waitedMs > deadline, `it waited ${Math.round(info.waitedMs)} ms for a thread, past its ${Math.round(deadline)} ms deadline`);
});

t.test('the queue is bounded: past it a call is refused at once, saying so', async (t) => {
  t.equal(MAX_QUEUE, 16, 'the default');
  const { pool: p, calls } = await pool(t, { maxQueue: 2 });
  const running = p.run('validate_svc', { code: bigModule(5) });
  const waiting = [p.run('check_syntax', { code: SMALL }), p.run('check_syntax', { code: SMALL })];
  await t.rejects(p.run('check_syntax', { code: SMALL }), { name: 'ToolBusyError', message: /busy: 2 calls are already waiting/ });
  t.match(calls.at(-1), { outcome: 'busy', ranMs: 0 });
  t.ok(ToolBusyError);
  await Promise.all([running, ...waiting]);
  t.equal(calls.filter((c) => c.outcome === 'ok').length, 3, 'those in the queue were served');
});
