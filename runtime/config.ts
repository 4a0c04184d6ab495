/**
 * Configuration: `svc.toml` (section names as in the original product), layered with
 * `svc.<profile>.toml` for `--profile`, then environment variables, then
 * command-line flags. Unknown keys are warned about; a value of the wrong
 * type is an error naming the key.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';

type Kind = 'int' | 'number' | 'bool' | 'string' | 'enum' | 'list' | 'numbers' | 'table';

interface KeySpec {
  kind: Kind;
  default: unknown;
  env?: string[];
  values?: readonly string[];
  min?: number;
  /** A string that must not be empty. */
  nonEmpty?: boolean;
  /** A table's keys (names by default), and what they are called in its error. */
  keys?: { pattern: RegExp; what: string };
}

/** Kubernetes annotation keys: an optional DNS prefix and `/`, then a name (`cert-manager.io/cluster-issuer`). */
const ANNOTATION_KEY = { pattern: /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, what: 'annotation keys ("cert-manager.io/cluster-issuer" = "le")' };

/** `store()`'s keys, in `[storage]` and `[scale.storage]` alike. */
const STORAGE_KEYS = {
  type: { kind: 'enum', default: 'local', env: ['SVC_STORAGE_TYPE'], values: ['local', 'object'] },
  base_path: { kind: 'string', default: './storage', env: ['SVC_STORAGE_PATH'], nonEmpty: true },
  create_dirs: { kind: 'bool', default: true, env: ['SVC_STORAGE_CREATE_DIRS'] },
  bucket: { kind: 'string', default: '', env: ['SVC_STORAGE_OBJ_BUCKET'] },
  region: { kind: 'string', default: 'us-east-1', env: ['SVC_STORAGE_OBJ_REGION'], nonEmpty: true },
  prefix: { kind: 'string', default: '', env: ['SVC_STORAGE_OBJ_PREFIX'] },
  endpoint_url: { kind: 'string', default: '', env: ['SVC_STORAGE_OBJ_ENDPOINT_URL'] },
  public_read: { kind: 'bool', default: false, env: ['SVC_STORAGE_OBJ_PUBLIC_READ'] },
  /** svc's own addition: credentials of the object store (empty: the AWS SDK's own chain — AWS_ACCESS_KEY_ID, profiles, roles). */
  access_key_id: { kind: 'string', default: '', env: ['SVC_STORAGE_OBJ_ACCESS_KEY_ID'] },
  secret_access_key: { kind: 'string', default: '', env: ['SVC_STORAGE_OBJ_SECRET_ACCESS_KEY'] },
} as const satisfies Record<string, KeySpec>;

/** `[scale.sso.<platform>]`: the keys every provider has (env names `SVC_SSO_<PLATFORM>_…`). */
function ssoKeys(platform: string): { client_id: StringKey; client_secret: StringKey } {
  const env = `SVC_SSO_${platform.toUpperCase()}_`;
  return {
    client_id: { kind: 'string', default: '', env: [`${env}CLIENT_ID`] },
    client_secret: { kind: 'string', default: '', env: [`${env}CLIENT_SECRET`] },
  };
}
type StringKey = { kind: 'string'; default: string; env: string[] };

/** The original product's provider sections, aliases of ours: `idp_a` = google, `idp_b` = github, `idp_c` = microsoft. */
export const SSO_ALIASES = { idp_a: 'google', idp_b: 'github', idp_c: 'microsoft' } as const;

