// Members of a cluster for the tests: `svc start` processes sharing one Redis and one data folder.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { post, startServer, tokenFor, type Server } from '../../helpers/server.ts';
import type { RedisServer } from '../../helpers/redis.ts';

export const CLUSTER_APP = new URL('../../fixtures/cluster-app.ts', import.meta.url).pathname;

export interface ClusterSpec {
  redis: RedisServer;
  dataDir?: string;
  name?: string;
  env?: Record<string, string>;
  entry?: string;
  /** Worker threads per member (1). */
  workers?: number;
}

export interface TestCluster {
  dataDir: string;
  name: string;
  env: Record<string, string>;
  members: Server[];
  /** Start one more member (it joins). */
  add(options?: { env?: Record<string, string>; entry?: string }): Promise<Server>;
  stopAll(): Promise<void>;
}

/** Start `n` members one after another (each prints its ready line once it joined). */
export async function startCluster(t: { teardown(fn: () => unknown): void }, n: number, spec: ClusterSpec): Promise<TestCluster> {
  const dataDir = spec.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-cluster-'));
  const name = spec.name ?? `test-${randomBytes(3).toString('hex')}`;
  const env = { KV_URL: spec.redis.url, SVC_DATA_DIR: dataDir, SVC_CLUSTER_NAME: name, ...spec.env };
  const members: Server[] = [];
  const cluster: TestCluster = {
    dataDir,
    name,
    env,
    members,
    async add(options = {}) {
      const server = await startServer({ entry: options.entry ?? spec.entry ?? CLUSTER_APP, env: { ...env, ...options.env }, ...(spec.workers ? { workers: spec.workers } : {}) });
      members.push(server);
      return server;
    },
    async stopAll() {
      await Promise.all(members.map((m) => m.stop('SIGKILL')));
    },
  };
  t.teardown(() => cluster.stopAll());
  for (let i = 0; i < n; i++) await cluster.add();
  // Every member has seen every other before the test begins.
  await Promise.all(members.map((m) => waitForMembers(m, n)));
  return cluster;
}

/** An admin token of the cluster's users store. */
export function adminToken(server: Server): Promise<string> {
  // One per data folder: members share it, and making the account twice at once would collide.
  let token = admins.get(server.dataDir);
  if (!token) admins.set(server.dataDir, (token = tokenFor('cluster-admin', { server, role: 'admin' })));
  return token;
}
const admins = new Map<string, Promise<string>>();

/** Poll `/admin/cluster` until the member sees `count` members. */
export async function waitForMembers(server: Server, count: number, timeoutMs = 20_000): Promise<unknown[]> {
  const token = await adminToken(server);
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    const res = await fetch(`${server.url}/admin/cluster`, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
    if (res?.status === 200) {
      const body = (await res.json()) as { data: { members: unknown[] } };
      last = body.data.members;
      if (body.data.members.length === count) return body.data.members;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${server.url} did not see ${count} members in ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

/** Run `total` calls of `fn(i)` with at most `width` at a time; their results in order. */
export async function pool<R>(total: number, width: number, fn: (i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(total);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, total) }, async () => {
      while (next < total) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** POST a walker; status and the envelope. */
export function walk(url: string, walker: string, body: unknown = {}, token?: string): Promise<{ status: number; body: any; headers: Headers }> {
  return post(`${url}/walker/${walker}`, body, token ? { authorization: `Bearer ${token}` } : {}).catch((error: unknown) => ({ status: 0, body: String(error), headers: new Headers() }));
}

export type Answer = { status: number; body: any; headers: Headers };

/** Keep bumping every user's counter through `urls` until `stop()`; count what was acknowledged per user. */
export function load(urls: () => string[], tokens: string[]) {
  const acked = tokens.map(() => 0);
  const failures: Answer[] = [];
  let running = true;
  const done = Promise.all(
    tokens.map(async (token, i) => {
      let n = 0;
      while (running) {
        const live = urls();
        const r = await walk(live[n++ % live.length] as string, 'Bump', {}, token);
        if (r.status === 200) acked[i]!++;
        else failures.push(r);
      }
    }),
  );
  return {
    acked,
    failures,
    async stop() {
      running = false;
      await done;
    },
  };
}

export async function readAll(url: string, tokens: string[]): Promise<number[]> {
  return Promise.all(tokens.map(async (token) => (await walk(url, 'Read', {}, token)).body?.data?.reports?.[0] as number));
}


/** What one request got, and how long it took. */
export type Timed = { status: number; code?: string; retryAfter: string | null; value?: unknown; sentAt: number; doneAt: number };

/** POST a walker with a token; gives up after `abortMs` (status 0) so that a hang fails the test without waiting it out. */
export async function timed(url: string, walker: string, token: string, abortMs = 15_000): Promise<Timed> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${url}/walker/${walker}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{}',
      signal: AbortSignal.timeout(abortMs),
    });
    const body = (await res.json().catch(() => undefined)) as { data?: { reports?: unknown[] }; error?: { code?: string } } | undefined;
    return { status: res.status, code: body?.error?.code, retryAfter: res.headers.get('retry-after'), value: body?.data?.reports?.[0], sentAt, doneAt: Date.now() };
  } catch {
    return { status: 0, retryAfter: null, sentAt, doneAt: Date.now() };
  }
}

/** Poll `check` until it holds; fails after `ms`. */
export async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The member id (`<process>-<incarnation>`) the server runs under now, as `/admin/cluster` shows it. */
export async function memberId(via: Server, of: Server): Promise<string> {
  const res = await fetch(`${via.url}/admin/cluster`, { headers: { authorization: `Bearer ${await adminToken(via)}` } });
  const members = ((await res.json()) as { data: { members: { id: string; pid: number }[] } }).data.members;
  const found = members.find((m) => m.pid === of.proc.pid);
  if (!found) throw new Error(`no member with pid ${of.proc.pid} in ${JSON.stringify(members)}`);
  return found.id;
}
