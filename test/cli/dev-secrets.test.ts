// The webhook signature secret of `svc start --dev`: made (`.svc/webhook_secret`) and said only for an app with
// webhook walkers; an app without any gets neither the file nor the webhook line, until a reload brings its first
// webhook walker (the new workers make the file then, and serve it).
import t from 'tap';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../kit/index.ts';
import { EVERY_KIND } from '../helpers/every-kind-app.ts';

// Each case starts a real `svc start --dev`: on a busy two-core machine that takes a while.
t.setTimeout(200_000);

/** An app with a hook, a WebSocket walker, a webhook walker and a subscription. */
const WITH_WEBHOOK = EVERY_KIND;

/** The same app without its webhook walker. */
const NO_WEBHOOK = WITH_WEBHOOK.replace(/export class GithubPush[^]*?\n}\n/, '');

t.test('--dev: no webhook secret and no webhook line for an app without webhook walkers; a reload that adds one makes it', async (t) => {
  t.not(NO_WEBHOOK, WITH_WEBHOOK);
  const dir = t.testdir({ 'app.ts': NO_WEBHOOK });
  const secret = join(dir, '.svc', 'webhook_secret');
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 1 });
  t.teardown(() => server.stop());
  t.match(server.output(), /svc: 3 endpoints from /, 'hooks and subscriptions are no endpoints');
  t.match(server.output(), /HOOK _RequireKey\s+hook walker/, 'the --dev table lists the hook');
  t.notMatch(server.output(), /svc: webhooks:|\/webhook\//, 'no webhook line');
  t.notOk(existsSync(secret), 'no .svc/webhook_secret');
  writeFileSync(join(dir, 'app.ts'), WITH_WEBHOOK);
  await server.waitFor(/POST \/webhook\/GithubPush\s+webhook walker GithubPush/);
  t.notMatch(server.output(), /reload failed/);
  t.ok(existsSync(secret), 'made by the reload that brought the first webhook walker');
  const res = await fetch(`${server.url}/webhook/GithubPush`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(res.status, 401, 'served: a call without an API key is refused');
});

t.test('--dev: an app with a webhook walker gets its secret and its line, as before', async (t) => {
  const dir = t.testdir({ 'app.ts': WITH_WEBHOOK });
  const server = await startServer({ entry: join(dir, 'app.ts'), args: ['--dev'], workers: 1 });
  t.teardown(() => server.stop());
  t.ok(existsSync(join(dir, '.svc', 'webhook_secret')));
  t.match(server.output(), /svc: webhooks: signatures verified \(X-Webhook-Signature\) with the development secret generated in .*webhook_secret/);
});
