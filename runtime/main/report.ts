/** The `report` module of the main thread: what the start says once the workers serve — the endpoints, the store, the secrets' sources, webhooks, sign-in, the threads. */
import { relative } from 'node:path';
import { redactUri } from '../../stores/index.ts';
import type { SvcConfig } from '../config.ts';
import { SECRETS, SERVING, WORKERS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { printRoutes } from './app.ts';
import { endpointCount } from '../listing.ts';
import { say, type StartOptions } from './options.ts';

/**
 * @example
 * composeRuntime([..., poolModule(options, processId, life), reportModule(options), ...]);
 */
export function reportModule(options: StartOptions): RuntimeModule {
  return {
    name: 'report',
    needs: [WORKERS, SECRETS, SERVING],
    start(rt) {
      const { entry, config, production } = options;
      const { backend, storePath, docdbUri } = options.paths;
      const { routes } = rt.need(WORKERS);
      const { jwt, webhook, webhooks } = rt.need(SECRETS);
      const { transport, workers } = rt.need(SERVING);
      const endpoints = endpointCount(routes);
      say(`svc: ${endpoints} endpoint${endpoints === 1 ? '' : 's'} from ${relative(process.cwd(), entry) || entry}`);
      // In --dev the table is printed, and printed again whenever a reload changes it.
      if (options.dev) printRoutes(routes);
      say(`svc: store ${backend === 'sqlite' ? `sqlite at ${relative(process.cwd(), storePath) || storePath}` : `${backend} at ${redactUri(docdbUri)}`}; jwt: ${jwt.source}`);
      // A new file under .svc/ is always said (generated only for webhook walkers).
      const webhookConfig = config['scale.webhook'];
      if (webhooks || webhook.generated) {
        const from = webhook.source === 'configured' ? (process.env.WEBHOOK_SECRET ? 'from WEBHOOK_SECRET' : 'from [scale.webhook] secret') : webhook.source;
        say(`svc: webhooks: ${webhookConfig.verify_signature ? `signatures verified (${webhookConfig.signature_header}) with ${from.startsWith('development') ? `the ${from}` : `the secret ${from}`}` : 'signatures NOT verified ([scale.webhook] verify_signature / SVC_WEBHOOK_VERIFY_SIGNATURE is false): the API key alone admits'}`);
      }
      const sso = ssoSummary(config);
      if (sso) say(`svc: ${sso}`);
      say(`svc: ${threadsLine(workers, transport)}${production ? ', production' : ''}${options.dev ? ', dev (reloading on change)' : ''}`);
    },
  };
}

/** What the threads do: on uWebSockets.js each serves the port; node:http cannot share one, so w1 alone serves it. */
function threadsLine(workers: number, transport: 'uws' | 'node'): string {
  const threads = `${workers} worker thread${workers === 1 ? '' : 's'}`;
  if (workers === 1) return `${threads}, serving HTTP, transport ${transport === 'uws' ? 'uWebSockets.js' : 'node:http'}`;
  if (transport === 'uws') return `${threads}, each serving HTTP, transport uWebSockets.js`;
  return `${threads} running walkers, one of them (w1) serving HTTP, transport node:http`;
}

/** The sign-in providers that are on, with the redirect URI to register at each; and those half set (one of the two values). */
function ssoSummary(config: SvcConfig): string | undefined {
  const host = config['scale.sso'].host.replace(/\/+$/, '');
  const on: string[] = [];
  const half: string[] = [];
  for (const platform of ['google', 'github', 'microsoft', 'oidc'] as const) {
    const { client_id, client_secret } = config[`scale.sso.${platform}`];
    if (client_id && client_secret) on.push(`${platform} (redirect URI ${host ? `${host}/sso/${platform}/callback` : `<this server's address>/sso/${platform}/callback: set [scale.sso] host`})`);
    else if (client_id || client_secret) half.push(`${platform} has ${client_id ? 'client_id but no client_secret' : 'client_secret but no client_id'}: it answers 501`);
  }
  if (on.length === 0 && half.length === 0) return undefined;
  return `sign-in: ${on.length ? on.join(', ') : 'no provider on'}${half.length ? `; ${half.join('; ')}` : ''}`;
}
