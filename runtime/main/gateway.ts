/**
 * The `gateway` module of the main thread, microservice mode
 * (`[scale.microservices] enabled = true`): the entry and each module of
 * `[scale.microservices] modules` run as processes of their own (siblings on
 * 127.0.0.1, or a running one at a configured URL), and this process is the
 * gateway on the public port: one OpenAPI document, each module's routes
 * relayed to it, the built-in routes to the entry's process, CORS from
 * `[scale.microservices.cors]`.
 */
import { existsSync } from 'node:fs';
import { basename, resolve as resolvePath } from 'node:path';
import { checkModuleName, GatewayError, ServiceStarter, startGateway, urlVariable } from '../../transports/sv/index.ts';
import { ADDRESS, SERVING } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { say, StartError, type StartOptions } from './options.ts';
import { localUrl } from './port.ts';
import { freePort } from './ports.ts';
import { jwtSecret } from './secrets.ts';

/**
 * @example
 * composeRuntime([configModule(options), gatewayModule(options), signalsModule(options, life, ...)]);
 */
export function gatewayModule(options: StartOptions): RuntimeModule {
  let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;
  let starter: ServiceStarter | undefined;
  return {
    name: 'gateway',
    needs: [SERVING],
    provides: [ADDRESS],
    async start(rt) {
      const { config, projectRoot } = options;
      const server = config['scale.server'];
      const main = basename(options.entry).replace(/\.[mc]?[jt]s$/, '');
      try {
        checkModuleName(main);
      } catch {
        throw new StartError(`microservice mode: the entry's name ${JSON.stringify(main)} must be a module name (letters, digits, _ and -)`);
      }
      const targets = new Map<string, { file?: string; url?: string }>([[main, { file: options.entry }]]);
      for (const [name, value] of Object.entries(config['scale.microservices'].modules)) {
        try {
          checkModuleName(name);
        } catch (error) {
          throw new StartError(`[scale.microservices] modules: ${(error as Error).message}`);
        }
        if (typeof value !== 'string' || value === '') throw new StartError(`[scale.microservices] modules: ${name} must be a module file ("${name}.ts") or a URL, got ${JSON.stringify(value)}`);
        if (/^https?:\/\//i.test(value)) {
          targets.set(name, { url: value.replace(/\/+$/, '') });
          continue;
        }
        const file = resolvePath(projectRoot, value);
        if (!existsSync(file)) throw new StartError(`[scale.microservices] modules: ${name} = ${JSON.stringify(value)}: no such file in ${projectRoot}`);
        if (name === main && file !== options.entry) throw new StartError(`[scale.microservices] modules: ${name} is the entry's own name; give the module another name`);
        targets.set(name, { file });
      }
      // SVC_SV_<MODULE>_URL: that module runs elsewhere already.
      for (const name of targets.keys()) {
        const url = process.env[urlVariable(name)];
        if (url) targets.set(name, { url: url.replace(/\/+$/, '') });
      }
      const { dataDir } = options.paths;
      const secret = jwtSecret({ configured: config['scale.jwt'].secret, production: options.production, projectRoot });
      // The modules see the gateway (127.0.0.1) as every client's peer: they believe its X-Forwarded-For.
      const trusted = [...new Set([...server.trusted_proxies, '127.0.0.1'])].join(',');
      // The gateway's port is chosen first: the modules call each other through it (`sv.import` of a module).
      const port = await freePort(server.host, server.port);
      if (server.port !== 0 && port !== server.port) say(`svc: port ${server.port} is in use; using ${port}`);
      const local = localUrl(server.host, port);
      const through = Object.fromEntries([...targets.keys()].map((name) => [urlVariable(name), local]));
      const siblings = new ServiceStarter({
        dataDir,
        jwtSecret: secret.secret,
        profile: options.profile,
        workers: rt.need(SERVING).workers,
        startTimeoutMs: config['scale.sv'].start_timeout * 1000,
        env: { ...process.env, ...through, SVC_TRUSTED_PROXIES: trusted },
      });
      const urls: Record<string, string> = {};
      try {
        await Promise.all(
          [...targets].map(async ([name, target]) => {
            // The entry keeps the project's data folder (and the admin); the other modules get theirs beside it.
            urls[name] = target.url ?? (await siblings.ensure(name, projectRoot, { file: target.file as string, ...(name === main ? { dataDir, main: true } : {}) }));
          }),
        );
      } catch (error) {
        await siblings.close();
        throw new StartError(`microservice mode: ${(error as Error).message}`);
      }
      const cors = config['scale.microservices.cors'];
      try {
        gateway = await startGateway({
          host: server.host,
          port,
          modules: urls,
          main,
          cors,
          title: basename(projectRoot),
          docs: server.docs_enabled,
          log: (line) => process.stderr.write(`svc: ${line}\n`),
        });
      } catch (error) {
        await siblings.close();
        throw new StartError(error instanceof GatewayError ? error.message : `the gateway could not start: ${(error as Error).message}`);
      }
      starter = siblings;
      const generated = gateway.routes.filter((r) => r.module !== main || !/^\/(user|admin|sso|api-key|healthz?|ready|metrics|docs|redoc|openapi\.json|graph|traverse)(\/|$)/.test(r.path));
      say(`svc: microservice mode: ${targets.size} module${targets.size === 1 ? '' : 's'} (${[...targets.keys()].map((n) => `${n} at ${urls[n]}`).join(', ')}), ${generated.length} routes`);
      say(`svc: CORS: ${cors.allow_origins.length === 0 ? 'off' : `origins ${cors.allow_origins.join(', ')}`}`);
      rt.provide(ADDRESS, { host: server.host, port: gateway.port, listeners: [] });
    },
    // The gateway first (no new requests), then its modules.
    async close() {
      await gateway?.close();
      await starter?.close(options.config['scale.server'].shutdown_timeout_ms);
    },
  };
}
