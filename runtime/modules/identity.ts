/** The `identity` module: users, tokens and their revocations, rate limits, mail, API keys and single sign-on, for every transport. */
import { type ActorSystem, MAIN_THREAD, workerPlacement } from '../../kernel/index.ts';
import { ActorRateLimiter, ActorSsoStates, ApiKeys, Authenticator, createEmailer, createSsoProvider, HASHER_ACTOR, IdentityService, immediateUserExists, type ImmediateUserLookup, JwtVerifier, KnownUsers, Passwords, type RateLimiter, RemoteHasher, RevocationTable, SSO_PLATFORMS, SsoService, type SsoStateStore } from '../../actors/identity/index.ts';
import { RedisSsoStates, openRedis, RedisRateLimiter } from '../../stores/index.ts';
import type { EndpointRoute } from '../../transports/http/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { API_KEYS, AUTH, BUS, GRAPH, IDENTITY, INVALIDATION, LOG, RELOAD_REVOCATIONS, REVOCATIONS, SSO, USERS } from '../keys.ts';

/** Users, tokens (revoked on every thread at once), rate limits, mail; one authenticator for every transport. */
export function identityModule(system: ActorSystem, boot: ServeBoot, thread: string, routes: readonly EndpointRoute[]): RuntimeModule {
  const { config } = boot;
  const closers: (() => void)[] = [];
  return {
    name: 'identity',
    needs: [LOG, USERS, GRAPH, BUS],
    uses: [INVALIDATION],
    provides: [REVOCATIONS, RELOAD_REVOCATIONS, AUTH, IDENTITY, API_KEYS, SSO],
    close: () => closers.forEach((close) => close()),
    async start(rt) {
      const log = rt.need(LOG);
      const users = rt.need(USERS);
      const graph = rt.need(GRAPH);
      const revocations = rt.provide(REVOCATIONS, new RevocationTable());
      // Every token still alive may be revoked: the longest any lives is max_token_days (svc token can sign that long).
      const longest = Math.max(config['scale.jwt'].max_token_days, config['scale.jwt'].exp_delta_days) * 86_400_000;
      const window = Math.max(longest, config['scale.admin'].session_expiry_hours * 3_600_000);
      revocations.serve(rt.need(BUS));
      const booted = Date.now();
      for (const [userId, ms] of await users.revocationsSince(booted - window)) revocations.set(userId, ms);
      rt.provide(RELOAD_REVOCATIONS, async () => {
        for (const [userId, ms] of await users.revocationsSince(Date.now() - window)) revocations.set(userId, ms);
      });
      if (boot.replacement) {
        // The others publish revocations to this thread only once they count it in: read what they wrote meanwhile.
        const stop = system.watchNodes((event, node) => {
          if (event !== 'up' || node !== system.nodeId) return;
          stop();
          void users.revocationsSince(booted - window).then(
            (marks) => marks.forEach(([userId, ms]) => revocations.set(userId, ms)),
            (error: unknown) => log.error({ err: error }, 'reading revocations failed'),
          );
        });
      }
      const mail = await createEmailer({ ...config['scale.emailer'], smtp: config['scale.emailer.smtp'] }, boot.projectRoot);
      if ('disabled' in mail && config['scale.emailer'].provider) log.error({ reason: mail.disabled }, 'email disabled');
      // A shared database answers "does this user exist" asynchronously: the transports learn it before verifying.
      // A provider of `sv` calls whose users live in its consumer (an auto-started sibling) takes any token its secret signed.
      const anyUser = config['scale.jwt'].accept_unknown_users;
      const known = anyUser || typeof (users as Partial<ImmediateUserLookup>).existsNow === 'function' ? undefined : new KnownUsers((userId) => users.exists(userId));
      const jwt = new JwtVerifier({
        secret: boot.jwtSecret,
        algorithm: config['scale.jwt'].algorithm as 'HS256',
        revocations,
        maxTokenDays: config['scale.jwt'].max_token_days,
        maxAdminHours: config['scale.admin'].session_expiry_hours,
        // A token of a user that never existed runs nothing (asked once per token; deletions are revocations).
        userExists: anyUser ? () => true : known ? (userId) => known.now(userId) : immediateUserExists(users),
      });
      rt.provide(AUTH, new Authenticator(jwt, known));
      // Password hashing runs on the main thread's pool (in one thread: this system serves the hasher itself).
      const passwords = new Passwords(new RemoteHasher(system, system.lookup(HASHER_ACTOR) ? system.nodeId : MAIN_THREAD));
      passwords.warm();
      const identity = rt.provide(
        IDENTITY,
        new IdentityService({
          users,
          passwords,
          system,
          revocations,
          limiter: rateLimiter(system, boot, closers),
          createRoot: (rootId) => graph.ensureRoot(rootId),
          dropRoot: async (rootId) => {
            const dropped = await graph.dropRoot(rootId);
            // Other members drop what they hold of that graph.
            void rt.find(INVALIDATION)?.publish({ t: 'delete', root: rootId });
            return dropped;
          },
          emailer: 'emailer' in mail ? mail.emailer : undefined,
          emailDisabledReason: 'disabled' in mail ? mail.disabled : '',
          jwt: { secret: boot.jwtSecret, algorithm: config['scale.jwt'].algorithm, expDays: config['scale.jwt'].exp_delta_days },
          auth: config['scale.auth'],
          adminSessionHours: config['scale.admin'].session_expiry_hours,
          log: (level, message, extra) => log[level](extra ?? {}, message),
        }),
      );
      // API keys (webhooks): checked from memory, revoked on every thread and member before the answer.
      const webhookWalkers = new Set(routes.filter((r) => r.webhook).map((r) => r.name));
      rt.provide(
        API_KEYS,
        new ApiKeys({ users, revocations, bus: rt.need(BUS), expiryDays: config['scale.webhook'].api_key_expiry_days, maxPerUser: config['scale.webhook'].max_api_keys_per_user, webhookWalkers }),
      );
      // Single sign-on: a sign-in started on one thread (or member) finishes on any other.
      rt.provide(
        SSO,
        new SsoService({
          users,
          states: ssoStates(system, boot, closers),
          providers: SSO_PLATFORMS.map((platform) => createSsoProvider(platform, config[`scale.sso.${platform}`])),
          settings: config['scale.sso'],
          token: (user) => identity.token(user),
          // Taking over an account linked by an email it never verified: its tokens die on every thread and member at once.
          revokeTokens: (userId, patch) => identity.revokeTokens(userId, patch),
          createRoot: (rootId) => graph.ensureRoot(rootId),
          log: (level, message, extra) => log[level](extra ?? {}, message),
        }),
      );
      // Graph deletions a previous run did not finish (one thread does them, in the background).
      if (thread === 'w1' || thread === 'local') identity.finishGraphDrops().catch((error: unknown) => log.error({ err: error }, 'reading the graphs of deleted users to delete failed; retried at the next start'));
    },
  };
}

