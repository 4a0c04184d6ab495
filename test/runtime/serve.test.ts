// The runtime of a serving thread, composed and started in this thread (no worker pool, no child process).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ActorSystem } from 'svc/kernel';
import { bootstrapAccounts, Passwords, ThreadHasher } from '../../actors/identity/index.ts';
import { SqliteUsersRepository } from '../../stores/sqlite/index.ts';
import { createRuntime, dataPaths, loadConfig, type ServeBoot } from '../../runtime/index.ts';
import { freePort } from '../../runtime/main/ports.ts';
import * as app from '../fixtures/ws-hook-app.ts';
import { TEST_SECRET } from '../kit/index.ts';
import { claimsOf, register, tokenOf } from '../helpers/identity.ts';

t.test('createRuntime: the modules of a serving thread start in order, serve HTTP and WebSocket with hooks, drain and close', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-runtime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { config } = loadConfig({ dir, env: { SVC_DATA_DIR: join(dir, 'data') }, flags: { 'scale.server.host': '127.0.0.1' } });
  const { storePath, usersPath } = dataPaths(dir, config);
  const hasher = new ThreadHasher({ threads: 1 });
  t.teardown(() => hasher.close());
  const users = SqliteUsersRepository.open(usersPath);
  await bootstrapAccounts({ users, passwords: new Passwords(hasher), admin: config['scale.admin'], passwordFile: join(dir, 'admin_password'), say: () => undefined });
  await users.close();

  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  hasher.serve(system);
  const port = await freePort('127.0.0.1', 0);
  const boot: ServeBoot = {
    faux: false,
    moduleName: 'ws-hook-app',
    title: 'runtime test',
    projectRoot: dir,
    config,
    jwtSecret: TEST_SECRET,
    dev: false,
    transport: 'node',
    port,
    listeners: ['local'],
    listenNow: true,
    storePath,
    usersPath,
    version: '0.0.0',
  };
  const lines: string[] = [];
  const rt = createRuntime({ system, boot, app: app as unknown as Record<string, unknown>, logDestination: { write: (line: string) => void lines.push(line) } });
  await rt.start();
  t.same(rt.startedModules, ['log', 'bus', 'metrics', 'events', 'store', 'data', 'sv', 'graph', 'users', 'identity', 'hooks', 'consumers', 'sandbox', 'fields', 'http', 'websocket', 'server', 'control', 'swap']);
  const url = `http://127.0.0.1:${port}`;

  const hello = await fetch(`${url}/walker/Hello`, { method: 'POST' });
  t.equal(hello.status, 200);
  t.same(((await hello.json()) as { data: { reports: unknown[] } }).data.reports, ['hello']);
  const blocked = await fetch(`${url}/walker/Hello`, { method: 'POST', headers: { 'x-block': '1' } });
  t.equal(blocked.status, 403, 'the hook refuses over HTTP');
  await register(url, 'rt-user');
  const token = await tokenOf(url, 'rt-user');
  const mine = await new Promise<unknown>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/Mine?token=${token}`);
    ws.on('open', () => ws.send(JSON.stringify({ id: 2 })));
    ws.on('message', (data) => {
      resolve(JSON.parse(String(data)));
      ws.close();
    });
    ws.on('error', reject);
  });
  t.match(mine, { id: 2, ok: true, data: { reports: [{ user: claimsOf(token).user_id }] } }, 'identity is wired: register, hash, log in, authenticate a session');

  // The hook runs on the upgrade too.
  const refused = await new Promise<number>((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/Echo`, { headers: { 'x-block': '1' } });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => resolve(101));
    ws.on('error', () => undefined);
  });
  t.equal(refused, 403, 'a blocked upgrade is refused with the hook status');
  const echoed = await new Promise<unknown>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/Echo`);
    ws.on('open', () => ws.send(JSON.stringify({ id: 1, msg: 'hi' })));
    ws.on('message', (data) => {
      resolve(JSON.parse(String(data)));
      ws.close();
    });
    ws.on('error', reject);
  });
  t.match(echoed, { id: 1, ok: true });

  await rt.drain(2000);
  await t.rejects(fetch(`${url}/health`), 'no new connections once drained');
  await rt.close();
  t.same(rt.startedModules, [], 'every module closed');
});