/** Every key svc reads, by section. */
export const SCHEMA = {
  'scale.server': {
    port: { kind: 'int', default: 8000, env: ['SVC_PORT', 'PORT'], min: 0 },
    host: { kind: 'string', default: '0.0.0.0', env: ['SVC_HOST'] },
    docs_enabled: { kind: 'bool', default: true, env: ['SVC_DOCS_ENABLED'] },
    suppress_health_check_logs: { kind: 'bool', default: false, env: ['SVC_SUPPRESS_HEALTH_CHECK_LOGS'] },
    max_body_bytes: { kind: 'int', default: 1024 * 1024, env: ['SVC_MAX_BODY_BYTES'], min: 1 },
    request_timeout_ms: { kind: 'int', default: 30_000, env: ['SVC_REQUEST_TIMEOUT_MS'], min: 1 },
    access_log: { kind: 'bool', default: true, env: ['SVC_ACCESS_LOG'] },
    workers: { kind: 'int', default: 0, env: ['SVC_WORKERS'], min: 0 },
    transport: { kind: 'enum', default: 'auto', env: ['SVC_TRANSPORT'], values: ['auto', 'uws', 'node'] },
    shutdown_timeout_ms: { kind: 'int', default: 10_000, env: ['SVC_SHUTDOWN_TIMEOUT_MS'], min: 0 },
    /** Started by npm (npx, npm exec, npm start): drain once npm is gone (cli/launcher.ts). */
    watch_launcher: { kind: 'bool', default: true, env: ['SVC_WATCH_LAUNCHER'] },
    body_timeout_ms: { kind: 'int', default: 60_000, env: ['SVC_BODY_TIMEOUT_MS'], min: 1 },
    max_connections: { kind: 'int', default: 10_000, env: ['SVC_MAX_CONNECTIONS'], min: 1 },
    /**
     * The largest young generation of each worker thread, in MB (a third of it is one semi-space); 0: V8's own (48 MB,
     * reached at a thread's first load and kept). Measured: 24 MB holds idle connections in ~1.6 KB less each at 10,000
     * than V8's own, with the same HTTP and room throughput (docs/guides/benchmarking.md).
     */
    young_generation_mb: { kind: 'int', default: 24, env: ['SVC_YOUNG_GENERATION_MB'], min: 0 },
    trusted_proxies: { kind: 'list', default: [], env: ['SVC_TRUSTED_PROXIES'] },
    trusted_proxy_header: { kind: 'enum', default: 'x-forwarded-for', env: ['SVC_TRUSTED_PROXY_HEADER'], values: ['x-forwarded-for', 'forwarded'] },
    /** Fields a client sends that the walker or function does not declare: refused with 400 (true), or ignored with a warning once per walker and field. */
    strict_fields: { kind: 'bool', default: true, env: ['SVC_STRICT_FIELDS'] },
  },
  /** CORS of a single process or a cluster member (README *CORS*): the keys of `[scale.microservices.cors]`, permissive by default. */
  'scale.server.cors': {
    /** `["*"]`: any origin; a list: those origins only (echoed, with `Vary: Origin`); `[]`: no CORS at all. */
    allow_origins: { kind: 'list', default: ['*'], env: ['SVC_CORS_ALLOW_ORIGINS'] },
    allow_methods: { kind: 'list', default: ['*'], env: ['SVC_CORS_ALLOW_METHODS'] },
    allow_headers: { kind: 'list', default: ['*'], env: ['SVC_CORS_ALLOW_HEADERS'] },
    /** With `["*"]`: the request's origin is echoed (never `*` with credentials). */
    allow_credentials: { kind: 'bool', default: false, env: ['SVC_CORS_ALLOW_CREDENTIALS'] },
    expose_headers: { kind: 'list', default: ['x-request-id', 'x-trace-id'], env: ['SVC_CORS_EXPOSE_HEADERS'] },
    max_age: { kind: 'int', default: 600, min: 0, env: ['SVC_CORS_MAX_AGE'] },
  },
  'scale.websocket': {
    max_frame_bytes: { kind: 'int', default: 64 * 1024, min: 1, env: ['SVC_WS_MAX_FRAME_BYTES'] },
    max_buffered_bytes: { kind: 'int', default: 1024 * 1024, min: 1, env: ['SVC_WS_MAX_BUFFERED_BYTES'] },
    idle_timeout_seconds: { kind: 'number', default: 120, env: ['SVC_WS_IDLE_TIMEOUT_SECONDS'] },
    auth_timeout_seconds: { kind: 'number', default: 10, env: ['SVC_WS_AUTH_TIMEOUT_SECONDS'] },
    ping_interval_seconds: { kind: 'number', default: 30, env: ['SVC_WS_PING_INTERVAL_SECONDS'] },
    max_rooms_per_connection: { kind: 'int', default: 100, min: 1, env: ['SVC_WS_MAX_ROOMS_PER_CONNECTION'] },
  },
  'scale.jwt': {
    secret: { kind: 'string', default: '', env: ['JWT_SECRET'] },
    algorithm: { kind: 'enum', default: 'HS256', env: ['JWT_ALGORITHM'], values: ['HS256', 'HS384', 'HS512'] },
    exp_delta_days: { kind: 'int', default: 7, env: ['JWT_EXP_DELTA_DAYS'], min: 1 },
    max_token_days: { kind: 'int', default: 365, env: ['JWT_MAX_TOKEN_DAYS'], min: 1 },
    /**
     * Accept a token this secret signed even for a user this server never stored (it runs on the user's root here).
     * For a provider of service-to-service calls whose users live in the consumer: auto-started siblings have it on.
     * Revocations made elsewhere are not seen here.
     */
    accept_unknown_users: { kind: 'bool', default: false, env: ['SVC_JWT_ACCEPT_UNKNOWN_USERS'] },
  },
  'scale.database': {
    shelf_db_path: { kind: 'string', default: '', env: ['SVC_SHELF_DB_PATH'] },
    synchronous: { kind: 'enum', default: 'NORMAL', env: ['SVC_SQLITE_SYNCHRONOUS'], values: ['NORMAL', 'FULL'] },
    /** SQLite with several worker threads: `process` (one writing connection, on the main thread) or `thread` (one per worker). */
    sqlite_writer: { kind: 'enum', default: 'process', env: ['SVC_SQLITE_WRITER'], values: ['process', 'thread'] },
    docdb_uri: { kind: 'string', default: '', env: ['DOCDB_URI'] },
    kv_url: { kind: 'string', default: '', env: ['KV_URL'] },
    /** With `kv_url`: ownership moves and graph deletions are published on this channel so no member serves a stale anchor. */
    kv_l1_invalidation_enabled: { kind: 'bool', default: true, env: ['SVC_KV_L1_INVALIDATION_ENABLED'] },
    kv_l1_invalidation_channel: { kind: 'string', default: 'svc:anchor:invalidate', env: ['SVC_KV_L1_INVALIDATION_CHANNEL'] },
    users_db_path: { kind: 'string', default: '', env: ['SVC_USERS_DB_PATH'] },
  },
  'scale.cluster': {
    /** Members of one name form one service (default: from the project folder and the entry file). */
    name: { kind: 'string', default: '', env: ['SVC_CLUSTER_NAME'] },
    /** A member that stops heartbeating is declared down within this (it heartbeats every lease_ms / 5). */
    lease_ms: { kind: 'int', default: 5000, min: 500, env: ['SVC_CLUSTER_LEASE_MS'] },
    /** The address other members dial when `--host` binds every interface (never a guessed interface address). */
    advertise_host: { kind: 'string', default: '127.0.0.1', env: ['SVC_ADVERTISE_HOST'] },
  },
  'scale.auth': {
    verify_token_ttl_seconds: { kind: 'int', default: 86_400, min: 1 },
    reset_token_ttl_seconds: { kind: 'int', default: 1800, min: 1 },
    verify_url_template: { kind: 'string', default: '' },
    reset_url_template: { kind: 'string', default: '' },
    login_attempts_per_identity: { kind: 'int', default: 10, min: 1, env: ['SVC_LOGIN_ATTEMPTS_PER_IDENTITY'] },
    login_attempts_per_address: { kind: 'int', default: 100, min: 1, env: ['SVC_LOGIN_ATTEMPTS_PER_ADDRESS'] },
    login_successes_per_identity: { kind: 'int', default: 60, min: 1, env: ['SVC_LOGIN_SUCCESSES_PER_IDENTITY'] },
    register_attempts_per_address: { kind: 'int', default: 100, min: 1, env: ['SVC_REGISTER_ATTEMPTS_PER_ADDRESS'] },
    rate_limit_max_keys: { kind: 'int', default: 50_000, min: 1, env: ['SVC_RATE_LIMIT_MAX_KEYS'] },
    forgot_attempts_per_identity: { kind: 'int', default: 5, min: 1 },
    rate_window_seconds: { kind: 'int', default: 900, min: 1, env: ['SVC_RATE_WINDOW_SECONDS'] },
    hash_concurrency: { kind: 'int', default: 0, min: 0, env: ['SVC_HASH_CONCURRENCY'] },
    hash_nice: { kind: 'int', default: 10, min: 0, env: ['SVC_HASH_NICE'] },
  },
  'scale.admin': {
    enabled: { kind: 'bool', default: true },
    username: { kind: 'string', default: 'admin', env: ['ADMIN_USERNAME'] },
    email: { kind: 'string', default: '', env: ['ADMIN_EMAIL'] },
    default_password: { kind: 'string', default: '', env: ['ADMIN_DEFAULT_PASSWORD'] },
    session_expiry_hours: { kind: 'int', default: 24, min: 1 },
    require_password_reset: { kind: 'bool', default: true },
  },
  'scale.events': {
    /** Off: publish, subscribe and pull are no-ops. */
    enabled: { kind: 'bool', default: false, env: ['SVC_EVENTS_ENABLED'] },
    /** A redis:// URL of the streams (default: [scale.database] kv_url; neither: memory streams of this process). */
    url: { kind: 'string', default: '', env: ['SVC_EVENTS_URL'] },
    consumer_group: { kind: 'string', default: 'svc-scale', env: ['SVC_EVENTS_CONSUMER_GROUP'] },
    serializer: { kind: 'enum', default: 'json', values: ['json'] },
    /** Entries pending longer than this are taken over from the consumer that holds them (it died or hangs). */
    visibility_timeout_seconds: { kind: 'number', default: 30, min: 0.1, env: ['SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS'] },
    /** Streams are trimmed to about this many entries (MAXLEN ~). */
    max_len: { kind: 'int', default: 100_000, min: 1, env: ['SVC_EVENTS_MAX_LEN'] },
    /** Handlers of one subscription running at once in one process. */
    concurrency: { kind: 'int', default: 1, min: 1, env: ['SVC_EVENTS_CONCURRENCY'] },
    /** Stream key of a topic: this prefix and the topic. */
    stream_prefix: { kind: 'string', default: 'svc:events:', env: ['SVC_EVENTS_STREAM_PREFIX'] },
    /** This process's consumer name (default: host name, data folder, worker). */
    consumer_name: { kind: 'string', default: '', env: ['SVC_EVENTS_CONSUMER_NAME'] },
    /** Published events kept in memory while the streams cannot be reached; past it they are dropped and counted. */
    buffer_size: { kind: 'int', default: 10_000, min: 0, env: ['SVC_EVENTS_BUFFER_SIZE'] },
    /** Bytes of those events, for the whole process (its worker threads share it); past it they are dropped and counted. */
    buffer_bytes: { kind: 'int', default: 64 * 1024 * 1024, min: 0, env: ['SVC_EVENTS_BUFFER_BYTES'] },
    /** The largest event published (its CloudEvents JSON, in bytes); a larger one is refused with EVENT_TOO_LARGE (413). */
    max_event_bytes: { kind: 'int', default: 1024 * 1024, min: 1, env: ['SVC_EVENTS_MAX_EVENT_BYTES'] },
    /** Streams are also trimmed to this many bytes of payloads, oldest entries first (0: entries only). */
    max_stream_bytes: { kind: 'int', default: 256 * 1024 * 1024, min: 0, env: ['SVC_EVENTS_MAX_STREAM_BYTES'] },
  },
  'scale.events.retry': {
    max_attempts: { kind: 'int', default: 3, min: 1, env: ['SVC_EVENTS_RETRY_MAX_ATTEMPTS'] },
    backoff_seconds: { kind: 'numbers', default: [1, 5, 30], env: ['SVC_EVENTS_RETRY_BACKOFF_SECONDS'] },
    /** Not empty: the dead letters would go back to the topic they failed on. */
    dead_letter_suffix: { kind: 'string', default: '.dlq', nonEmpty: true, env: ['SVC_EVENTS_DEAD_LETTER_SUFFIX'] },
  },
  'scale.metrics': {
    /** Off: nothing is measured on the hot path, and the scrape endpoint is not served. */
    enabled: { kind: 'bool', default: false, env: ['SVC_METRICS_ENABLED'] },
    /** The scrape path (Prometheus text; admin token, or scrape_token). */
    endpoint: { kind: 'string', default: '/metrics', env: ['SVC_METRICS_ENDPOINT'] },
    /** A static bearer token the scrape path also takes (not /admin/metrics, nor any other route): 32 characters or more, no white space; empty: admin tokens only. A secret: never logged or shown. */
    scrape_token: { kind: 'string', default: '', env: ['SVC_METRICS_SCRAPE_TOKEN'] },
    /** The prefix of every metric name. */
    namespace: { kind: 'string', default: 'svc', env: ['SVC_METRICS_NAMESPACE'] },
    /** Also `{namespace}_walker_duration_seconds` per walker and function run. */
    walker_metrics: { kind: 'bool', default: false, env: ['SVC_METRICS_WALKER_METRICS'] },
    /** Upper bounds of the duration histograms, in seconds. */
    histogram_buckets: { kind: 'numbers', default: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0], env: ['SVC_METRICS_HISTOGRAM_BUCKETS'] },
  },
  'scale.graph': {
    /** Serve `/graph`, `/graph/data` and `/traverse`. */
    enabled: { kind: 'bool', default: true, env: ['SVC_GRAPH_ENABLED'] },
    /** `/graph/data` without a token answers the public (guest) graph; false: a token is needed. */
    public: { kind: 'bool', default: true, env: ['SVC_GRAPH_PUBLIC'] },
  },
  /** Single sign-on (README *Single sign-on*): where the server is, where the browser goes back to with the token. */
  'scale.sso': {
    /** The server's public URL (`https://api.example.com`): the providers' redirect URI is `{host}/sso/{platform}/callback`. Empty: from the request's Host header (development). */
    host: { kind: 'string', default: '', env: ['SVC_SSO_HOST'] },
    /** The app's page the browser is sent back to, with the token (or `error` and `message`); empty: the callback answers JSON. */
    client_auth_callback_url: { kind: 'string', default: '', env: ['SVC_SSO_CLIENT_AUTH_CALLBACK_URL'] },
    /** How the token travels to that page: `query` (`?token=`, as the original product does) or `fragment` (`#token=`: kept out of server logs and Referer headers; recommended). */
    callback_style: { kind: 'enum', default: 'query', env: ['SVC_SSO_CALLBACK_STYLE'], values: ['query', 'fragment'] },
    /** How long a sign-in started at `/sso/{platform}/login` may take to come back (its state, nonce and PKCE verifier are kept that long). */
    state_ttl_seconds: { kind: 'int', default: 600, min: 10, env: ['SVC_SSO_STATE_TTL_SECONDS'] },
    /**
     * Bind each sign-in to the browser that started it (the `svc_sso` cookie; login CSRF). False: any callback with a
     * good state finishes it, as before — for clients that keep no cookies (a native app driving the flow itself).
     */
    bind_browser: { kind: 'bool', default: true, env: ['SVC_SSO_BIND_BROWSER'] },
  },
  'scale.sso.google': {
    ...ssoKeys('google'),
    /** OpenID discovery document (a test or a proxy may point elsewhere). */
    discovery_url: { kind: 'string', default: 'https://accounts.google.com/.well-known/openid-configuration', env: ['SVC_SSO_GOOGLE_DISCOVERY_URL'] },
    scopes: { kind: 'list', default: ['openid', 'email', 'profile'], env: ['SVC_SSO_GOOGLE_SCOPES'] },
  },
  'scale.sso.github': {
    ...ssoKeys('github'),
    /** Where users sign in (GitHub Enterprise: its own host). */
    base_url: { kind: 'string', default: 'https://github.com', env: ['SVC_SSO_GITHUB_BASE_URL'] },
    /** The REST API (GitHub Enterprise: `https://HOST/api/v3`). */
    api_url: { kind: 'string', default: 'https://api.github.com', env: ['SVC_SSO_GITHUB_API_URL'] },
    scopes: { kind: 'list', default: ['read:user', 'user:email'], env: ['SVC_SSO_GITHUB_SCOPES'] },
  },
  'scale.sso.microsoft': {
    ...ssoKeys('microsoft'),
    /** `common`, `organizations`, `consumers` or a tenant id. */
    tenant: { kind: 'string', default: 'common', env: ['SVC_SSO_MICROSOFT_TENANT'], nonEmpty: true },
    /** Empty: `https://login.microsoftonline.com/{tenant}/v2.0/.well-known/openid-configuration`. */
    discovery_url: { kind: 'string', default: '', env: ['SVC_SSO_MICROSOFT_DISCOVERY_URL'] },
    scopes: { kind: 'list', default: ['openid', 'email', 'profile'], env: ['SVC_SSO_MICROSOFT_SCOPES'] },
  },
  /** Any OpenID Connect issuer, by its discovery document. */
  'scale.sso.oidc': {
    ...ssoKeys('oidc'),
    discovery_url: { kind: 'string', default: '', env: ['SVC_SSO_OIDC_DISCOVERY_URL'] },
    scopes: { kind: 'list', default: ['openid', 'email', 'profile'], env: ['SVC_SSO_OIDC_SCOPES'] },
    /** The provider's name as shown (`/admin/sso/providers`). */
    display_name: { kind: 'string', default: 'OpenID Connect', env: ['SVC_SSO_OIDC_DISPLAY_NAME'] },
  },
  /** The original product's names of the first three (read into google, github, microsoft). */
  'scale.sso.idp_a': { client_id: { kind: 'string', default: '' }, client_secret: { kind: 'string', default: '' } },
  'scale.sso.idp_b': { client_id: { kind: 'string', default: '' }, client_secret: { kind: 'string', default: '' } },
  'scale.sso.idp_c': { client_id: { kind: 'string', default: '' }, client_secret: { kind: 'string', default: '' } },
  /** API keys and signed webhooks (README *Webhooks*). */
  'scale.webhook': {
    /** The HMAC-SHA256 key of webhook signatures. Required outside development when an app has webhook walkers and verify_signature is on; in development one is generated in `.svc/webhook_secret`. */
    secret: { kind: 'string', default: '', env: ['WEBHOOK_SECRET'] },
    signature_header: { kind: 'string', default: 'X-Webhook-Signature', env: ['SVC_WEBHOOK_SIGNATURE_HEADER'], nonEmpty: true },
    verify_signature: { kind: 'bool', default: true, env: ['SVC_WEBHOOK_VERIFY_SIGNATURE'] },
    /** Lifetime of a new API key unless its request says; 0: permanent. */
    api_key_expiry_days: { kind: 'int', default: 365, min: 0, env: ['SVC_API_KEY_EXPIRY_DAYS'] },
    /** A user holds at most this many keys. */
    max_api_keys_per_user: { kind: 'int', default: 100, min: 1, env: ['SVC_MAX_API_KEYS_PER_USER'] },
    /** svc's own addition: a sender may add this header (Unix seconds); the signature then covers `<timestamp>.<body>` and an old or future timestamp is refused. */
    timestamp_header: { kind: 'string', default: 'X-Webhook-Timestamp', env: ['SVC_WEBHOOK_TIMESTAMP_HEADER'], nonEmpty: true },
    timestamp_tolerance_seconds: { kind: 'int', default: 300, min: 1, env: ['SVC_WEBHOOK_TIMESTAMP_TOLERANCE_SECONDS'] },
    /** Refuse webhook requests without the timestamp header (replay protection for every request). */
    require_timestamp: { kind: 'bool', default: false, env: ['SVC_WEBHOOK_REQUIRE_TIMESTAMP'] },
  },
  /** `store()`: the original product's `storage` section (every key; `[scale.storage]` may hold the same keys and wins over it). */
  storage: STORAGE_KEYS,
  'scale.storage': STORAGE_KEYS,
  /** Service-to-service calls (`sv.import`, README *Calls between svc apps*): the default policy; seconds unless named otherwise. */
  'scale.sv': {
    /** How long one call may take, retries included. */
    rpc_timeout: { kind: 'number', default: 30, min: 0.001, env: ['SVC_SV_RPC_TIMEOUT'] },
    /** Per service, over rpc_timeout: `{ billing = 5 }` (also SVC_SV_<MODULE>_RPC_TIMEOUT). */
    rpc_timeouts: { kind: 'table', default: {} },
    /** Retries of a call whose request never reached the provider (connection refused, DNS, connect timeout). */
    retries: { kind: 'int', default: 2, min: 0, env: ['SVC_SV_RETRIES'] },
    /** The first retry's delay in milliseconds; doubled each time (at most 2 s), with full jitter. */
    retry_backoff_ms: { kind: 'int', default: 100, min: 1, env: ['SVC_SV_RETRY_BACKOFF_MS'] },
    /** Consecutive failures (transport, timeout, 502/503/504) that open a provider's circuit. */
    breaker_failures: { kind: 'int', default: 5, min: 1, env: ['SVC_SV_BREAKER_FAILURES'] },
    /** An open circuit lets one trial call through after this long. */
    breaker_half_open_seconds: { kind: 'number', default: 5, min: 0.001, env: ['SVC_SV_BREAKER_HALF_OPEN_SECONDS'] },
    /** Start a provider with neither a registered URL nor SVC_SV_<MODULE>_URL as a sibling process. */
    auto_start: { kind: 'bool', default: true, env: ['SVC_SV_AUTO_START'] },
    /** How long a sibling may take to answer its readiness probe. */
    start_timeout: { kind: 'number', default: 60, min: 1, env: ['SVC_SV_START_TIMEOUT'] },
    /** Worker threads of each auto-started sibling. */
    workers: { kind: 'int', default: 1, min: 1, env: ['SVC_SV_WORKERS'] },
  },
  /** Microservice mode (README *Microservice mode*): `svc start` is a gateway in front of one process per module. */
  'scale.microservices': {
    enabled: { kind: 'bool', default: false, env: ['SVC_MICROSERVICES_ENABLED'] },
    /** `{ billing = "billing.ts", search = "http://search:8000" }`: a module file (started as a sibling) or the URL of a running one. */
    modules: { kind: 'table', default: {} },
  },
  'scale.microservices.cors': {
    /** `["*"]`: any origin; a list: those origins only; `[]`: no CORS at all. */
    allow_origins: { kind: 'list', default: ['*'], env: ['SVC_MICROSERVICES_CORS_ALLOW_ORIGINS'] },
    allow_methods: { kind: 'list', default: ['*'], env: ['SVC_MICROSERVICES_CORS_ALLOW_METHODS'] },
    allow_headers: { kind: 'list', default: ['*'], env: ['SVC_MICROSERVICES_CORS_ALLOW_HEADERS'] },
    allow_credentials: { kind: 'bool', default: false, env: ['SVC_MICROSERVICES_CORS_ALLOW_CREDENTIALS'] },
    /** Response headers a browser's script may read (default: the request and trace ids, as in single-process mode). */
    expose_headers: { kind: 'list', default: ['x-request-id', 'x-trace-id'], env: ['SVC_MICROSERVICES_CORS_EXPOSE_HEADERS'] },
    /** Seconds a browser may keep a preflight's answer. */
    max_age: { kind: 'int', default: 600, min: 0, env: ['SVC_MICROSERVICES_CORS_MAX_AGE'] },
  },
  /** `svc mcp`, the tool-protocol server (README *`svc mcp`*); its flags win over these. */
  mcp: {
    transport: { kind: 'enum', default: 'stdio', env: ['SVC_MCP_TRANSPORT'], values: ['stdio', 'sse', 'streamable-http'] },
    port: { kind: 'int', default: 3001, env: ['SVC_MCP_PORT'], min: 0 },
    host: { kind: 'string', default: '127.0.0.1', env: ['SVC_MCP_HOST'] },
    /** The bearer token every HTTP request needs; unset on loopback, `svc mcp` keeps one in `<project_root>/.svc/mcp_token`; beyond loopback it must be set. */
    token: { kind: 'string', default: '', env: ['SVC_MCP_TOKEN'] },
    /** Origins allowed besides the server's own (DNS-rebinding protection). */
    allowed_origins: { kind: 'list', default: [], env: ['SVC_MCP_ALLOWED_ORIGINS'] },
    expose_grammar: { kind: 'bool', default: true, env: ['SVC_MCP_EXPOSE_GRAMMAR'] },
    expose_docs: { kind: 'bool', default: true, env: ['SVC_MCP_EXPOSE_DOCS'] },
    expose_examples: { kind: 'bool', default: true, env: ['SVC_MCP_EXPOSE_EXAMPLES'] },
    expose_pitfalls: { kind: 'bool', default: true, env: ['SVC_MCP_EXPOSE_PITFALLS'] },
    enable_validate: { kind: 'bool', default: true, env: ['SVC_MCP_ENABLE_VALIDATE'] },
    enable_format: { kind: 'bool', default: true, env: ['SVC_MCP_ENABLE_FORMAT'] },
    enable_py2svc: { kind: 'bool', default: true, env: ['SVC_MCP_ENABLE_PY2SVC'] },
    enable_ast: { kind: 'bool', default: false, env: ['SVC_MCP_ENABLE_AST'] },
    project_root: { kind: 'string', default: '.', env: ['SVC_MCP_PROJECT_ROOT'] },
  },
  /**
   * `svc start --scale`: the deployment to Kubernetes (README *Deploying to Kubernetes*). Quantities, replica bounds and
   * unknown keys are checked by the deploy room (deploy/config.ts) before anything is planned.
   */
  'scale.orchestrator': {
    /** The prefix of every object's name (DNS-1123: lower-case letters, digits, `-`; anything else is an error naming the key). */
    app_name: { kind: 'string', default: 'svc', env: ['SVC_SCALE_APP_NAME'], nonEmpty: true },
    namespace: { kind: 'string', default: 'default', env: ['SVC_SCALE_NAMESPACE'], nonEmpty: true },
    container_port: { kind: 'int', default: 8000, min: 1, env: ['SVC_SCALE_CONTAINER_PORT'] },
    ingress_node_port: { kind: 'int', default: 30080, min: 1, env: ['SVC_SCALE_INGRESS_NODE_PORT'] },
    docdb_enabled: { kind: 'bool', default: true, env: ['SVC_SCALE_DOCDB_ENABLED'] },
    /** The document database provisioned: `postgres` (the shared store svc tests for real) or `mongo`. */
    docdb_engine: { kind: 'enum', default: 'postgres', values: ['postgres', 'mongo'], env: ['SVC_SCALE_DOCDB_ENGINE'] },
    kv_enabled: { kind: 'bool', default: true, env: ['SVC_SCALE_KV_ENABLED'] },
    /** Empty: generated once (random), kept in `{app}-docdb-secret`. */
    docdb_root_username: { kind: 'string', default: 'svc', env: ['SVC_SCALE_DOCDB_ROOT_USERNAME'], nonEmpty: true },
    docdb_root_password: { kind: 'string', default: '', env: ['SVC_SCALE_DOCDB_ROOT_PASSWORD'] },
    kv_username: { kind: 'string', default: 'default', env: ['SVC_SCALE_KV_USERNAME'], nonEmpty: true },
    kv_password: { kind: 'string', default: '', env: ['SVC_SCALE_KV_PASSWORD'] },
    pvc_size: { kind: 'string', default: '5Gi', env: ['SVC_SCALE_PVC_SIZE'], nonEmpty: true },
    /** The storage class of the database claims (empty: the cluster's default). */
    storage_class: { kind: 'string', default: '', env: ['SVC_SCALE_STORAGE_CLASS'] },
    kv_dashboard: { kind: 'bool', default: false, env: ['SVC_SCALE_KV_DASHBOARD'] },
    docdb_dashboard: { kind: 'bool', default: false, env: ['SVC_SCALE_DOCDB_DASHBOARD'] },
    kv_dashboard_username: { kind: 'string', default: 'admin', env: ['SVC_SCALE_KV_DASHBOARD_USERNAME'], nonEmpty: true },
    kv_dashboard_password: { kind: 'string', default: '', env: ['SVC_SCALE_KV_DASHBOARD_PASSWORD'] },
    docdb_dashboard_username: { kind: 'string', default: 'admin', env: ['SVC_SCALE_DOCDB_DASHBOARD_USERNAME'], nonEmpty: true },
    docdb_dashboard_password: { kind: 'string', default: '', env: ['SVC_SCALE_DOCDB_DASHBOARD_PASSWORD'] },
    log_pipeline_enabled: { kind: 'bool', default: false, env: ['SVC_SCALE_LOG_PIPELINE_ENABLED'] },
    cpu_request: { kind: 'string', default: '', env: ['SVC_SCALE_CPU_REQUEST'] },
    cpu_limit: { kind: 'string', default: '', env: ['SVC_SCALE_CPU_LIMIT'] },
    memory_request: { kind: 'string', default: '', env: ['SVC_SCALE_MEMORY_REQUEST'] },
    memory_limit: { kind: 'string', default: '', env: ['SVC_SCALE_MEMORY_LIMIT'] },
    /** Empty: readiness on `/healthz/ready`, liveness on `/healthz/live` (`/health` selects them too). */
    health_check_path: { kind: 'string', default: '', env: ['SVC_SCALE_HEALTH_CHECK_PATH'] },
    readiness_initial_delay: { kind: 'int', default: 10, min: 0, env: ['SVC_SCALE_READINESS_INITIAL_DELAY'] },
    readiness_period: { kind: 'int', default: 20, min: 1, env: ['SVC_SCALE_READINESS_PERIOD'] },
    liveness_initial_delay: { kind: 'int', default: 10, min: 0, env: ['SVC_SCALE_LIVENESS_INITIAL_DELAY'] },
    liveness_period: { kind: 'int', default: 20, min: 1, env: ['SVC_SCALE_LIVENESS_PERIOD'] },
    liveness_failure_threshold: { kind: 'int', default: 80, min: 1, env: ['SVC_SCALE_LIVENESS_FAILURE_THRESHOLD'] },
    min_replicas: { kind: 'int', default: 1, min: 1, env: ['SVC_SCALE_MIN_REPLICAS'] },
    max_replicas: { kind: 'int', default: 3, min: 1, env: ['SVC_SCALE_MAX_REPLICAS'] },
    cpu_utilization_target: { kind: 'int', default: 50, min: 1, env: ['SVC_SCALE_CPU_UTILIZATION_TARGET'] },
    ingress_limit_rps: { kind: 'int', default: 20, min: 1, env: ['SVC_SCALE_INGRESS_LIMIT_RPS'] },
    ingress_limit_burst_multiplier: { kind: 'int', default: 5, min: 1, env: ['SVC_SCALE_INGRESS_LIMIT_BURST_MULTIPLIER'] },
    ingress_limit_connections: { kind: 'int', default: 20, min: 1, env: ['SVC_SCALE_INGRESS_LIMIT_CONNECTIONS'] },
    /** Cookie `route` pins a client to a pod (rewritten when the pod is gone). */
    sticky_sessions: { kind: 'bool', default: true, env: ['SVC_SCALE_STICKY_SESSIONS'] },
    /** Empty: svc deploys its own Traefik proxy on ingress_node_port; `traefik`: the cluster's Traefik (its CRDs); another class: a plain Ingress. */
    ingress_class: { kind: 'string', default: '', env: ['SVC_SCALE_INGRESS_CLASS'] },
    domain: { kind: 'string', default: '', env: ['SVC_SCALE_DOMAIN'] },
    cert_manager_email: { kind: 'string', default: '', env: ['SVC_SCALE_CERT_MANAGER_EMAIL'] },
    /** The ACME directory `--enable-tls` asks certificates of (Let's Encrypt's production directory by default). */
    acme_server: { kind: 'string', default: 'https://acme-v02.api.letsencrypt.org/directory', env: ['SVC_SCALE_ACME_SERVER'], nonEmpty: true },
    /** The cert-manager release `--enable-tls` installs when the cluster has none: a URL or a file of its manifests. */
    cert_manager_manifest: { kind: 'string', default: 'https://github.com/cert-manager/cert-manager/releases/download/v1.16.2/cert-manager.yaml', env: ['SVC_SCALE_CERT_MANAGER_MANIFEST'], nonEmpty: true },
    /** Seconds a rollout may make no progress before it is failed and rolled back (the Deployment's progressDeadlineSeconds). */
    progress_deadline_seconds: { kind: 'int', default: 300, min: 1, env: ['SVC_SCALE_PROGRESS_DEADLINE_SECONDS'] },
    /** Old revisions of the app kept for `svc scale rollback` (the Deployment's revisionHistoryLimit). */
    revision_history_limit: { kind: 'int', default: 10, min: 1, env: ['SVC_SCALE_REVISION_HISTORY_LIMIT'] },
    /** The runtime image the app's image is built from (a Node image: the original product's `python_image` reads as this). */
    base_image: { kind: 'string', default: 'node:20-bookworm-slim', env: ['SVC_SCALE_BASE_IMAGE'], nonEmpty: true },
    /** The original product's name of base_image; set, it wins (it must name a Node image). */
    python_image: { kind: 'string', default: '', env: ['SVC_SCALE_PYTHON_IMAGE'] },
    busybox_image: { kind: 'string', default: 'busybox:1.36', env: ['SVC_SCALE_BUSYBOX_IMAGE'], nonEmpty: true },
    /** npm packages added to the image (`name` or `name@version`), installed when it is built. */
    additional_packages: { kind: 'list', default: [], env: ['SVC_SCALE_ADDITIONAL_PACKAGES'] },
    /** Where `--build` pushes `{registry}/{app}:{tag}` (a host and path: `registry.example.com/team`; empty: no registry, `--build --no-push` only). */
    registry: { kind: 'string', default: '', env: ['SVC_SCALE_REGISTRY'] },
    /** An image already built and pushed (deploys run it instead of `{registry}/{app}:{tag}`). */
    image: { kind: 'string', default: '', env: ['SVC_SCALE_IMAGE'] },
    /** Where the image's production dependencies are installed: `build` (a build stage on the full Node image, npm ci from the lockfile) or `host` (copied from this machine's install: same Node major and platform; for a base image without npm). */
    image_deps: { kind: 'enum', default: 'build', values: ['build', 'host'], env: ['SVC_SCALE_IMAGE_DEPS'] },
    /** The docker-compatible command `--build` runs (empty: docker when `docker info` answers, else podman). */
    container_cli: { kind: 'string', default: '', env: ['SVC_SCALE_CONTAINER_CLI'] },
    /** With `--experimental`: svc installed from this git repository (branch, commit) instead of the copy beside the app. */
    svc_repo_url: { kind: 'string', default: '', env: ['SVC_SCALE_SVC_REPO_URL'] },
    svc_branch: { kind: 'string', default: 'main', env: ['SVC_SCALE_SVC_BRANCH'], nonEmpty: true },
    svc_commit: { kind: 'string', default: '', env: ['SVC_SCALE_SVC_COMMIT'] },
    /** npm packages pinned in the image: `{ "some-lib" = "1.2.3" }`; `latest`, or `none` to leave one out. */
    plugin_versions: { kind: 'table', default: {} },
  },
  /** `svc start --scale`: the app's own secrets, `NAME = "value"` or `NAME = "${ENV_VAR}"` (resolved at deploy time), in the `{app}-secrets` Secret. */
  /** `sandboxes()`: previews of users' projects (README *Sandboxes*). Quantities and the provider are checked at start (actors/sandbox/settings.ts). */
  'scale.sandbox': {
    enabled: { kind: 'bool', default: true, env: ['SVC_SANDBOX_ENABLED'] },
    /** `local` (child processes), `container` (docker or podman), `orchestrator` (pods on Kubernetes). */
    type: { kind: 'enum', default: 'local', values: ['local', 'container', 'orchestrator'], env: ['SVC_SANDBOX_TYPE'] },
    /** The container provider's image: it must hold Node and a POSIX shell. */
    base_image: { kind: 'string', default: 'node:20-slim', env: ['SVC_SANDBOX_BASE_IMAGE'], nonEmpty: true },
    memory_limit: { kind: 'string', default: '512Mi', env: ['SVC_SANDBOX_MEMORY_LIMIT'], nonEmpty: true },
    cpu_limit: { kind: 'string', default: '500m', env: ['SVC_SANDBOX_CPU_LIMIT'], nonEmpty: true },
    /** Container provider: a network of its own per sandbox that reaches nothing (no internet, no host service, no other sandbox). */
    network_isolation: { kind: 'bool', default: true, env: ['SVC_SANDBOX_NETWORK_ISOLATION'] },
    /** A sandbox older than this (counted from its creation) is removed by the cleanup. */
    ttl_seconds: { kind: 'int', default: 3600, min: 1, env: ['SVC_SANDBOX_TTL_SECONDS'] },
    max_per_user: { kind: 'int', default: 3, min: 1, env: ['SVC_SANDBOX_MAX_PER_USER'] },
    /** Container provider: user 1000, no privilege escalation, no capabilities. */
    security_context: { kind: 'bool', default: true, env: ['SVC_SANDBOX_SECURITY_CONTEXT'] },
    /** Scratch space: `/tmp` is a tmpfs of this size. */
    storage_limit: { kind: 'string', default: '256Mi', env: ['SVC_SANDBOX_STORAGE_LIMIT'], nonEmpty: true },
    /** A docker-compatible command (empty: the first of docker, podman whose engine answers). */
    container_cli: { kind: 'string', default: '', env: ['SVC_SANDBOX_CONTAINER_CLI'] },
    readiness_timeout_seconds: { kind: 'number', default: 120, min: 0.1, env: ['SVC_SANDBOX_READINESS_TIMEOUT_SECONDS'] },
    /** The local provider's port pool: `port_count` ports from `port_base`, `port_stride` apart. */
    port_base: { kind: 'int', default: 5180, min: 1, env: ['SVC_SANDBOX_PORT_BASE'] },
    port_count: { kind: 'int', default: 10, min: 1, env: ['SVC_SANDBOX_PORT_COUNT'] },
    port_stride: { kind: 'int', default: 2, min: 1, env: ['SVC_SANDBOX_PORT_STRIDE'] },
    /** How often a supervisor checks that its dev server still runs. */
    check_interval_ms: { kind: 'int', default: 1000, min: 10, env: ['SVC_SANDBOX_CHECK_INTERVAL_MS'] },
    cleanup_interval_seconds: { kind: 'number', default: 60, min: 0.1, env: ['SVC_SANDBOX_CLEANUP_INTERVAL_SECONDS'] },
    /** Dev-server crashes restarted before the sandbox is given up as `error`. */
    max_restarts: { kind: 'int', default: 3, min: 0, env: ['SVC_SANDBOX_MAX_RESTARTS'] },
    pids_limit: { kind: 'int', default: 256, min: 1, env: ['SVC_SANDBOX_PIDS_LIMIT'] },
    /** Where sandbox folders live (empty: `sandboxes/` in the data folder). */
    root: { kind: 'string', default: '', env: ['SVC_SANDBOX_ROOT'] },
    /** Orchestrator provider: the namespace of sandbox pods (made when missing). */
    namespace: { kind: 'string', default: 'svc-sandboxes', env: ['SVC_SANDBOX_NAMESPACE'], nonEmpty: true },
    /** Orchestrator provider: previews go through `svc sandbox proxy` (no Service or Ingress per sandbox). */
    proxy_mode: { kind: 'bool', default: false, env: ['SVC_SANDBOX_PROXY_MODE'] },
    /** Orchestrator provider: the Ingress class of each sandbox's Ingress (empty: the cluster's default class). */
    ingress_class: { kind: 'string', default: '', env: ['SVC_SANDBOX_INGRESS_CLASS'] },
    /** Orchestrator provider: a preview's host, `{sandbox_id}` replaced (like `{sandbox_id}.preview.example.com`). */
    domain_template: { kind: 'string', default: '', env: ['SVC_SANDBOX_DOMAIN_TEMPLATE'] },
    tls_enabled: { kind: 'bool', default: false, env: ['SVC_SANDBOX_TLS_ENABLED'] },
    /** The cert-manager ClusterIssuer of previews' certificates. */
    tls_issuer: { kind: 'string', default: 'letsencrypt', env: ['SVC_SANDBOX_TLS_ISSUER'] },
    /** Annotations of each sandbox's Ingress (`{ "key" = "value" }`). */
    ingress_annotations: { kind: 'table', default: {}, keys: ANNOTATION_KEY },
    /** Orchestrator provider: idle pods kept ready for the next creates (0: every create starts a pod). */
    warm_pool_size: { kind: 'int', default: 0, min: 0, env: ['SVC_SANDBOX_WARM_POOL_SIZE'] },
    /** Orchestrator provider: sandbox pods may open connections out (npm install); off: they reach nothing. */
    allow_egress: { kind: 'bool', default: false, env: ['SVC_SANDBOX_ALLOW_EGRESS'] },
    /** Private previews: the secret preview tokens are signed with (the proxy's PREVIEW_SECRET); empty: previews are public. */
    preview_secret: { kind: 'string', default: '', env: ['SVC_SANDBOX_PREVIEW_SECRET'] },
  },
  'scale.secrets': {},
  'scale.monitoring': {
    enabled: { kind: 'bool', default: false, env: ['SVC_MONITORING_ENABLED'] },
    k8s_metrics_enabled: { kind: 'bool', default: true, env: ['SVC_MONITORING_K8S_METRICS_ENABLED'] },
    /** The metrics UI's `admin` password (empty: generated once, kept in a Secret). */
    prometheus_admin_password: { kind: 'string', default: '', env: ['SVC_MONITORING_PROMETHEUS_ADMIN_PASSWORD'] },
  },
  'scale.emailer': {
    provider: { kind: 'string', default: '', env: ['EMAILER_PROVIDER'] },
    from_address: { kind: 'string', default: '', env: ['EMAILER_FROM_ADDRESS'] },
    enabled: { kind: 'bool', default: true },
  },
  'scale.emailer.smtp': {
    host: { kind: 'string', default: 'localhost', env: ['EMAILER_SMTP_HOST'] },
    port: { kind: 'int', default: 25, min: 1, env: ['EMAILER_SMTP_PORT'] },
    username: { kind: 'string', default: '', env: ['EMAILER_SMTP_USERNAME'] },
    password: { kind: 'string', default: '', env: ['EMAILER_SMTP_PASSWORD'] },
    use_tls: { kind: 'bool', default: true, env: ['EMAILER_SMTP_USE_TLS'] },
    timeout: { kind: 'number', default: 10, env: ['EMAILER_SMTP_TIMEOUT'] },
  },
} as const satisfies Record<string, Record<string, KeySpec>>;

