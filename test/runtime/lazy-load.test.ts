// What `svc start` of a SQLite app loads: none of the packages it does not use — the other databases' drivers
// (mongodb, pg, ioredis), the cloud SDK (@aws-sdk), the mailer (nodemailer), the Kubernetes client, the HTTP client of
// `sv` calls (undici) — neither in its main thread nor in any worker thread; and once it is ready, no build process
// (esbuild) is left running beside it, nor a sandbox provider started for an app that never asked for one.
//
// Seen from inside: record-loads.mjs is preloaded into the server (NODE_OPTIONS `--import`, so into every thread) and
// writes down each package a thread requires and each ES module it imports. The packages the app does use (the SQLite
// driver, in the main thread and in each worker) must be there: a recorder that saw nothing fails the test.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../kit/index.ts';

const TODO = fileURLToPath(new URL('../../examples/todo/app.ts', import.meta.url));
const RECORDER = new URL('./lazy-load/record-loads.mjs', import.meta.url).href;

/** Packages a SQLite app without mail, `sv` calls, object storage or sandboxes on Kubernetes never needs. */
const UNUSED = ['mongodb', 'pg', 'ioredis', '@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner', 'nodemailer', '@kubernetes/client-node', 'undici'];

/** The package a recorded line names (`mongodb` for a require of `mongodb/lib/x`, or an import of …/node_modules/mongodb/…). */
function packageOf(what: string): string | undefined {
  const path = what.includes('/node_modules/') ? what.slice(what.lastIndexOf('/node_modules/') + '/node_modules/'.length) : what;
  const parts = path.split('/');
  return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

t.test('svc start of a SQLite app loads no driver, SDK, mailer or Kubernetes client it does not use, in any thread', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lazy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const loads = join(dir, 'loads.txt');
  const server = await startServer({
    entry: TODO,
    workers: 2,
    env: { SVC_DATA_DIR: join(dir, 'data'), SVC_TEST_LOADS: loads, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${RECORDER}`.trim() },
  });
  t.teardown(() => server.stop());

  // Children of the server once it is ready: no esbuild service kept after the bundle was built.
  const children = execFileSync('ps', ['-e', '-o', 'ppid=,comm='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([ppid]) => ppid === String(server.proc.pid))
    .map(([, comm]) => comm);
  t.same(children.filter((c) => /esbuild/.test(c ?? '')), [], 'no esbuild process left running after ready');
  t.notMatch(server.output(), /sandboxes: local provider/, 'no sandbox provider started for an app that uses none');

  const byThread = new Map<string, Set<string>>();
  for (const line of readFileSync(loads, 'utf8').split('\n')) {
    const [thread, , what] = line.split(' ');
    if (!thread || !what) continue;
    const pkg = packageOf(what);
    if (pkg) (byThread.get(thread) ?? byThread.set(thread, new Set()).get(thread))?.add(pkg);
  }
  const workers = [...byThread.keys()].filter((k) => k !== 'main');
  t.ok(byThread.get('main')?.has('better-sqlite3'), 'the recorder saw the main thread load the SQLite driver');
  t.ok(workers.filter((w) => byThread.get(w)?.has('better-sqlite3')).length >= 2, 'and each of the two worker threads');
  for (const [thread, packages] of byThread) {
    t.same(
      UNUSED.filter((p) => packages.has(p)),
      [],
      `${thread} loaded none of ${UNUSED.join(', ')}`,
    );
  }
});
