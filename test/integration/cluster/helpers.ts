// Drivers of the cluster tests over the cluster fixture app's walkers (`Bump`, `Read`): load through the members,
// read the counters back, time one request, poll a condition, find a member's id. The members themselves are
// started by the test kit (`startCluster` in test/kit).
import { adminToken, walk, type Answer, type Server } from '../../kit/index.ts';

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

/**
 * Each root's counter as the member at `url` reads it. A 503 (a root changing owners: a member joining again or its
 * lease lapsing, answered with Retry-After) is asked again, as a client would, for up to 15 s.
 */
export async function readAll(url: string, tokens: string[]): Promise<number[]> {
  return Promise.all(
    tokens.map(async (token) => {
      const until = Date.now() + 15_000;
      for (;;) {
        const r = await walk(url, 'Read', {}, token);
        if (r.status !== 503 || Date.now() > until) return r.body?.data?.reports?.[0] as number;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }),
  );
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
