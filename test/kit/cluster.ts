// Members of a cluster for tests and benchmarks: `svc start` processes sharing one Redis and one data folder.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { post, startServer, tokenFor, type Server } from './server.ts';
import type { RedisServer } from './redis.ts';
import { fixture } from './fixtures.ts';

/** The app cluster members run unless told otherwise: counters per user (`Bump`, `Read`). */
export const CLUSTER_APP = fixture('cluster-app.ts');

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

/** What a walker call got: the status (0 when the request failed) and the envelope. */
export type Answer = { status: number; body: any; headers: Headers };

/** POST a walker; status and the envelope. */
export function walk(url: string, walker: string, body: unknown = {}, token?: string): Promise<Answer> {
  return post(`${url}/walker/${walker}`, body, token ? { authorization: `Bearer ${token}` } : {}).catch((error: unknown) => ({ status: 0, body: String(error), headers: new Headers() }));
}
