// `svc db`: the operator commands over real stores (SQLite files in temporary folders; PostgreSQL
// when its store is in this build), run as the `svc` command is run.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Graph, openAnchorStore, type AnchorStore, type StoredDoc } from '../../actors/graph/index.ts';
import { SqliteStore } from '../../stores/sqlite/index.ts';
import { openUsersRepository, userRecord, type UsersRepository } from '../../actors/identity/index.ts';
import { SqliteUsersRepository } from '../../stores/sqlite/index.ts';
import * as app from '../fixtures/db-app.ts';
import { openGraph } from '../helpers/graph.ts';
import { startServer, skipPostgres, startPostgres } from '../kit/index.ts';

// Every `svc` run compiles its TypeScript anew (seconds each on a busy machine).
t.setTimeout(600_000);
// The cases share nothing (a project folder each, a PostgreSQL of its own): three at a time, as most of their time
// is waiting on `svc` child processes one after another.
t.jobs = 3;

const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;
const V1 = new URL('../fixtures/db-app.ts', import.meta.url).pathname;
const V2 = new URL('../fixtures/db-app-v2.ts', import.meta.url).pathname;
const LOAD = new URL('../fixtures/db-load.ts', import.meta.url).pathname;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runNode(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const clean = { ...process.env };
    for (const k of ['DOCDB_URI', 'SVC_DATA_DIR', 'SVC_DB_COPY_STOP_AFTER']) delete clean[k];
    const p = spawn(process.execPath, args, { cwd, env: { ...clean, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `svc db …` in a project folder. */
function svcDb(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runNode([BIN, 'db', ...args], cwd, env);
}

/** `svc db … --json`, its answer parsed (exit 0 expected). */
async function json<T = Record<string, unknown>>(t: Test, cwd: string, args: string[], env: Record<string, string> = {}): Promise<T> {
  const r = await svcDb(cwd, [...args, '--json'], env);
  t.equal(r.code, 0, `svc db ${args.join(' ')} exits 0${r.code ? `: ${r.stderr}` : ''}`);
  return JSON.parse(r.stdout) as T;
}

/** A failure: exit 1 and one line on stderr (no stack). */
function failsWithOneLine(t: Test, r: Ran, match: RegExp, what: string): void {
  t.equal(r.code, 1, `${what}: exit 1`);
  const lines = r.stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, `${what}: one line (${r.stderr.trim()})`);
  t.match(lines[0], match, what);
  t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack`);
}

/** Load roots with an app in a process of its own (what does not decode goes to quarantine). */
async function loadWith(appPath: string, file: string, roots: string[]): Promise<{ reports: Record<string, { id: string; type: string; context: Record<string, unknown> }[]>; quarantined: { id: string; reason: string }[] }> {
  const r = await runNode(['--import', 'tsx', LOAD, appPath, file, ...roots], process.cwd());
  if (r.code !== 0) throw new Error(`db-load failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

interface Project {
  dir: string;
  data: string;
  anchorsFile: string;
  usersFile: string;
  roots: string[];
}

/** A project whose data folder holds two graphs of db-app (v1) and a few users, tokens, API keys and deletions. */
async function seedProject(t: Test): Promise<Project> {
  const dir = t.testdir({});
  const data = join(dir, '.svc', 'data');
  const anchorsFile = join(data, 'anchor_store.db');
  const usersFile = join(data, 'users.db');
  const g = openGraph({ store: SqliteStore.open(anchorsFile), app });
  const roots = [Graph.newRootId(), Graph.newRootId()];
  await g.graph.spawn('Seed', { n: 2 }, { caller: { rootId: roots[0] as string } });
  await g.graph.spawn('Seed', { n: 3 }, { caller: { rootId: roots[1] as string } });
  await g.store.addAlias('OldNote', 'Note');
  await g.close();
  const users = SqliteUsersRepository.open(usersFile);
  const ident = (value: string, type: 'username' | 'email' = 'username') => ({ type, value_raw: value, value_normalized: value.toLowerCase(), verified: type === 'email', is_recovery: type === 'email' });
  await users.create(userRecord({ user_id: 'u-alice', role: 'admin', identities: [ident('Alice'), ident('alice@example.com', 'email')], password_hash: '$argon2id$fake', profile: { theme: 'dark', n: { b: 1, a: [1, 2] } } }));
  await users.create(userRecord({ user_id: 'u-bob', role: 'user', identities: [ident('bob')], password_hash: 'x' }));
  await users.create(userRecord({ user_id: 'u-carol', role: 'user', identities: [ident('carol')] }));
  await users.putOneTimeToken({ token_hash: 'h1', user_id: 'u-alice', kind: 'reset', identity: 'alice@example.com', expires_at: Date.now() + 3_600_000 });
  await users.putOneTimeToken({ token_hash: 'h2', user_id: 'u-bob', kind: 'verify', identity: 'bob', expires_at: Date.now() + 3_600_000 });
  await users.takeOneTimeToken('h2', 'verify');
  await users.putApiKey({ api_key_id: 'a'.repeat(32), user_id: 'u-alice', name: 'ci', key_hash: 'f'.repeat(64), walkers: ['Ingest'], created_at: '2024-02-03T04:05:06.000Z', expires_at: null });
  // Deleted with carol below: not copied.
  await users.putApiKey({ api_key_id: 'c'.repeat(32), user_id: 'u-carol', name: 'gone', key_hash: 'e'.repeat(64), walkers: null, created_at: '2024-02-03T04:05:06.000Z', expires_at: '2030-01-01T00:00:00.000Z' });
  await users.updateAndRevoke('u-bob', { must_change_password: true });
  await users.delete('u-carol');
  await users.close();
  return { dir, data, anchorsFile, usersFile, roots };
}

/** Everything a store holds, read back through the interfaces, in a comparable form. */
async function contents(anchors: AnchorStore, users: UsersRepository) {
  const docs: StoredDoc[] = [];
  for (let next = 0; ; ) {
    const page = await anchors.scan!(next, 7);
    if (page.docs.length === 0) break;
    docs.push(...page.docs.map((d) => ({ ...d, source: d.source ?? null, target: d.target ?? null, body: typeof d.body === 'string' ? JSON.parse(d.body) : d.body })));
    next = page.next;
  }
  const allUsers = [];
  for (let after = ''; ; ) {
    const page = await users.scanUsers!(after, 2);
    if (page.length === 0) break;
    allUsers.push(...page);
    after = page[page.length - 1]!.user_id;
  }
  return {
    docs,
    // Bodies as data: a document database keeps them in its own form (JSONB reorders keys).
    quarantine: (await anchors.quarantined()).map((q) => ({ ...q, body: typeof q.body === 'string' ? JSON.parse(q.body) : q.body })).sort((a, b) => a.id.localeCompare(b.id)),
    aliases: (await anchors.aliases()).sort(),
    users: allUsers,
    tokens: (await users.oneTimeTokens!()).sort((a, b) => a.token_hash.localeCompare(b.token_hash)),
    apiKeys: await users.apiKeys!(),
    deleted: await users.deletedUsers!(),
    drops: await users.graphDrops!(),
  };
}

/** The repository's way of skipping: loudly, with the reason. */
function skipLoudly(t: Test, reason: string): void {
  t.comment(`SKIPPED LOUDLY: ${reason}`);
  t.pass(`skipped: ${reason}`);
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

t.test('stats: counts of everything stored, as text and as JSON', async (t) => {
  const p = await seedProject(t);
  const stats = await json<{ graph: Record<string, unknown>; users: Record<string, unknown> }>(t, p.dir, ['stats']);
  const store = SqliteStore.open(p.anchorsFile);
  const expected = await store.stats();
  await store.close();
  // Per root: the root, and n × (Note, Task, Score, a Tagged edge, two generic edges).
  t.match(stats.graph, { kind: 'sqlite', documents: 2 * 7 + 3 * 6, nodes: 2 + 5 * 3, edges: 5 * 3, roots: 2, quarantined: 0, aliases: 1 });
  t.same(stats.graph.byType, expected.byType);
  t.match(stats.graph.byType, { Note: 5, Task: 5, Score: 5, Tagged: 5, Root: 2 });
  t.same(stats.users, { kind: 'sqlite', users: 2, deleted_users: 1, one_time_tokens: 2, pending_graph_drops: 1 });
  const text = await svcDb(p.dir, ['stats']);
  t.equal(text.code, 0);
  t.match(text.stdout, /documents\s+32 \(nodes 17, edges 15\)/);
  t.match(text.stdout, /users\s+2/);
  // --db names another store: here the same data folder by its path.
  t.same((await json<{ graph: unknown }>(t, '/', ['stats', '--db', p.data])).graph, stats.graph);
});

t.test('schema evolution: inspect tells what would quarantine; alias add + recover-all brings renamed classes back', async (t) => {
  const p = await seedProject(t);
  const plain = await json<{ app: null; types: { type: string; decodable?: number }[]; would_quarantine: null; aliases: unknown }>(t, p.dir, ['inspect']);
  t.equal(plain.app, null);
  t.equal(plain.would_quarantine, null);
  t.notOk('decodable' in (plain.types[0] ?? {}), 'without an app nothing is decoded');
  t.same(plain.aliases, [['OldNote', 'Note']]);

  // The project is the folder of --app (as for svc start): --db names the store when the app lives elsewhere.
  const v1 = await json<{ would_quarantine: number }>(t, p.dir, ['inspect', '--app', V1, '--db', p.data]);
  // The app of today is the project's own app.ts.
  copyFileSync(V2, join(p.dir, 'app.ts'));
  t.equal(v1.would_quarantine, 0, 'with the app that wrote them, everything loads');

  const v2 = await json<{ would_quarantine: number; types: { type: string; documents: number; decodable: number; failing: { reason: string; count: number }[]; resolves_to: unknown }[] }>(t, p.dir, ['inspect', '--app', 'app.ts']);
  const type = (name: string) => v2.types.find((x) => x.type === name);
  t.equal(v2.would_quarantine, 10, 'Task (renamed) and Score (incompatible) would quarantine');
  t.match(type('Note'), { documents: 5, decodable: 5, failing: [] }, 'an added field with a default loads');
  t.match(type('Task'), { documents: 5, decodable: 0, resolves_to: null, failing: [{ reason: /unresolvable archetype .*Task/, count: 5 }] });
  t.match(type('Score'), { decodable: 0, failing: [{ reason: /does not fit Score's schema/, count: 5 }] });
  const text = await svcDb(p.dir, ['inspect', '--app', 'app.ts']);
  t.match(text.stdout, /10 documents would go to quarantine on load/);

  // Serving v2 loads the graphs: Task and Score documents go to quarantine, Notes load (pinned filled in).
  const first = await loadWith(V2, p.anchorsFile, p.roots);
  t.equal(first.quarantined.length, 10);
  const notes = Object.values(first.reports).flat().filter((r) => r.type === 'Note');
  t.equal(notes.length, 5);
  t.ok(notes.every((n) => n.context.pinned === false), 'the new field has its default');

  const listed = await json<{ quarantined: { id: string; type: string; reason: string; at: string }[] }>(t, p.dir, ['quarantine', 'list']);
  t.equal(listed.quarantined.length, 10);
  t.ok(listed.quarantined.every((q) => q.id && q.type && q.reason && q.at), 'id, type, reason, at');
  t.match((await svcDb(p.dir, ['quarantine', 'list'])).stdout, /Task\s+unresolvable archetype/);

  // An alias to a class the app lacks is refused; one it has is kept in the store.
  failsWithOneLine(t, await svcDb(p.dir, ['alias', 'add', 'Task', 'Chores', '--app', 'app.ts']), /^svc: .*has no node or edge class Chores/, 'alias to a missing class');
  failsWithOneLine(t, await svcDb(p.dir, ['alias', 'add', 'Task', 'not a name']), /^svc: "not a name" is not a class name/, 'alias to a bad name');
  t.same(await json(t, p.dir, ['alias', 'add', 'Task', 'Chore', '--app', 'app.ts']), { store: `${p.anchorsFile} + ${p.usersFile}`, alias: ['Task', 'Chore'] });
  t.same((await json<{ aliases: [string, string][] }>(t, p.dir, ['alias', 'list'])).aliases.sort(), [['OldNote', 'Note'], ['Task', 'Chore']]);

  failsWithOneLine(t, await svcDb(p.dir, ['recover-all']), /^svc: recover-all decodes documents against the app/, 'recover-all without an app');
  const recovered = await json<{ recovered: { type: string }[]; remaining: { type: string; reason: string }[] }>(t, p.dir, ['recover-all', '--app', 'app.ts']);
  t.equal(recovered.recovered.length, 5);
  t.ok(recovered.recovered.every((r) => r.type === 'Task'));
  t.equal(recovered.remaining.length, 5);
  t.ok(recovered.remaining.every((r) => r.type === 'Score' && /does not fit Score's schema/.test(r.reason)), 'the incompatible ones stay, with their reason');

  const second = await loadWith(V2, p.anchorsFile, p.roots);
  t.equal(second.quarantined.length, 0);
  t.equal(Object.values(second.reports).flat().filter((r) => r.type === 'Chore').length, 5, 'renamed documents load as the new class');
  t.equal((await json<{ would_quarantine: number }>(t, p.dir, ['inspect', '--app', 'app.ts'])).would_quarantine, 0);

  // show (whole, body included), drop, and the errors of an unknown id.
  const score = recovered.remaining[0] as unknown as { id: string };
  const shown = await json<{ id: string; arch_type: string; reason: string; body: { context: { points: number } } }>(t, p.dir, ['quarantine', 'show', score.id]);
  t.match(shown, { id: score.id, arch_type: 'Score', reason: /does not fit/ });
  t.type(shown.body.context.points, 'number');
  t.same(await json(t, p.dir, ['quarantine', 'drop', score.id]), { store: `${p.anchorsFile} + ${p.usersFile}`, dropped: score.id });
  t.equal((await json<{ quarantined: unknown[] }>(t, p.dir, ['quarantine', 'list'])).quarantined.length, 4);
  failsWithOneLine(t, await svcDb(p.dir, ['quarantine', 'drop', score.id]), /^svc: no quarantined document/, 'drop an unknown id');
  failsWithOneLine(t, await svcDb(p.dir, ['quarantine', 'show', 'nope']), /^svc: no quarantined document "nope"/, 'show an unknown id');
});

/**
 * Copy the project's store to `middle` and back into a fresh SQLite file; both copies verified, and
 * what the last holds read back equal to the original. `middle` is a SQLite file, or a URI of another
 * backend (PostgreSQL, MongoDB).
 */
async function roundTrip(t: Test, p: Project, middle: string): Promise<void> {
  // Something in the quarantine: what v2 cannot load.
  await loadWith(V2, p.anchorsFile, p.roots);
  // (One testdir per test: a second t.testdir() would empty the first.)
  const back = join(p.dir, 'elsewhere', 'back.db');
  const there = await json<{ ok: boolean; differs: string[]; copied: Record<string, number>; verified: Record<string, { source: { count: number; checksum: string }; destination: { count: number; checksum: string } }> }>(
    t, p.dir, ['copy', '--from', p.data, '--to', middle],
  );
  t.equal(there.ok, true);
  t.same(there.differs, []);
  t.match(there.copied, { documents: 32 - 10, quarantine: 10, aliases: 1, users: 2, one_time_tokens: 2, api_keys: 1, deleted_users: 1, graph_drops: 1 });
  const home = await json<typeof there>(t, p.dir, ['copy', '--from', middle, '--to', back]);
  t.equal(home.ok, true);
  for (const kind of Object.keys(there.verified)) {
    t.same(home.verified[kind]!.destination, there.verified[kind]!.source, `${kind}: same count and checksum after the round trip`);
  }
  const original = await contents(SqliteStore.open(p.anchorsFile), SqliteUsersRepository.open(p.usersFile));
  const anchors = await openAnchorStore(`sqlite:${back}`);
  const users = await openUsersRepository(`sqlite:${back}`);
  const read = await contents(anchors, users);
  t.same(read, original, 'read back: the same documents (in insertion order), quarantine, aliases, users, tokens, API keys, deletions');
  t.same(read.apiKeys.map((k) => k.user_id), ['u-alice'], 'the API key of the live user survives the round trip');
  await anchors.close();
  await users.close();
  t.same(readdirSync(join(p.dir, '.svc')).filter((f) => f.startsWith('db-copy-')), [], 'no checkpoint left after a verified copy');
}

t.test('copy SQLite → SQLite: verified equal, and read back equal', async (t) => {
  const p = await seedProject(t);
  // Something in the quarantine too.
  await loadWith(V2, p.anchorsFile, p.roots);
  const middle = join(p.dir, 'elsewhere', 'middle.db');
  const there = await json<{ copied: { quarantine: number } }>(t, p.dir, ['copy', '--from', p.data, '--to', middle]);
  t.equal(there.copied.quarantine, 10);
  // A second copy onto a copy is idempotent: still equal.
  const text = await svcDb(p.dir, ['copy', '--from', p.data, '--to', middle]);
  t.match(text.stdout, /verified: the destination holds exactly what the source holds/);
  t.match(text.stdout, /quarantine\s+10\s+10\s+10\s+equal/);
  const back = await loadWith(V2, middle, p.roots);
  t.equal(back.quarantined.length, 0, 'the copy holds the quarantine as quarantine');
  t.same(Object.values(back.reports).flat().map((r) => r.type), ['Note', 'Note', 'Note', 'Note', 'Note'], 'the copy serves what loads');
});

t.test('round trip SQLite → SQLite → SQLite', async (t) => {
  const p = await seedProject(t);
  await roundTrip(t, p, join(p.dir, 'elsewhere', 'middle.db'));
  await t.test('a quarantined body that is not JSON', (t) => corruptRoundTrip(t, join(p.dir, 'elsewhere', 'corrupt.db')));
});

/** A quarantine entry whose body is not even JSON (what quarantine is for) goes there and back as it is. */
async function corruptRoundTrip(t: Test, middle: string): Promise<void> {
  const dir = t.testdir({});
  const source = join(dir, 'source.db');
  const store = SqliteStore.open(source);
  const g = openGraph({ store, app });
  await g.graph.spawn('Seed', { n: 1 }, { caller: { rootId: Graph.newRootId() } });
  const [doc] = (await store.scan(0, 1)).docs;
  await store.putQuarantine([{ ...(doc as StoredDoc), id: 'c'.repeat(32), body: '{not json', reason: 'corrupt body: test', at: new Date().toISOString() }]);
  await g.close();
  SqliteUsersRepository.open(source).close();
  const back = join(dir, 'back.db');
  t.match(await json(t, dir, ['copy', '--from', source, '--to', middle]), { ok: true, copied: { quarantine: 1 } });
  t.match(await json(t, dir, ['copy', '--from', middle, '--to', back]), { ok: true, copied: { quarantine: 1 } });
  const shown = await json<{ body: unknown }>(t, dir, ['quarantine', 'show', 'c'.repeat(32), '--db', back]);
  t.equal(shown.body, '{not json', 'the body is kept exactly');
}

t.test('an interrupted copy resumes from its checkpoint; --restart starts over', async (t) => {
  const p = await seedProject(t);
  const dest = join(p.dir, 'elsewhere', 'dest.db');
  const cut = await svcDb(p.dir, ['copy', '--from', p.data, '--to', dest], { SVC_DB_COPY_STOP_AFTER: '12' });
  failsWithOneLine(t, cut, /^svc: copy interrupted after 12 documents/, 'the interrupted run');
  const checkpoints = readdirSync(join(p.dir, '.svc')).filter((f) => /^db-copy-[0-9a-f]{16}\.json$/.test(f));
  t.equal(checkpoints.length, 1, 'a checkpoint under .svc/');
  const checkpoint = JSON.parse(readFileSync(join(p.dir, '.svc', checkpoints[0] as string), 'utf8'));
  t.match(checkpoint, { documents: { copied: 12, done: false }, users: { copied: 0 } });
  t.notMatch(JSON.stringify(checkpoint), /hunter2/);
  const partial = SqliteStore.open(dest);
  t.equal(await partial.count(), 12, 'the destination holds what was copied');
  await partial.close();

  const resumed = await svcDb(p.dir, ['copy', '--from', p.data, '--to', dest, '--json']);
  t.equal(resumed.code, 0, resumed.stderr);
  t.match(resumed.stderr, /resuming the copy from its checkpoint \(12 documents/);
  const report = JSON.parse(resumed.stdout);
  t.match(report, { ok: true, resumed: { documents: 12, users: 0 }, copied: { documents: 32 - 12, users: 2 } });
  t.notOk(existsSync(join(p.dir, '.svc', checkpoints[0] as string)), 'the checkpoint is gone once verified');

  // Interrupted again, then --restart: the checkpoint is ignored, everything copied again (idempotently).
  await svcDb(p.dir, ['copy', '--from', p.data, '--to', dest], { SVC_DB_COPY_STOP_AFTER: '5' });
  const restarted = await json<{ ok: boolean; resumed: unknown; copied: { documents: number } }>(t, p.dir, ['copy', '--from', p.data, '--to', dest, '--restart']);
  t.match(restarted, { ok: true, resumed: null, copied: { documents: 32 } });
});

t.test('copy refuses a store onto itself, and fails (exit 1) when the destination holds more', async (t) => {
  const p = await seedProject(t);
  failsWithOneLine(t, await svcDb(p.dir, ['copy', '--from', p.data, '--to', `${p.data}/`]), /^svc: --from and --to are the same store/, 'onto itself');
  failsWithOneLine(t, await svcDb(p.dir, ['copy', '--to', p.data]), /^svc: --from and --to are the same store/, 'the configured store onto itself');
  const dest = join(p.dir, 'elsewhere', 'dest.db');
  // A svc serving the SQLite source: the copy refuses (the service is stopped during a copy).
  const server = await startServer({ entry: V1, env: { SVC_DATA_DIR: p.data } });
  failsWithOneLine(t, await svcDb(p.dir, ['copy', '--from', p.data, '--to', dest]), /^svc: another svc process \(pid \d+\) is serving the data in .*: stop it during the copy$/, 'while served');
  await server.stop();
  const other = openGraph({ store: SqliteStore.open(dest), app });
  await other.graph.spawn('Seed', { n: 1 }, { caller: { rootId: Graph.newRootId() } });
  await other.close();
  const r = await svcDb(p.dir, ['copy', '--from', p.data, '--to', dest, '--json']);
  t.equal(r.code, 1);
  t.match(r.stderr, /^svc: the copy is not equal to its source: documents \(source 32, destination 39\)/);
  t.equal(r.stderr.trimEnd().split('\n').length, 1);
  t.match(JSON.parse(r.stdout), { ok: false, differs: ['documents'] }, 'the report still says what differs');
});

t.test('errors: one line, exit 1, never a password', async (t) => {
  const p = await seedProject(t);
  const dir = join(p.dir, 'empty');
  mkdirSync(dir);
  failsWithOneLine(t, await svcDb(dir, []), /^svc: svc db needs a command/, 'no command');
  failsWithOneLine(t, await svcDb(dir, ['vacuum']), /^svc: unknown svc db command "vacuum"/, 'unknown command');
  failsWithOneLine(t, await svcDb(dir, ['stats']), /^svc: no SQLite store at .*anchor_store\.db/, 'nothing stored');
  t.notOk(existsSync(join(dir, '.svc', 'data', 'anchor_store.db')), 'and nothing created');
  failsWithOneLine(t, await svcDb(dir, ['stats', '--db', 'foo://admin:hunter2@db/x']), /^svc: cannot open the graph store at foo:\/\/\*\*\*:\*\*\*@db\/x: unknown anchor store backend "foo:"/, 'unknown scheme');
  const port = await closedPort();
  for (const args of [
    ['stats', '--db', `postgres://admin:hunter2@127.0.0.1:${port}/svc`],
    ['copy', '--from', `postgres://admin:hunter2@127.0.0.1:${port}/svc`, '--to', join(dir, 'x.db')],
  ]) {
    const r = await svcDb(dir, args);
    failsWithOneLine(t, r, /^svc: .*postgres:\/\/\*\*\*:\*\*\*@127\.0\.0\.1.*ECONNREFUSED/, `unreachable: ${args[0]}`);
    t.notMatch(r.stderr + r.stdout, /hunter2/, 'no password');
  }
  failsWithOneLine(t, await svcDb(p.dir, ['inspect', '--app', join(dir, 'missing.ts')]), /^svc: entry file not found/, 'a missing app');
  failsWithOneLine(t, await svcDb(p.dir, ['quarantine', 'show']), /^svc: usage: svc db quarantine show <id>/, 'no id');
  failsWithOneLine(t, await svcDb(p.dir, ['copy']), /^svc: usage: svc db copy --from/, 'copy without sides');
});

t.test('round trip SQLite → PostgreSQL → SQLite', async (t) => {
  if (skipPostgres) return skipLoudly(t, skipPostgres);
  const pgs = await startPostgres(t);
  const uri = await pgs.database();
  // The PostgreSQL stores land in their own change: until both open here, this waits for them.
  let missing: string | undefined;
  try {
    const anchors = await openAnchorStore(uri);
    const users = await openUsersRepository(uri);
    const lacks = [['scan', 'putDocs', 'putQuarantine'].filter((m) => typeof (anchors as unknown as Record<string, unknown>)[m] !== 'function'), ['scanUsers', 'putUsers', 'oneTimeTokens', 'putOneTimeTokens', 'apiKeys', 'putApiKeys', 'deletedUsers', 'putDeletedUsers', 'graphDrops', 'putGraphDrops'].filter((m) => typeof (users as unknown as Record<string, unknown>)[m] !== 'function')].flat();
    if (lacks.length) missing = `the PostgreSQL stores lack ${lacks.join(', ')}`;
    await anchors.close();
    await users.close();
  } catch (error) {
    missing = `the PostgreSQL stores do not open in this build (${(error as Error).message.split('\n')[0]})`;
  }
  if (missing) return skipLoudly(t, missing);
  const p = await seedProject(t);
  await roundTrip(t, p, uri);
  const stats = await json<{ graph: { kind: string; documents: number }; users: { users: number } }>(t, p.dir, ['stats', '--db', uri]);
  t.match(stats, { graph: { kind: 'postgres', documents: 22, quarantined: 10 }, users: { users: 2 } });
  await t.test('a quarantined body that is not JSON', async (t) => {
    await corruptRoundTrip(t, await pgs.database());
  });
});

t.test('round trip SQLite → SVC_TEST_DOCDB_URI → SQLite (MongoDB, when one is given)', { skip: process.env.SVC_TEST_DOCDB_URI ? false : 'SVC_TEST_DOCDB_URI is not set (no MongoDB server here)' }, async (t) => {
  const p = await seedProject(t);
  await roundTrip(t, p, process.env.SVC_TEST_DOCDB_URI as string);
});