type Schema = typeof SCHEMA;
type ValueOf<S extends KeySpec> = S['kind'] extends 'int' | 'number'
  ? number
  : S['kind'] extends 'bool'
    ? boolean
    : S['kind'] extends 'list'
      ? string[]
      : S['kind'] extends 'numbers'
        ? number[]
        : S['kind'] extends 'table'
          ? Record<string, string | number>
          : string;
export type SvcConfig = { [Sec in Exclude<keyof Schema, 'scale.secrets'>]: { [K in keyof Schema[Sec]]: ValueOf<Schema[Sec][K] & KeySpec> } } & {
  /** Names of the app's secrets to their values as written (`${ENV_VAR}` unresolved: the deploy resolves them). */
  'scale.secrets': Record<string, string>;
};

export class ConfigError extends Error {}

export interface LoadedConfig {
  config: SvcConfig;
  warnings: string[];
  /** Files read, in the order applied. */
  files: string[];
}

function typed(spec: KeySpec, value: unknown, where: string): unknown {
  // A wrong value of a credential's key is not repeated in the message (it may be the credential).
  const got = (v: unknown): string => (/password|secret|token|access_key/i.test(where) ? '(a value of another type; not shown)' : JSON.stringify(v));
  switch (spec.kind) {
    case 'int':
      if (typeof value === 'number' && Number.isInteger(value) && value >= (spec.min ?? -Infinity)) return value;
      throw new ConfigError(`${where} must be an integer${spec.min !== undefined ? ` ≥ ${spec.min}` : ''}, got ${got(value)}`);
    case 'number':
      if (typeof value === 'number' && Number.isFinite(value) && value >= (spec.min ?? -Infinity)) return value;
      throw new ConfigError(`${where} must be a number${spec.min !== undefined ? ` ≥ ${spec.min}` : ''}, got ${got(value)}`);
    case 'bool':
      if (typeof value === 'boolean') return value;
      throw new ConfigError(`${where} must be true or false, got ${got(value)}`);
    case 'string':
      if (typeof value === 'string' && !(spec.nonEmpty && value === '')) return value;
      if (typeof value === 'string') throw new ConfigError(`${where} must not be empty`);
      throw new ConfigError(`${where} must be a string, got ${got(value)}`);
    case 'enum':
      if (typeof value === 'string' && spec.values?.includes(value)) return value;
      throw new ConfigError(`${where} must be one of ${spec.values?.join(', ')}, got ${got(value)}`);
    case 'list':
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
      throw new ConfigError(`${where} must be a list of strings, got ${got(value)}`);
    case 'numbers':
      if (Array.isArray(value) && value.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0)) return value;
      throw new ConfigError(`${where} must be a list of numbers ≥ 0, got ${got(value)}`);
    case 'table':
      if (value && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
        const entries = Object.entries(value as Record<string, unknown>);
        const key = spec.keys?.pattern ?? /^[A-Za-z_][\w-]*$/;
        if (entries.every(([k, v]) => key.test(k) && (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))))) return Object.fromEntries(entries);
      }
      throw new ConfigError(`${where} must be a table of ${spec.keys?.what ?? 'names'} to strings or numbers${spec.keys ? '' : ' ({ billing = "billing.ts" })'}, got ${got(value)}`);
  }
}