/** Rate limits of one process (counters in a few actors), or of the whole cluster (Redis; the process's own while Redis is unreachable). */
function rateLimiter(system: ActorSystem, boot: ServeBoot, closers: (() => void)[]): RateLimiter {
  const { config } = boot;
  const local = new ActorRateLimiter(system, {
    placement: workerPlacement(),
    maxKeys: config['scale.auth'].rate_limit_max_keys,
    windowMs: config['scale.auth'].rate_window_seconds * 1000,
    salt: boot.jwtSecret,
  });
  if (!boot.cluster) return local;
  const redis = openRedis(boot.cluster.kvUrl, { name: `svc-${system.nodeId}-rl`, onError: () => undefined });
  closers.push(() => redis.disconnect());
  return new RedisRateLimiter({
    redis,
    cluster: boot.cluster.name,
    salt: boot.jwtSecret,
    fallback: local,
  });
}

/** Pending SSO sign-ins: the cluster's in Redis (KV_URL), else the process's (virtual actors on the worker threads). */
function ssoStates(system: ActorSystem, boot: ServeBoot, closers: (() => void)[]): SsoStateStore {
  const kvUrl = boot.config['scale.database'].kv_url;
  if (!kvUrl) return new ActorSsoStates(system, { placement: workerPlacement(), ttlMs: boot.config['scale.sso'].state_ttl_seconds * 1000 });
  const redis = openRedis(kvUrl, { name: `svc-${system.nodeId}-sso`, onError: () => undefined });
  closers.push(() => redis.disconnect());
  return new RedisSsoStates(redis, { prefix: `svc:{${boot.cluster?.name ?? 'svc'}}:sso:` });
}
