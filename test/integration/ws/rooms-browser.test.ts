// The browser's reconnecting client, served by svc at /svc/live.js, in headless Chromium: it joins a room through a
// walker, receives the room's messages, loses its connection, reconnects, rejoins and gets what it missed.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { startServer, tokenFor } from '../../kit/index.ts';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';

// Code run in the page: the browser's globals (this file is type-checked without the DOM library).
declare const window: unknown;
declare const location: { origin: string };

const entry = new URL('../../fixtures/rooms-app.ts', import.meta.url).pathname;

t.test('LiveSocket in Chromium: rooms, reconnect, resume', { skip: chromiumAvailable() ? false : 'Debian chromium is not installed (.ci/run installs it)' }, async (t) => {
  const server = await startServer({ entry });
  t.teardown(() => server.stop());
  const script = await fetch(`${server.url}/svc/live.js`);
  t.equal(script.status, 200);
  t.match(script.headers.get('content-type'), /^application\/javascript/);
  const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  t.ok(spec.paths['/svc/live.js'], 'documented in /openapi.json');

  const browser = await launch();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(`${server.url}/health`);
  const token = await tokenFor('browser-user', { server });
  await page.evaluate(async (token: string) => {
    const { LiveSocket } = await import('/svc/live.js' as string);
    const w = window as unknown as Record<string, unknown>;
    const got: unknown[] = [];
    w.got = got;
    const live = await LiveSocket.connect(location.origin, 'Room', { token, backoff: { minMs: 20, maxMs: 200 } });
    w.live = live;
    live.onMessage((m: { data: unknown }) => got.push(m.data));
    await live.send({ op: 'join', room: 'chat:browser' });
  }, token);
  const sender = await WalkerSocket.connect(server.url, 'Room', { token: await tokenFor('sender', { server }) });
  t.teardown(() => sender.close());
  await sender.send({ op: 'join', room: 'chat:browser' });
  await sender.send({ op: 'say', room: 'chat:browser', text: 'one' });
  await page.waitForFunction(() => ((window as unknown as { got: unknown[] }).got.length >= 1));
  // The connection drops; two messages are sent while it is away.
  await page.evaluate(() => {
    const w = window as unknown as { live: { drop(): void; onState(l: (s: string) => void): void }; reopened: Promise<void> };
    w.reopened = new Promise<void>((resolve) => w.live.onState((s) => s === 'open' && resolve()));
    w.live.drop();
  });
  await sender.send({ op: 'say', room: 'chat:browser', text: 'two' });
  await sender.send({ op: 'say', room: 'chat:browser', text: 'three' });
  await page.evaluate(() => (window as unknown as { reopened: Promise<void> }).reopened);
  await sender.send({ op: 'say', room: 'chat:browser', text: 'four' });
  await page.waitForFunction(() => ((window as unknown as { got: unknown[] }).got.length >= 4));
  const got = await page.evaluate(() => (window as unknown as { got: unknown[] }).got);
  t.same(
    got,
    ['one', 'two', 'three', 'four'].map((text) => ({ from: 'sender', text })),
    'every message once, in order, across the reconnect',
  );
  t.same(problems, [], 'no page errors');
});
