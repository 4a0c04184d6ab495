// An app started in this test's process (svc/testing): no child process, no socket. Its `url` is an
// origin only this process knows — `fetch` to it (and the helpers built on fetch) is injected into the
// app's front; nothing leaves the process.
import { testApp, type TestApp, type TestAppOptions } from 'svc/testing';
import { TEST_SECRET } from '../kit/index.ts';

const apps = new Map<string, TestApp>();
let next = 0;
const realFetch = globalThis.fetch;
const INJECT_HOST = /\.inject\.invalid$/;

globalThis.fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!INJECT_HOST.test(url.hostname)) return realFetch(input, init);
  const app = apps.get(url.origin);
  if (!app) return Promise.reject(new TypeError(`fetch failed: the in-process app at ${url.origin} is closed`));
  return app.fetch(input, init);
};

export interface InProcessServer extends Pick<TestApp, 'dataDir' | 'output' | 'waitFor'> {
  /** An origin for `fetch` (injected), or the real one with `listen: true`. */
  url: string;
  app: TestApp;
  stop(): Promise<void>;
}

/** Start `entry` in this process with the test secret (as `startServer` does for a child process). */
export async function startApp(options: Omit<TestAppOptions, 'entry'> & { entry: string }): Promise<InProcessServer> {
  const app = await testApp({ keepData: true, ...options, env: { JWT_SECRET: TEST_SECRET, SVC_ACCESS_LOG: 'false', ...options.env } });
  const url = app.url ?? `http://app-${++next}.inject.invalid`;
  if (!app.url) apps.set(url, app);
  return {
    url,
    dataDir: app.dataDir,
    app,
    output: () => app.output(),
    waitFor: (re, count) => app.waitFor(re, count),
    async stop() {
      apps.delete(url);
      await app.close();
    },
  };
}
