// The list of request bodies on their way: removed at once, late ones expired once, no allocation per request.
import t from 'tap';
import { Watchlist } from '../../../transports/http/watchlist.ts';

interface Item {
  name: string;
  due: number;
  slot?: number;
  gone?: boolean;
}

/** A list checked every `ms` (real timers: the tick is what is tested), and what it expired. */
function list(ms = 5) {
  const expired: string[] = [];
  const watch = new Watchlist<Item>(ms, (x) => x.gone === true, (x) => expired.push(x.name));
  t.teardown(() => watch.clear());
  return { watch, expired };
}

/** Resolves once `check` holds, looking every few ms (a timer is what moves the list on). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 2));
}

t.test('removed at once, in any order; each slot kept right', async (t) => {
  const { watch } = list();
  const items = Array.from({ length: 10 }, (_, i): Item => ({ name: `r${i}`, due: Date.now() + 60_000 }));
  for (const x of items) watch.add(x);
  t.equal(watch.size, 10);
  for (const i of [3, 9, 0, 5, 5]) watch.remove(items[i] as Item);
  t.equal(watch.size, 6, 'a second remove of the same one does nothing');
  for (const x of items) t.equal(x.slot === undefined, [0, 3, 5, 9].includes(Number(x.name.slice(1))), `${x.name}: slot only while watched`);
  watch.remove({ name: 'stranger', due: 0 });
  watch.remove({ name: 'stranger with a slot', due: 0, slot: 1 });
  t.equal(watch.size, 6, 'one never added: nothing');
  for (const x of items) watch.remove(x);
  t.equal(watch.size, 0);
});

t.test('the late are expired once, the gone dropped unexpired, the rest kept', async (t) => {
  const { watch, expired } = list();
  const late = { name: 'late', due: Date.now() + 20 };
  const gone = { name: 'gone', due: Date.now() + 20, gone: true };
  const kept = { name: 'kept', due: Date.now() + 60_000 };
  const removed = { name: 'removed', due: Date.now() + 20 };
  for (const x of [late, gone, kept, removed]) watch.add(x);
  watch.remove(removed);
  await until(() => watch.size === 1);
  t.same(expired, ['late']);
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.same(expired, ['late'], 'once');
  t.equal(watch.size, 1, 'kept stays');
  watch.remove(kept);
});

t.test('an item added by an expiry is watched too', async (t) => {
  const expired: string[] = [];
  const watch: Watchlist<Item> = new Watchlist<Item>(5, () => false, (x) => {
    expired.push(x.name);
    if (x.name === 'first') watch.add({ name: 'second', due: Date.now() + 10 });
  });
  t.teardown(() => watch.clear());
  watch.add({ name: 'first', due: Date.now() });
  await until(() => expired.length === 2);
  t.same(expired, ['first', 'second']);
  t.equal(watch.size, 0);
});

t.test('many requests through a small list: it never holds more than were on their way at once', async (t) => {
  const { watch } = list(1000);
  const window: Item[] = [];
  for (let i = 0; i < 100_000; i++) {
    const x = { name: 'r', due: Date.now() + 60_000 };
    watch.add(x);
    window.push(x);
    if (window.length > 16) watch.remove(window.shift() as Item);
  }
  t.equal(watch.size, 16);
  t.equal((watch as unknown as { items: unknown[] }).items.length, 17, 'its array grew to the most at once (17), no more');
});