function fromEnv(spec: KeySpec, raw: string, name: string): unknown {
  switch (spec.kind) {
    case 'int':
      if (/^-?\d+$/.test(raw.trim())) return typed(spec, Number(raw), `environment ${name}`);
      throw new ConfigError(`environment ${name} must be an integer, got ${JSON.stringify(raw)}`);
    case 'number':
      if (raw.trim() !== '' && Number.isFinite(Number(raw))) return typed(spec, Number(raw), `environment ${name}`);
      throw new ConfigError(`environment ${name} must be a number, got ${JSON.stringify(raw)}`);
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`environment ${name} must be true or false, got ${JSON.stringify(raw)}`);
    case 'list': {
      // A JSON array (as the table shows defaults), or comma-separated values.
      if (raw.trim().startsWith('[')) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          throw new ConfigError(`environment ${name} must be comma-separated values or a JSON array of strings, got ${JSON.stringify(raw)}`);
        }
        return typed(spec, parsed, `environment ${name}`);
      }
      return raw.split(',').map((v) => v.trim()).filter((v) => v !== '');
    }
    case 'table': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new ConfigError(`environment ${name} must be a JSON object, got ${JSON.stringify(raw)}`);
      }
      return typed(spec, parsed, `environment ${name}`);
    }
    case 'numbers': {
      const parts = raw.split(',').map((v) => v.trim()).filter((v) => v !== '');
      if (parts.some((v) => !Number.isFinite(Number(v)))) throw new ConfigError(`environment ${name} must be a comma-separated list of numbers, got ${JSON.stringify(raw)}`);
      return typed(spec, parts.map(Number), `environment ${name}`);
    }
    default:
      return typed(spec, raw, `environment ${name}`);
  }
}

