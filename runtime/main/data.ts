/**
 * The `data` module of the main thread: the data folder locked (one serving
 * process per folder, for the life of this one), and the secrets resolved —
 * the JWT secret, and the webhook secret when webhooks need one.
 */
import { redactUrl } from '../../stores/index.ts';
import { APP, SECRETS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { lockDataFolder } from './data-lock.ts';
import { StartError, type StartOptions } from './options.ts';
import { jwtSecret, type ResolvedSecret, webhookSecret } from './secrets.ts';
import { hasWebhooks } from '../listing.ts';

/** The secrets of this start, and whether the app has webhook walkers. */
export interface StartSecrets {
  jwt: ResolvedSecret;
  webhook: ResolvedSecret;
  webhooks: boolean;
}

/**
 * @example
 * composeRuntime([configModule(options), appModule(options), dataModule(options), ...]);
 */
export function dataModule(options: StartOptions): RuntimeModule {
  return {
    name: 'data',
    needs: [APP],
    provides: [SECRETS],
    start(rt) {
      const { config, projectRoot, production } = options;
      const { backend, storePath, sqliteFiles } = options.paths;
      // Each worker thread opens the stores itself: a store inside one thread would split the data between them.
      if (backend === 'memory' || storePath === ':memory:') throw new StartError('[scale.database] docdb_uri: memory stores live inside one thread (for tests); svc start needs a shared store (leave docdb_uri empty for SQLite in the data folder)');
      const kvUrl = config['scale.database'].kv_url;
      if (kvUrl && options.dev) throw new StartError('--dev reloads one process; it cannot be combined with KV_URL (a cluster member)');
      if (kvUrl && !/^rediss?:\/\//.test(kvUrl)) throw new StartError(`[scale.database] kv_url (KV_URL) must be a redis:// or rediss:// URL, got ${redactUrl(kvUrl)}`);
      // One serving process per data folder (the graph store and the users store), for the life of this process;
      // the members of a cluster share theirs (SQLite in WAL mode across processes; the cluster keeps one owner per graph).
      for (const file of sqliteFiles) lockDataFolder(file, { shared: Boolean(kvUrl) });
      const jwt = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot });
      // Webhook signatures need a secret only with webhook walkers (served at /webhook/<Name>) and verify_signature on: an app
      // without any gets no .svc/webhook_secret, in --dev neither (a reload that adds the first one makes it: lateWebhookSecret).
      const webhookConfig = config['scale.webhook'];
      const webhooks = hasWebhooks(rt.need(APP).endpoints ?? []);
      const webhook = webhookSecret({ configured: webhookConfig.secret, production, projectRoot, needed: webhookConfig.verify_signature && webhooks });
      if (webhook.warning) process.stderr.write(`svc: warning: ${webhook.warning}\n`);
      rt.provide(SECRETS, { jwt, webhook, webhooks });
    },
  };
}
