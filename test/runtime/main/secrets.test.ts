// The start's secrets (runtime/main/secrets.ts) on a real folder: the webhook secret is made only when webhook
// walkers need it, and a worker of a --dev reload makes (or reads) the same `.svc/webhook_secret` as the others.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { lateWebhookSecret, webhookSecret } from '../../../runtime/main/secrets.ts';

t.test('webhookSecret: nothing made when no webhook walker needs it', async (t) => {
  const projectRoot = t.testdir({});
  t.same(webhookSecret({ configured: '', production: false, projectRoot, needed: false }), { secret: '', source: 'none' });
  t.notOk(existsSync(join(projectRoot, '.svc', 'webhook_secret')));
  const made = webhookSecret({ configured: '', production: false, projectRoot, needed: true });
  t.equal(made.generated, true);
  t.equal(readFileSync(join(projectRoot, '.svc', 'webhook_secret'), 'utf8').trim(), made.secret);
  t.equal(statSync(join(projectRoot, '.svc', 'webhook_secret')).mode & 0o777, 0o600);
  t.same(webhookSecret({ configured: '', production: false, projectRoot, needed: true }).secret, made.secret, 'read back the next time');
});

t.test('lateWebhookSecret: only for a --dev worker with nothing handed over or configured, signatures verified', async (t) => {
  const projectRoot = t.testdir({});
  const base = { dev: true, handed: '' as string | undefined, configured: '', verify: true, projectRoot };
  t.equal(lateWebhookSecret({ ...base, dev: false }), undefined, 'not a development server');
  t.equal(lateWebhookSecret({ ...base, handed: 'x'.repeat(40) }), undefined, 'the start handed one over');
  t.equal(lateWebhookSecret({ ...base, configured: 'y'.repeat(40) }), undefined, 'one is configured');
  t.equal(lateWebhookSecret({ ...base, verify: false }), undefined, 'signatures are not verified');
  t.notOk(existsSync(join(projectRoot, '.svc', 'webhook_secret')), 'none of those made a file');
  const first = lateWebhookSecret(base);
  const second = lateWebhookSecret({ ...base, handed: undefined });
  t.equal(first?.generated, true, 'the first worker makes it');
  t.equal(second?.generated, undefined, 'the next one reads it');
  t.equal(second?.secret, first?.secret, 'all workers agree on one secret');
});