/** Walk a parsed TOML document: apply known keys, collect unknown ones. */
function apply(doc: Record<string, unknown>, file: string, into: Record<string, Record<string, unknown>>, warnings: string[]): void {
  const visit = (obj: Record<string, unknown>, path: string[]): void => {
    for (const [key, value] of Object.entries(obj)) {
      const full = [...path, key];
      const section = full.slice(0, -1).join('.');
      const known = (SCHEMA as Record<string, Record<string, KeySpec>>)[section];
      if (section === 'scale.secrets') {
        // Free names: each becomes an environment variable of the app's pods.
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new ConfigError(`${file}: [scale.secrets] ${key}: a secret's name must be an environment variable name (letters, digits, _)`);
        if (typeof value !== 'string') throw new ConfigError(`${file}: [scale.secrets] ${key} must be a string ("value" or "\${ENV_VAR}"), got a ${Array.isArray(value) ? 'list' : typeof value} (not shown)`);
        (into[section] as Record<string, unknown>)[key] = value;
      } else if (known && Object.hasOwn(known, key)) {
        (into[section] as Record<string, unknown>)[key] = typed(known[key] as KeySpec, value, `${file}: [${section}] ${key}`);
      } else if (value && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
        visit(value as Record<string, unknown>, full);
      } else {
        warnings.push(`${file}: unknown key ${full.join('.')} (ignored)`);
      }
    }
  };
  visit(doc, []);
}

