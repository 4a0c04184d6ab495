// The conformance suite every StreamBackend passes (MemoryStreams, RedisStreams): Redis Streams semantics.
import type { Test } from 'tap';
import type { StreamBackend, StreamEntry } from '../../actors/events/streams.ts';

export interface StreamsUnderTest {
  backend: StreamBackend;
  cleanup(): Promise<void>;
}

let n = 0;
/** A stream name no other test (nor an earlier run against the same store) uses. */
function unique(what: string): string {
  return `conf:${process.pid}:${Date.now().toString(36)}:${++n}:${what}`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Wait until `ms` have passed since `since` (for idle times: no event tells us). */
async function until(since: number, ms: number): Promise<void> {
  while (Date.now() - since < ms) await sleep(5);
}

/**
 * `promise`, or a rejection naming `what` when it has not settled after `ms`. Its timer keeps
 * the process alive meanwhile (a backend's own wait timer need not: MemoryStreams' is weak).
 */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not settled after ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const ids = (entries: readonly StreamEntry[]): string[] => entries.map((e) => e.id);
const payloads = (entries: readonly StreamEntry[]): string[] => entries.map((e) => e.payload);

async function addAll(backend: StreamBackend, stream: string, items: readonly string[], maxLen = 10_000): Promise<string[]> {
  const out: string[] = [];
  for (const item of items) out.push(await backend.add(stream, item, maxLen));
  return out;
}

/** Compare two stream ids (`ms-seq`). */
function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}

