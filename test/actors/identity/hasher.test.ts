// The password-hashing pool (piscina): argon2id parameters, a bounded queue, niceness, threads replaced when they die.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorSystem } from '../../../kernel/index.ts';
import { ARGON2_OPTIONS, HASHER_ACTOR, RemoteHasher, THREAD_TEST_HOOK, ThreadHasher } from '../../../actors/identity/hasher.ts';

type Probe = { threadId: number; tid: number; nice: number };
const hasherModule = new URL('../../../actors/identity/hasher.ts', import.meta.url).href;
const linux = process.platform === 'linux';

const probe = (h: ThreadHasher) => h[THREAD_TEST_HOOK]('probe') as Promise<Probe>;

/** A script run by a fresh `node --import tsx` with `ThreadHasher` in scope: its exit status, stdout and stderr. */
function child(body: string, env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const script = `import { ThreadHasher, THREAD_TEST_HOOK } from ${JSON.stringify(hasherModule)};\n${body}`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

t.test('hashes with the argon2id parameters of ARGON2_OPTIONS and verifies', async (t) => {
  const h = new ThreadHasher({ threads: 1 });
  t.teardown(() => h.close());
  const stored = (await h.run({ op: 'hash', password: 'correct horse battery' })) as string;
  t.match(stored, new RegExp(`^\\$argon2id\\$v=19\\$m=${ARGON2_OPTIONS.memoryCost},t=${ARGON2_OPTIONS.timeCost},p=${ARGON2_OPTIONS.parallelism}\\$`));
  t.equal(await h.run({ op: 'verify-argon2', stored, password: 'correct horse battery' }), true);
  t.equal(await h.run({ op: 'verify-argon2', stored, password: 'wrong horse battery' }), false);
  await t.rejects(h.run({ op: 'verify-argon2', stored: 'not a hash', password: 'x' }), /^hashing failed: /, 'a malformed hash fails that job');
  t.equal(h.size, 1, 'and the thread stays');
});

t.test('a full queue refuses at once with SVC_ERR_MAILBOX_FULL (503), here and through /user/hasher', async (t) => {
  const h = new ThreadHasher({ threads: 1, maxQueue: 2 });
  t.teardown(() => h.close());
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  h.serve(system);
  const running = h.run({ op: 'hash', password: 'one running job' });
  const waiting = [h.run({ op: 'hash', password: 'first waiting' }), h.run({ op: 'hash', password: 'second waiting' })];
  await t.rejects(h.run({ op: 'hash', password: 'one too many' }), { code: 'SVC_ERR_MAILBOX_FULL', status: 503 });
  const remote = new RemoteHasher(system, system.nodeId);
  t.ok(system.lookup(HASHER_ACTOR), 'served');
  await t.rejects(remote.run({ op: 'hash', password: 'one too many, remotely' }), { code: 'SVC_ERR_MAILBOX_FULL', status: 503 });
  t.equal((await Promise.all([running, ...waiting])).length, 3, 'what was admitted completes');
  t.match(await remote.run({ op: 'hash', password: 'room again' }), /^\$argon2id\$/, 'and the queue admits again');
});

t.test('hashing threads run at a lower priority, the event loop keeps its own', { skip: !linux && 'niceness per thread is Linux' }, async (t) => {
  const h = new ThreadHasher({ threads: 1, nice: 7 });
  t.teardown(() => h.close());
  const main = getPriority();
  const thread = await probe(h);
  t.equal(thread.nice, Math.min(19, main + 7), 'the thread: +7');
  t.equal(getPriority(), main, 'this thread: unchanged');
  const capped = new ThreadHasher({ threads: 1, nice: 40 });
  t.teardown(() => capped.close());
  t.equal((await probe(capped)).nice, 19, 'capped at 19');
  const negative = new ThreadHasher({ threads: 1, nice: -5 });
  t.teardown(() => negative.close());
  t.equal((await probe(negative)).nice, main, 'a negative nice raises nothing (and does not throw)');
});

// A C library shim makes nice(2)/setpriority(2) fail with EPERM, as a seccomp profile or a sandbox would.
const cc = spawnSync('cc', ['--version']).status === 0;
t.test('where the system refuses a lower priority, hashing works at normal priority and says so', { skip: (!linux || !cc) && 'needs Linux and a C compiler' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-hasher-nice-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'refuse.c'), '#include <errno.h>\nint nice(int i) { (void)i; errno = EPERM; return -1; }\nint setpriority(int a, unsigned b, int c) { (void)a; (void)b; (void)c; errno = EPERM; return -1; }\n');
  t.equal(spawnSync('cc', ['-shared', '-fPIC', '-o', join(dir, 'refuse.so'), join(dir, 'refuse.c')]).status, 0, 'shim built');
  const r = child(
    `const h = new ThreadHasher({ threads: 2, nice: 10 });
     const stored = await h.run({ op: 'hash', password: 'still hashing' });
     console.log(JSON.stringify({ ok: await h.run({ op: 'verify-argon2', stored, password: 'still hashing' }), probe: await h[THREAD_TEST_HOOK]('probe') }));
     await h.close();`,
    { LD_PRELOAD: join(dir, 'refuse.so') },
  );
  t.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { ok: boolean; probe: Probe };
  t.equal(out.ok, true, 'hashes and verifies');
  t.equal(out.probe.nice, 0, 'at the normal priority');
  t.equal(r.stderr.match(/SVC_HASHER_NICE_REFUSED/g)?.length, 1, `one warning for the pool: ${r.stderr}`);
});

t.test('a hashing thread that dies is replaced; jobs on the other threads go on', async (t) => {
  const h = new ThreadHasher({ threads: 2 });
  t.teardown(() => h.close());
  const before = new Set((await Promise.all([probe(h), probe(h)])).map((p) => p.threadId));
  t.equal(before.size, 2, 'two threads');
  for (let i = 0; i < 3; i++) {
    const beside = h.run({ op: 'hash', password: `beside the crash ${i}` });
    await t.rejects(h[THREAD_TEST_HOOK]('exit'), /^the hashing thread died: /, `crash ${i + 1}: the job on the dying thread fails`);
    t.match(await beside, /^\$argon2id\$/, `crash ${i + 1}: the job beside it completes`);
    t.equal(h.size, 2, `crash ${i + 1}: the pool is whole again`);
  }
  const hashes = await Promise.all(Array.from({ length: 4 }, (_, i) => h.run({ op: 'hash', password: `after the crashes ${i}` })));
  t.equal(hashes.length, 4, 'hashing goes on');
  const after = (await Promise.all([probe(h), probe(h)])).map((p) => p.threadId);
  t.ok(
    after.some((id) => !before.has(id)),
    'on new threads',
  );
});

t.test('close: waiting and running jobs fail with the reason, later ones too', async (t) => {
  const h = new ThreadHasher({ threads: 1 });
  const running = t.rejects(h.run({ op: 'hash', password: 'running at close' }), /the hasher is closed/, 'running');
  const waiting = t.rejects(h.run({ op: 'hash', password: 'waiting at close' }), /the hasher is closed/, 'waiting');
  await h.close();
  await Promise.all([running, waiting]);
  await t.rejects(h.run({ op: 'hash', password: 'after close' }), /the hasher is closed/);
  t.equal(h.size, 0);
});

t.test('idle threads do not keep a process alive; a running job does (a tool exits after its hash, not before)', async (t) => {
  const r = child(`new ThreadHasher({ threads: 2 }).run({ op: 'hash', password: 'from a tool' }).then((hash) => console.log(hash));`);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^\$argon2id\$/, 'the hash came before the exit');
});