function readToml(path: string): Record<string, unknown> {
  try {
    return parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
}

/**
 * @example
 * const { config, warnings } = loadConfig({ dir: projectRoot, profile: 'prod', env: process.env, flags: { 'scale.server.port': 9000 } });
 */
export function loadConfig(options: {
  dir: string;
  profile?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Values from flags, by `section.key`, already typed. */
  flags?: Record<string, unknown>;
}): LoadedConfig {
  const warnings: string[] = [];
  const files: string[] = [];
  const values: Record<string, Record<string, unknown>> = {};
  for (const [section, keys] of Object.entries(SCHEMA)) {
    values[section] = Object.fromEntries(Object.entries(keys).map(([k, spec]) => [k, (spec as KeySpec).default]));
  }
  const candidates = ['svc.toml'];
  if (options.profile) {
    if (!/^[\w-]+$/.test(options.profile)) throw new ConfigError(`--profile must be a simple name, got ${JSON.stringify(options.profile)}`);
    candidates.push(`svc.${options.profile}.toml`);
  }
  for (const name of candidates) {
    const path = join(options.dir, name);
    if (!existsSync(path)) {
      if (name !== 'svc.toml') warnings.push(`profile ${options.profile}: ${name} not found, nothing layered`);
      continue;
    }
    apply(readToml(path), name, values, warnings);
    files.push(path);
  }
  const env = options.env ?? {};
  for (const [section, keys] of Object.entries(SCHEMA)) {
    for (const [key, spec] of Object.entries(keys) as [string, KeySpec][]) {
      for (const name of [...(spec.env ?? [])].reverse()) {
        const raw = env[name];
        if (raw !== undefined && raw !== '') (values[section] as Record<string, unknown>)[key] = fromEnv(spec, raw, name);
      }
    }
  }
  for (const [path, value] of Object.entries(options.flags ?? {})) {
    const i = path.lastIndexOf('.');
    const section = path.slice(0, i);
    const key = path.slice(i + 1);
    const spec = (SCHEMA as Record<string, Record<string, KeySpec>>)[section]?.[key];
    if (!spec) throw new ConfigError(`unknown setting ${path}`);
    (values[section] as Record<string, unknown>)[key] = typed(spec, value, `--${key.replace(/_/g, '-')}`);
  }
  const jwt = values['scale.jwt'] as { exp_delta_days: number; max_token_days: number };
  if (jwt.exp_delta_days > jwt.max_token_days) {
    throw new ConfigError(`[scale.jwt] exp_delta_days (${jwt.exp_delta_days}) is longer than max_token_days (${jwt.max_token_days}): tokens would be refused`);
  }
  checkMetrics(values['scale.metrics'] as SvcConfig['scale.metrics']);
  checkCors(values['scale.server.cors'] as SvcConfig['scale.server.cors'], 'scale.server.cors', 'SVC_CORS_');
  // The original product's idp_a/b/c sections fill google/github/microsoft where those are not set themselves.
  for (const [alias, platform] of Object.entries(SSO_ALIASES)) {
    const from = values[`scale.sso.${alias}`] as Record<string, string>;
    const to = values[`scale.sso.${platform}`] as Record<string, string>;
    for (const key of ['client_id', 'client_secret']) if (from[key] && !to[key]) to[key] = from[key] as string;
  }
  checkSso(values);
  // `[scale.storage]` (set in a file, or the environment) wins over `[storage]`; both read the same afterwards.
  const storage = values.storage as Record<string, unknown>;
  const scaled = values['scale.storage'] as Record<string, unknown>;
  for (const [key, spec] of Object.entries(STORAGE_KEYS)) if (scaled[key] !== spec.default) storage[key] = scaled[key];
  values['scale.storage'] = { ...storage };
  if (storage.type === 'object' && storage.bucket === '') {
    throw new ConfigError('[storage] type = "object" needs a bucket: [storage] bucket, or SVC_STORAGE_OBJ_BUCKET');
  }
  if (storage.endpoint_url !== '' && !/^https?:\/\/[^\s/]+/i.test(storage.endpoint_url as string)) {
    throw new ConfigError(`[storage] endpoint_url must be an http(s) URL, got ${JSON.stringify(storage.endpoint_url)}`);
  }
  return { config: values as unknown as SvcConfig, warnings, files };
}

function checkSso(values: Record<string, Record<string, unknown>>): void {
  const sso = values['scale.sso'] as { host: string; client_auth_callback_url: string };
  for (const key of ['host', 'client_auth_callback_url'] as const) {
    const v = sso[key];
    if (v !== '' && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/i.test(v)) throw new ConfigError(`[scale.sso] ${key} must be an http(s) URL without query or fragment, got ${JSON.stringify(v)}`);
  }
  for (const section of ['scale.sso.google', 'scale.sso.microsoft', 'scale.sso.oidc', 'scale.sso.github']) {
    const s = values[section] as Record<string, unknown>;
    for (const key of ['discovery_url', 'base_url', 'api_url']) {
      const v = s[key];
      if (typeof v === 'string' && v !== '' && !/^https?:\/\/[^\s/]+/i.test(v)) throw new ConfigError(`[${section}] ${key} must be an http(s) URL, got ${JSON.stringify(v)}`);
    }
  }
  const oidc = values['scale.sso.oidc'] as { client_id: string; client_secret: string; discovery_url: string };
  if (oidc.client_id && oidc.client_secret && !oidc.discovery_url) throw new ConfigError('[scale.sso.oidc] needs discovery_url (the issuer\'s /.well-known/openid-configuration) besides client_id and client_secret');
}

/**
 * A CORS section's values as a browser could meet them: an origin is `*` (alone) or
 * `scheme://host[:port]` — what browsers send; `app.example` would never match —, methods
 * are HTTP tokens, headers header names. Refused with the key (and its environment name).
 */
function checkCors(c: SvcConfig['scale.server.cors'], section: string, envPrefix: string): void {
  const refuse = (key: string, why: string): never => {
    throw new ConfigError(`[${section}] ${key} (${envPrefix}${key.toUpperCase()}): ${why}`);
  };
  for (const o of c.allow_origins) {
    if (o === '*') {
      if (c.allow_origins.length > 1) refuse('allow_origins', `"*" stands alone (any origin): list origins without it, got ${JSON.stringify(c.allow_origins)}`);
    } else if (!/^[a-z][a-z0-9+.-]*:\/\/[^\s/?#@]+\/?$/i.test(o.trim())) refuse('allow_origins', `${JSON.stringify(o)} is not an origin: scheme://host[:port] such as "https://app.example", or "*"`);
  }
  for (const m of c.allow_methods) if (m !== '*' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(m)) refuse('allow_methods', `${JSON.stringify(m)} is not an HTTP method`);
  for (const key of ['allow_headers', 'expose_headers'] as const) {
    for (const h of c[key]) if (h !== '*' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(h)) refuse(key, `${JSON.stringify(h)} is not a header name`);
  }
}

/** Paths the runtime serves itself: the metrics endpoint may not take one. */
const RESERVED_PATHS = /^\/(user|admin|walker|function|webhook|ws|sso|api-key|graph|traverse|docs|redoc|openapi\.json|health|healthz|ready)(\/|$)/;

/** The shortest `[scale.metrics] scrape_token` taken (a static credential: long enough not to be guessed). */
const SCRAPE_TOKEN_MIN = 32;

function checkMetrics(m: SvcConfig['scale.metrics']): void {
  const segments = m.endpoint.split('/').slice(1);
  if (!/^\/[A-Za-z0-9._~\/-]*$/.test(m.endpoint) || segments.some((x) => x === '' || x === '.' || x === '..') || RESERVED_PATHS.test(m.endpoint)) {
    throw new ConfigError(`[scale.metrics] endpoint must be a path of its own such as /metrics (letters, digits, . _ ~ - /), got ${JSON.stringify(m.endpoint)}`);
  }
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(m.namespace)) {
    throw new ConfigError(`[scale.metrics] namespace must be a metric name prefix (letters, digits, _; not starting with a digit), got ${JSON.stringify(m.namespace)}`);
  }
  // The token itself is never in the message. With a space or a line break in it, no Authorization header could carry it.
  if (m.scrape_token !== '' && (m.scrape_token.length < SCRAPE_TOKEN_MIN || /\s/.test(m.scrape_token))) {
    throw new ConfigError(
      `[scale.metrics] scrape_token (SVC_METRICS_SCRAPE_TOKEN) must be at least ${SCRAPE_TOKEN_MIN} characters without spaces or line breaks (e.g. openssl rand -hex 32), got ${m.scrape_token.length} characters${/\s/.test(m.scrape_token) ? ' with white space' : ''}`,
    );
  }
  const b = m.histogram_buckets;
  if (b.length === 0 || b.length > 100 || b.some((v, i) => v <= 0 || (i > 0 && v <= (b[i - 1] as number)))) {
    throw new ConfigError(`[scale.metrics] histogram_buckets must be 1 to 100 increasing numbers of seconds > 0, got ${JSON.stringify(b)}`);
  }
}