export function streamsConformance(t: Test, name: string, make: () => Promise<StreamsUnderTest>): void {
  /** A fresh backend for one test, cleaned up when it ends. */
  async function open(t: Test): Promise<StreamBackend> {
    const { backend, cleanup } = await make();
    t.teardown(cleanup);
    return backend;
  }

  t.test(`${name}: conformance`, async (t) => {
    t.test('add resolves to increasing ids; a group reads the entries in order, each once', async (t) => {
      const b = await open(t);
      const s = unique('order');
      t.equal(await b.ensureGroup(s, 'g', 'earliest'), true);
      const added = await addAll(b, s, ['a', 'b', 'c']);
      for (const id of added) t.match(id, /^\d+-\d+$/);
      t.ok(compareIds(added[0] as string, added[1] as string) < 0 && compareIds(added[1] as string, added[2] as string) < 0, 'ids increase');
      const got = await b.read(s, 'g', 'c1', 10, 0);
      t.same(ids(got), added);
      t.same(payloads(got), ['a', 'b', 'c']);
      t.same(await b.read(s, 'g', 'c1', 10, 0), [], 'nothing new');
      await b.add(s, 'd', 10_000);
      t.same(payloads(await b.read(s, 'g', 'c1', 10, 0)), ['d']);
    });

    t.test('count limits a read; the rest comes with the next', async (t) => {
      const b = await open(t);
      const s = unique('count');
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, ['1', '2', '3', '4', '5']);
      t.same(payloads(await b.read(s, 'g', 'c', 2, 0)), ['1', '2']);
      t.same(payloads(await b.read(s, 'g', 'c', 2, 0)), ['3', '4']);
      t.same(payloads(await b.read(s, 'g', 'c', 2, 0)), ['5']);
    });

    t.test('two consumers of one group share the entries: each to one of them', async (t) => {
      const b = await open(t);
      const s = unique('share');
      await b.ensureGroup(s, 'g', 'earliest');
      const items = Array.from({ length: 10 }, (_, i) => `e${i}`);
      await addAll(b, s, items);
      const one = await b.read(s, 'g', 'c1', 4, 0);
      const two = await b.read(s, 'g', 'c2', 100, 0);
      t.equal(one.length, 4);
      t.equal(two.length, 6);
      t.same([...payloads(one), ...payloads(two)], items, 'together every entry once, in order');
      t.same(await b.read(s, 'g', 'c1', 100, 0), []);
    });

    t.test('two groups each see every entry', async (t) => {
      const b = await open(t);
      const s = unique('groups');
      await b.ensureGroup(s, 'g1', 'earliest');
      await b.ensureGroup(s, 'g2', 'earliest');
      await addAll(b, s, ['a', 'b', 'c']);
      t.same(payloads(await b.read(s, 'g1', 'c', 10, 0)), ['a', 'b', 'c']);
      t.same(payloads(await b.read(s, 'g2', 'c', 10, 0)), ['a', 'b', 'c']);
    });

    t.test('startFrom: latest, earliest, or after an id — applied only when the group is made', async (t) => {
      const b = await open(t);
      const s = unique('start');
      const [a] = await addAll(b, s, ['a', 'b', 'c']);
      t.equal(await b.ensureGroup(s, 'late', 'latest'), true);
      t.equal(await b.ensureGroup(s, 'early', 'earliest'), true);
      t.equal(await b.ensureGroup(s, 'after', a as string), true);
      t.equal(await b.ensureGroup(s, 'dollar', '$'), true);
      t.equal(await b.ensureGroup(s, 'zero', '0'), true);
      // A second ensureGroup makes nothing and moves nothing.
      t.equal(await b.ensureGroup(s, 'late', 'earliest'), false);
      t.equal(await b.ensureGroup(s, 'early', 'latest'), false);
      t.equal(await b.ensureGroup(s, 'after', 'latest'), false);
      t.same(await b.read(s, 'late', 'c', 10, 0), [], 'latest: nothing appended before');
      t.same(await b.read(s, 'dollar', 'c', 10, 0), []);
      t.same(payloads(await b.read(s, 'early', 'c', 10, 0)), ['a', 'b', 'c'], 'earliest: everything kept');
      t.same(payloads(await b.read(s, 'zero', 'c', 10, 0)), ['a', 'b', 'c']);
      t.same(payloads(await b.read(s, 'after', 'c', 10, 0)), ['b', 'c'], 'an id: the entries after it');
      await b.add(s, 'd', 10_000);
      t.same(payloads(await b.read(s, 'late', 'c', 10, 0)), ['d'], 'latest: what is appended from then on');
      // A group that read already is not reset by another ensureGroup.
      t.equal(await b.ensureGroup(s, 'early', 'earliest'), false);
      t.same(payloads(await b.read(s, 'early', 'c', 10, 0)), ['d']);
      t.same((await b.info(s))?.groups.map((g) => g.name).sort(), ['after', 'dollar', 'early', 'late', 'zero']);
    });

    t.test('ensureGroup makes a missing stream (empty)', async (t) => {
      const b = await open(t);
      const s = unique('mkstream');
      t.equal(await b.info(s), undefined);
      t.equal(await b.ensureGroup(s, 'g', 'latest'), true);
      t.match(await b.info(s), { length: 0, groups: [{ name: 'g', pending: 0, consumers: 0 }] });
      t.same(await b.read(s, 'g', 'c', 10, 0), []);
    });

    t.test('reading for a group that does not exist rejects (NOGROUP)', async (t) => {
      const b = await open(t);
      const s = unique('nogroup');
      await t.rejects(b.read(s, 'g', 'c', 10, 0), /NOGROUP/);
      await b.add(s, 'a', 10_000);
      await t.rejects(b.read(s, 'g', 'c', 10, 0), /NOGROUP/);
    });

    t.test('unacknowledged entries come back with pending=true for their consumer only, not as new', async (t) => {
      const b = await open(t);
      const s = unique('pending');
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, ['a', 'b', 'c']);
      const got = await b.read(s, 'g', 'c1', 2, 0);
      t.same(payloads(got), ['a', 'b']);
      t.same(await b.read(s, 'g', 'c1', 10, 0, true), got, 'own pending, from the start');
      t.same(await b.read(s, 'g', 'c1', 10, 0, true), got, 'again: still pending');
      t.same(payloads(await b.read(s, 'g', 'c1', 1, 0, true)), ['a'], 'count limits it');
      t.same(await b.read(s, 'g', 'c2', 10, 0, true), [], 'not another consumer’s');
      t.same(payloads(await b.read(s, 'g', 'c2', 10, 0)), ['c'], 'not delivered again as new');
      const started = Date.now();
      t.same(await within(b.read(s, 'g', 'c3', 10, 2_000, true), 4_000, 'the pending read'), [], 'pending reads do not block');
      t.ok(Date.now() - started < 1_000, `returned at once (${Date.now() - started} ms)`);
    });

    t.test('ack removes entries from pending (read and info); resolves to how many were pending', async (t) => {
      const b = await open(t);
      const s = unique('ack');
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, ['a', 'b', 'c']);
      const got = await b.read(s, 'g', 'c1', 10, 0);
      t.match(await b.info(s), { length: 3, groups: [{ name: 'g', pending: 3, consumers: 1 }] });
      t.equal(await b.ack(s, 'g', [got[0]?.id as string, got[2]?.id as string]), 2);
      t.same(payloads(await b.read(s, 'g', 'c1', 10, 0, true)), ['b']);
      t.match(await b.info(s), { length: 3, groups: [{ name: 'g', pending: 1 }] });
      t.equal(await b.ack(s, 'g', [got[0]?.id as string, got[1]?.id as string]), 1, 'acknowledged already: not counted');
      t.equal(await b.ack(s, 'g', []), 0);
      t.same(await b.read(s, 'g', 'c1', 10, 0, true), []);
      t.match(await b.info(s), { length: 3, groups: [{ name: 'g', pending: 0 }] });
    });

    t.test('claim takes entries idle longer than minIdleMs from another consumer, not those touched recently', async (t) => {
      const b = await open(t);
      const s = unique('claim');
      const minIdle = 100;
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, ['a', 'b', 'c', 'd']);
      const got = await b.read(s, 'g', 'c1', 10, 0);
      const readAt = Date.now();
      t.same(await b.claim(s, 'g', 'c2', minIdle, 10), [], 'nothing idle long enough yet');
      await until(readAt, minIdle + 30);
      await b.touch(s, 'g', 'c1', [got[1]?.id as string]);
      await b.touch(s, 'g', 'c1', []);
      const claimed = await b.claim(s, 'g', 'c2', minIdle, 2);
      t.same(payloads(claimed), ['a', 'c'], 'idle ones, in order, up to count; the touched one stays');
      t.same(payloads(await b.claim(s, 'g', 'c2', minIdle, 10)), ['d'], 'the rest');
      t.same(payloads(await b.read(s, 'g', 'c2', 10, 0, true)), ['a', 'c', 'd'], 'now pending for the claimer');
      t.same(payloads(await b.read(s, 'g', 'c1', 10, 0, true)), ['b'], 'the touched one is still its holder’s');
      t.same(await b.claim(s, 'g', 'c3', minIdle, 10), [], 'claimed ones start idle again');
      t.match(await b.info(s), { groups: [{ name: 'g', pending: 4 }] });
    });

    t.test('claim and pending reads drop entries trimmed away meanwhile', async (t) => {
      const b = await open(t);
      const s = unique('trimmed');
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, Array.from({ length: 250 }, (_, i) => `e${i}`));
      const held = await b.read(s, 'g', 'c1', 3, 0);
      const other = await b.read(s, 'g', 'c2', 3, 0);
      t.same(payloads(held), ['e0', 'e1', 'e2']);
      // Trim hard: ~ trimming in Redis removes whole nodes (100 entries), the first ones certainly.
      await b.add(s, 'last', 10);
      t.ok(((await b.info(s))?.length ?? 0) < 250, 'trimmed');
      t.same(await b.claim(s, 'g', 'c3', 0, 10), [], 'nothing to claim: the pending entries are gone');
      t.same(await b.read(s, 'g', 'c1', 10, 0, true), []);
      t.same(await b.read(s, 'g', 'c2', 10, 0, true), []);
      t.match(await b.info(s), { groups: [{ name: 'g', pending: 0 }] }, 'dropped from the pending list');
      t.equal(other.length, 3);
    });

    t.test('a pending read skips an entry trimmed away and gives the ones kept', async (t) => {
      const b = await open(t);
      const s = unique('trim-pending');
      await b.ensureGroup(s, 'g', 'earliest');
      await addAll(b, s, Array.from({ length: 250 }, (_, i) => `e${i}`));
      const first = await b.read(s, 'g', 'c1', 2, 0);
      await b.read(s, 'g', 'c2', 246, 0);
      const kept = await b.read(s, 'g', 'c1', 2, 0);
      t.same(payloads([...first, ...kept]), ['e0', 'e1', 'e248', 'e249']);
      await b.add(s, 'last', 10);
      t.same(await b.read(s, 'g', 'c1', 10, 0, true), kept, 'the trimmed ones are skipped');
      t.same(await b.read(s, 'g', 'c1', 1, 0, true), kept.slice(0, 1), 'count counts only what is given');
    });

    t.test('a blocking read returns as soon as an entry is added; after blockMs with nothing, []', async (t) => {
      const b = await open(t);
      const s = unique('block');
      await b.ensureGroup(s, 'g', 'latest');
      const blockMs = 3_000;
      const started = Date.now();
      const reading = b.read(s, 'g', 'c', 10, blockMs);
      await sleep(50);
      const id = await b.add(s, 'woke', 10_000);
      const got = await within(reading, blockMs + 2_000, 'the blocked read');
      const took = Date.now() - started;
      t.same(got, [{ id, payload: 'woke' }]);
      t.ok(took < blockMs / 2, `returned before the block time (${took} ms)`);

      const quiet = Date.now();
      t.same(await within(b.read(s, 'g', 'c', 10, 200), 2_200, 'the quiet read'), [], 'nothing came');
      const waited = Date.now() - quiet;
      t.ok(waited >= 150 && waited < 1_500, `waited about blockMs (${waited} ms)`);

      const at = Date.now();
      t.same(await b.read(s, 'g', 'c', 10, 0), [], 'blockMs 0: no wait');
      t.ok(Date.now() - at < 500, `returned at once (${Date.now() - at} ms)`);

      // Two readers blocked at once on one stream (a consumer each): both are served.
      const r1 = b.read(s, 'g', 'c1', 1, blockMs);
      const r2 = b.read(s, 'g', 'c2', 1, blockMs);
      await sleep(50);
      await addAll(b, s, ['x', 'y']);
      const [one, two] = await within(Promise.all([r1, r2]), blockMs + 2_000, 'two blocked reads');
      t.same([...payloads(one ?? []), ...payloads(two ?? [])].sort(), ['x', 'y']);
    });

    t.test('add trims to about maxLen', async (t) => {
      const b = await open(t);
      const s = unique('trim');
      for (let i = 0; i < 1000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => b.add(s, `e${i + j}`, 100)));
      const length = (await b.info(s))?.length ?? 0;
      t.ok(length >= 100 && length <= 300, `about 100 kept (${length})`);
      await b.ensureGroup(s, 'g', 'earliest');
      const kept = await b.read(s, 'g', 'c', 1000, 0);
      t.equal(kept.length, length);
      t.equal(kept.at(-1)?.payload, 'e999', 'the newest are kept');
    });

    t.test('add with maxBytes keeps the newest entries whose payloads fit in it, the new one always', async (t) => {
      const b = await open(t);
      const s = unique('bytes');
      const kib = (n: number, tag: string) => `${tag}:`.padEnd(n * 1024, 'x');
      // 40 entries of 10 KiB under 100 KiB: the newest 10 stay (exactly: their bytes, not their count, decide).
      for (let i = 0; i < 40; i++) await b.add(s, kib(10, `a${i}`), 10_000, 100 * 1024);
      await b.ensureGroup(s, 'g', 'earliest');
      let kept = await b.read(s, 'g', 'c', 1000, 0);
      t.same(kept.map((e) => e.payload.slice(0, 4).replace(/[:x]+$/, '')), Array.from({ length: 10 }, (_, i) => `a${30 + i}`), 'the newest ten (100 KiB) kept');
      // Small ones after: as many as fit with what is kept.
      for (let i = 0; i < 300; i++) await b.add(s, `small-${i}`.padEnd(100, '.'), 10_000, 100 * 1024);
      kept = [...kept, ...(await b.read(s, 'g', 'c', 1000, 0))];
      const info = await b.info(s);
      const all = await b.claim(s, 'g', 'c2', 0, 10_000);
      const bytes = all.reduce((n, e) => n + Buffer.byteLength(e.payload), 0);
      t.ok(bytes <= 100 * 1024, `what is kept fits (${bytes} bytes in ${info?.length} entries)`);
      t.ok(bytes > 100 * 1024 - 10 * 1024, `and no more than one entry's worth was dropped beyond it (${bytes})`);
      t.equal(all.at(-1)?.payload.startsWith('small-299'), true, 'the newest is kept');
      // One entry bigger than the limit is kept alone: an add never drops what it adds.
      await b.add(s, kib(150, 'huge'), 10_000, 100 * 1024);
      t.equal((await b.info(s))?.length, 1, 'only the one over the limit');
      await b.add(s, kib(1, 'next'), 10_000, 100 * 1024);
      t.equal((await b.info(s))?.length, 1, 'the next one replaces it');
      // Multi-byte characters count by their UTF-8 bytes.
      const u = unique('utf8');
      for (let i = 0; i < 10; i++) await b.add(u, 'é'.repeat(1000), 10_000, 5_000);
      t.equal((await b.info(u))?.length, 2, '2,000 bytes each: two fit in 5,000');
    });

    t.test('addMany (where the backend has it): the payloads in order, each an entry, in one call; resolves to their ids', async (t) => {
      const b = await open(t);
      if (!b.addMany) return void t.pass(`${name} has no addMany: the broker sends one add per event`);
      const s = unique('many');
      await b.ensureGroup(s, 'g', 'earliest');
      t.same(await b.addMany(s, [], 10_000), { ids: [] }, 'nothing to add: nothing added');
      const first = await b.add(s, 'before', 10_000);
      const { ids: added, error } = await b.addMany(s, ['a', 'b', 'c', 'é'], 10_000);
      t.equal(error, undefined);
      t.equal(added.length, 4);
      const all = [first, ...added];
      for (let i = 1; i < all.length; i++) t.ok(compareIds(all[i - 1] as string, all[i] as string) < 0, `ids increase (${all[i - 1]} < ${all[i]})`);
      const got = await b.read(s, 'g', 'c', 10, 0);
      t.same(ids(got), all);
      t.same(payloads(got), ['before', 'a', 'b', 'c', 'é']);
      t.same((await b.addMany(s, ['d'], 10_000, 1_000)).ids.length, 1, 'with a byte limit too');
      t.same(payloads(await b.read(s, 'g', 'c', 10, 0)), ['d']);
    });

    t.test('addMany trims as that many adds would: to about maxLen, and by bytes keeping the newest that fit (the newest always)', async (t) => {
      const b = await open(t);
      if (!b.addMany) return void t.pass(`${name} has no addMany`);
      const s = unique('many-trim');
      for (let i = 0; i < 1000; i += 250) await b.addMany(s, Array.from({ length: 250 }, (_, j) => `e${i + j}`), 100);
      const length = (await b.info(s))?.length ?? 0;
      t.ok(length >= 100 && length <= 350, `about 100 kept (${length})`);
      await b.ensureGroup(s, 'g', 'earliest');
      t.equal((await b.read(s, 'g', 'c', 1000, 0)).at(-1)?.payload, 'e999', 'the newest are kept');

      const kib = (n: number, tag: string) => `${tag}:`.padEnd(n * 1024, 'x');
      const tags = (entries: readonly StreamEntry[]) => entries.map((e) => e.payload.slice(0, 4).replace(/[:x]+$/, ''));
      const bs = unique('many-bytes');
      // Five one by one, then eight in one batch: one account; the newest ten (100 KiB) stay.
      for (let i = 0; i < 5; i++) await b.add(bs, kib(10, `a${i}`), 10_000, 100 * 1024);
      await b.addMany(bs, Array.from({ length: 8 }, (_, i) => kib(10, `a${5 + i}`)), 10_000, 100 * 1024);
      await b.ensureGroup(bs, 'g', 'earliest');
      t.same(tags(await b.read(bs, 'g', 'c', 1000, 0)), Array.from({ length: 10 }, (_, i) => `a${3 + i}`), 'the newest ten kept');
      // A batch bigger than the limit keeps its newest that fit; one entry over the limit is kept alone.
      await b.addMany(bs, Array.from({ length: 30 }, (_, i) => kib(10, `b${i}`)), 10_000, 100 * 1024);
      t.same(tags(await b.read(bs, 'g', 'c', 1000, 0)), Array.from({ length: 10 }, (_, i) => `b${20 + i}`), 'of a batch over the limit: its newest ten');
      await b.addMany(bs, [kib(1, 'c0'), kib(150, 'huge')], 10_000, 100 * 1024);
      t.equal((await b.info(bs))?.length, 1, 'the newest, over the limit, alone');
      // UTF-8 bytes, as add.
      const u = unique('many-utf8');
      await b.addMany(u, Array.from({ length: 10 }, () => 'é'.repeat(1000)), 10_000, 5_000);
      t.equal((await b.info(u))?.length, 2, '2,000 bytes each: two fit in 5,000');
    });

    t.test('info: undefined for a missing stream; else length and groups (name, pending, consumers, lag)', async (t) => {
      const b = await open(t);
      const s = unique('info');
      t.equal(await b.info(s), undefined);
      await addAll(b, s, ['a', 'b', 'c']);
      t.same(await b.info(s), { length: 3, groups: [] });
      await b.ensureGroup(s, 'g', 'earliest');
      await b.read(s, 'g', 'c1', 1, 0);
      await b.read(s, 'g', 'c2', 1, 0);
      const info = await b.info(s);
      t.equal(info?.length, 3);
      const g = info?.groups[0];
      t.match(g, { name: 'g', pending: 2, consumers: 2 });
      t.ok(g?.lag === null || g?.lag === 1, `lag: one entry not read yet, or unknown (${g?.lag})`);
      await b.read(s, 'g', 'c1', 10, 0);
      const lag = (await b.info(s))?.groups[0]?.lag;
      t.ok(lag === null || lag === 0, `lag 0 once all are read (${lag})`);
    });

    t.test('streams(prefix) lists the streams under a prefix, without it, sorted', async (t) => {
      const b = await open(t);
      const prefix = `${unique('list')}:`;
      await b.add(`${prefix}orders`, 'x', 10);
      await b.add(`${prefix}audit`, 'x', 10);
      await b.ensureGroup(`${prefix}mail`, 'g', 'latest');
      await b.add(`${prefix}*odd[1]`, 'x', 10);
      await b.add(`${unique('elsewhere')}:orders`, 'x', 10);
      t.same(await b.streams(prefix), ['*odd[1]', 'audit', 'mail', 'orders']);
      t.same(await b.streams(`${prefix}o`), ['rders']);
      t.same(await b.streams(`${prefix}none`), []);
    });

    t.test('close wakes a blocked read: it resolves to []', async (t) => {
      const b = await open(t);
      const s = unique('close');
      await b.ensureGroup(s, 'g', 'latest');
      const started = Date.now();
      const reading = b.read(s, 'g', 'c', 10, 10_000);
      await sleep(100);
      await b.close();
      t.same(await within(reading, 5_000, 'the read blocked at close'), []);
      t.ok(Date.now() - started < 2_000, `woken at once (${Date.now() - started} ms)`);
    });
  });
}
