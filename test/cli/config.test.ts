// svc.toml, profiles, environment and flags, in that order; unknown keys warned, wrong types named.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../runtime/index.ts';

t.test('defaults without any file', async (t) => {
  const dir = t.testdir({});
  const { config, warnings, files } = loadConfig({ dir });
  t.equal(config['scale.server'].port, 8000);
  t.equal(config['scale.server'].host, '0.0.0.0');
  t.equal(config['scale.server'].docs_enabled, true);
  t.equal(config['scale.server'].max_body_bytes, 1024 * 1024);
  t.equal(config['scale.server'].strict_fields, true, 'undeclared fields are refused by default');
  t.equal(loadConfig({ dir, env: { SVC_STRICT_FIELDS: 'false' } }).config['scale.server'].strict_fields, false);
  t.equal(config['scale.jwt'].algorithm, 'HS256');
  t.equal(config['scale.jwt'].exp_delta_days, 7);
  t.same(warnings, []);
  t.same(files, []);
});

t.test('svc.toml < svc.<profile>.toml < environment < flags', async (t) => {
  const dir = t.testdir({
    'svc.toml': '[scale.server]\nport = 9000\nhost = "127.0.0.1"\ndocs_enabled = false\nsuppress_health_check_logs = true\n[scale.jwt]\nexp_delta_days = 3\n',
    'svc.prod.toml': '[scale.server]\nport = 9100\n',
  });
  t.equal(loadConfig({ dir }).config['scale.server'].port, 9000);
  const layered = loadConfig({ dir, profile: 'prod' });
  t.equal(layered.config['scale.server'].port, 9100);
  t.equal(layered.config['scale.server'].host, '127.0.0.1', 'keys the profile does not set come from svc.toml');
  t.equal(layered.config['scale.server'].suppress_health_check_logs, true);
  const env = loadConfig({ dir, profile: 'prod', env: { SVC_PORT: '9200', SVC_DOCS_ENABLED: 'true', JWT_EXP_DELTA_DAYS: '1' } });
  t.equal(env.config['scale.server'].port, 9200);
  t.equal(env.config['scale.server'].docs_enabled, true);
  t.equal(env.config['scale.jwt'].exp_delta_days, 1);
  const flags = loadConfig({ dir, profile: 'prod', env: { SVC_PORT: '9200' }, flags: { 'scale.server.port': 9300 } });
  t.equal(flags.config['scale.server'].port, 9300);
  t.equal(loadConfig({ dir, env: { PORT: '7000' } }).config['scale.server'].port, 7000, 'PORT is honoured');
  t.equal(loadConfig({ dir, env: { PORT: '7000', SVC_PORT: '7100' } }).config['scale.server'].port, 7100, 'SVC_PORT wins over PORT');
});

t.test('unknown keys are warned about, not fatal', async (t) => {
  const dir = t.testdir({ 'svc.toml': '[scale.server]\nport = 8100\nportt = 1\n[somethingelse]\nx = 1\n' });
  const { config, warnings } = loadConfig({ dir });
  t.equal(config['scale.server'].port, 8100);
  t.match(warnings, [/scale\.server\.portt/, /somethingelse\.x/]);
});

t.test('wrong types are an error naming the key', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ 'svc.toml': '[scale.server]\nport = "eighty"\n' }, /\[scale\.server\] port must be an integer/],
    [{ 'svc.toml': '[scale.server]\ndocs_enabled = "yes"\n' }, /docs_enabled must be true or false/],
    [{ 'svc.toml': '[scale.jwt]\nalgorithm = "none"\n' }, /algorithm must be one of HS256, HS384, HS512/],
    [{ 'svc.toml': '[scale.server\nport = 1\n' }, /svc\.toml/],
  ];
  for (const [files, message] of cases) {
    const dir = t.testdir(files);
    t.throws(() => loadConfig({ dir }), { constructor: ConfigError, message });
  }
  const dir = t.testdir({});
  t.throws(() => loadConfig({ dir, env: { SVC_PORT: 'abc' } }), { message: /environment SVC_PORT must be an integer/ });
  t.throws(() => loadConfig({ dir, env: { SVC_DOCS_ENABLED: 'maybe' } }), { message: /SVC_DOCS_ENABLED/ });
  t.throws(() => loadConfig({ dir, profile: '../etc' }), { message: /--profile/ });
});

t.test('[scale.events] and [scale.events.retry]: the seed’s defaults, the file, the environment', async (t) => {
  const dir = t.testdir({
    'svc.toml': '[scale.events]\nenabled = true\nconsumer_group = "shop"\nvisibility_timeout_seconds = 2.5\n[scale.events.retry]\nmax_attempts = 5\nbackoff_seconds = [0.5, 2]\ndead_letter_suffix = ".dead"\n',
  });
  const defaults = loadConfig({ dir: mkdtempSync(join(tmpdir(), 'svc-config-')) }).config;
  t.same(defaults['scale.events'], { enabled: false, url: '', consumer_group: 'svc-scale', serializer: 'json', visibility_timeout_seconds: 30, max_len: 100_000, concurrency: 1, stream_prefix: 'svc:events:', consumer_name: '', buffer_size: 10_000, buffer_bytes: 64 * 1024 * 1024, max_event_bytes: 1024 * 1024, max_stream_bytes: 256 * 1024 * 1024 });
  t.same(defaults['scale.events.retry'], { max_attempts: 3, backoff_seconds: [1, 5, 30], dead_letter_suffix: '.dlq' });
  const { config, warnings } = loadConfig({ dir });
  t.same(warnings, []);
  t.match(config['scale.events'], { enabled: true, consumer_group: 'shop', visibility_timeout_seconds: 2.5 });
  t.same(config['scale.events.retry'], { max_attempts: 5, backoff_seconds: [0.5, 2], dead_letter_suffix: '.dead' });
  const env = loadConfig({ dir, env: { SVC_EVENTS_RETRY_BACKOFF_SECONDS: '1, 3,9', SVC_EVENTS_URL: 'redis://127.0.0.1:6379', SVC_EVENTS_MAX_LEN: '500' } }).config;
  t.same(env['scale.events.retry'].backoff_seconds, [1, 3, 9]);
  t.match(env['scale.events'], { url: 'redis://127.0.0.1:6379', max_len: 500 });
  t.throws(() => loadConfig({ dir, env: { SVC_EVENTS_RETRY_BACKOFF_SECONDS: '1,x' } }), /SVC_EVENTS_RETRY_BACKOFF_SECONDS must be a comma-separated list of numbers, got "1,x"/);
  const bad = mkdtempSync(join(tmpdir(), 'svc-config-'));
  writeFileSync(join(bad, 'svc.toml'), '[scale.events.retry]\nbackoff_seconds = ["1"]\n');
  t.throws(() => loadConfig({ dir: bad }), /backoff_seconds must be a list of numbers/);
  t.throws(() => loadConfig({ dir, env: { SVC_EVENTS_CONCURRENCY: '0' } }), /≥ 1/);
  t.throws(() => loadConfig({ dir, env: { SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS: '-5' } }), /must be a number ≥ 0.1/);
  const empty = mkdtempSync(join(tmpdir(), 'svc-config-'));
  writeFileSync(join(empty, 'svc.toml'), '[scale.events]\nvisibility_timeout_seconds = 0\n[scale.events.retry]\ndead_letter_suffix = ""\n');
  t.throws(() => loadConfig({ dir: empty }), /visibility_timeout_seconds must be a number ≥ 0.1/);
  writeFileSync(join(empty, 'svc.toml'), '[scale.events.retry]\ndead_letter_suffix = ""\n');
  t.throws(() => loadConfig({ dir: empty }), /dead_letter_suffix must not be empty/);
});

t.test('[scale.metrics]: the seed’s defaults, the file, the environment; a bad endpoint, namespace, bucket list or scrape token is an error', async (t) => {
  const defaults = loadConfig({ dir: mkdtempSync(join(tmpdir(), 'svc-config-')) }).config;
  t.same(defaults['scale.metrics'], {
    enabled: false,
    endpoint: '/metrics',
    scrape_token: '',
    namespace: 'svc',
    walker_metrics: false,
    histogram_buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0],
  });
  const dir = t.testdir({ 'svc.toml': '[scale.metrics]\nenabled = true\nendpoint = "/ops/metrics"\nnamespace = "shop"\nwalker_metrics = true\nhistogram_buckets = [0.1, 1]\n' });
  const { config, warnings } = loadConfig({ dir });
  t.same(warnings, []);
  t.same(config['scale.metrics'], { enabled: true, endpoint: '/ops/metrics', scrape_token: '', namespace: 'shop', walker_metrics: true, histogram_buckets: [0.1, 1] });
  const env = loadConfig({ dir, env: { SVC_METRICS_ENABLED: 'false', SVC_METRICS_ENDPOINT: '/m', SVC_METRICS_NAMESPACE: 'x_y', SVC_METRICS_WALKER_METRICS: '0', SVC_METRICS_HISTOGRAM_BUCKETS: '0.5,2' } }).config;
  t.same(env['scale.metrics'], { enabled: false, endpoint: '/m', scrape_token: '', namespace: 'x_y', walker_metrics: false, histogram_buckets: [0.5, 2] });
  for (const endpoint of ['metrics', '/', '/admin/metrics', '/walker/Metrics', '/a b', '/x//y', '/user', '/graph', '/..', '/./metrics', '/metrics/', '/a/../b']) {
    t.throws(() => loadConfig({ dir, env: { SVC_METRICS_ENDPOINT: endpoint } }), /\[scale\.metrics\] endpoint must be a path of its own/, `endpoint ${endpoint}`);
  }
  for (const namespace of ['1svc', 'svc-app', 'svc app']) t.throws(() => loadConfig({ dir, env: { SVC_METRICS_NAMESPACE: namespace } }), /namespace must be a metric name prefix/, namespace);
  t.throws(() => loadConfig({ dir, env: { SVC_METRICS_HISTOGRAM_BUCKETS: 'abc' } }), /SVC_METRICS_HISTOGRAM_BUCKETS must be a comma-separated list of numbers, got "abc"/);
  t.throws(() => loadConfig({ dir, env: { SVC_METRICS_HISTOGRAM_BUCKETS: Array.from({ length: 101 }, (_, i) => i + 1).join(',') } }), /1 to 100 increasing/);
  for (const buckets of ['1,0.5', '0,1', '1,1']) t.throws(() => loadConfig({ dir, env: { SVC_METRICS_HISTOGRAM_BUCKETS: buckets } }), /histogram_buckets must be 1 to 100 increasing/, buckets);
  const empty = mkdtempSync(join(tmpdir(), 'svc-config-'));
  writeFileSync(join(empty, 'svc.toml'), '[scale.metrics]\nhistogram_buckets = []\n');
  t.throws(() => loadConfig({ dir: empty }), /histogram_buckets must be 1 to 100 increasing/);
  // The scrape token: 32 characters or more, from the file or the environment; a short one is an error naming the key, never showing the token.
  const token = 'a'.repeat(31) + 'Z';
  t.equal(loadConfig({ dir, env: { SVC_METRICS_SCRAPE_TOKEN: token } }).config['scale.metrics'].scrape_token, token);
  writeFileSync(join(empty, 'svc.toml'), `[scale.metrics]\nscrape_token = "${token}"\n`);
  t.equal(loadConfig({ dir: empty }).config['scale.metrics'].scrape_token, token, 'from svc.toml');
  for (const [name, bad] of [['31 characters', 'short-scrape-token-0123456789ab'], ['nine', 'qwertyQWE'], ['white space', `${token}\n`], ['a space inside', `${token.slice(0, 16)} ${token.slice(16)}`]] as const) {
    const error = (() => {
      try {
        loadConfig({ dir, env: { SVC_METRICS_SCRAPE_TOKEN: bad } });
      } catch (e) {
        return e;
      }
    })();
    t.ok(error instanceof ConfigError, `${name}: a configuration error`);
    t.match((error as Error).message, /^\[scale\.metrics\] scrape_token \(SVC_METRICS_SCRAPE_TOKEN\) must be at least 32 characters/, `${name}: names the key`);
    t.notOk((error as Error).message.includes(bad.trim()), `${name}: the token is not in the message`);
  }
  writeFileSync(join(empty, 'svc.toml'), '[scale.metrics]\nscrape_token = "too-short"\n');
  t.throws(() => loadConfig({ dir: empty }), /\[scale\.metrics\] scrape_token .*must be at least 32 characters/, 'a short one in svc.toml');
});

t.test('storage: [storage] < [scale.storage] < SVC_STORAGE_* (the seed\'s keys and defaults)', async (t) => {
  const none = loadConfig({ dir: t.testdir({}) }).config;
  t.same(none.storage, {
    type: 'local', base_path: './storage', create_dirs: true, bucket: '', region: 'us-east-1', prefix: '',
    endpoint_url: '', public_read: false, access_key_id: '', secret_access_key: '',
  });
  const dir = t.testdir({
    'svc.toml': '[storage]\nbase_path = "files"\nbucket = "from-storage"\nregion = "eu-west-1"\n[scale.storage]\ntype = "object"\nbucket = "from-scale"\n',
  });
  const file = loadConfig({ dir }).config;
  t.equal(file.storage.base_path, 'files', '[storage] alone');
  t.equal(file.storage.type, 'object', '[scale.storage] alone');
  t.equal(file.storage.bucket, 'from-scale', '[scale.storage] over [storage]');
  t.equal(file.storage.region, 'eu-west-1');
  t.same(file['scale.storage'], file.storage, 'both sections read the same');
  const env = loadConfig({ dir, env: { SVC_STORAGE_OBJ_BUCKET: 'from-env', SVC_STORAGE_PATH: 'elsewhere', SVC_STORAGE_CREATE_DIRS: 'false', SVC_STORAGE_OBJ_PUBLIC_READ: 'true' } }).config;
  t.equal(env.storage.bucket, 'from-env', 'the environment over both files');
  t.equal(env.storage.base_path, 'elsewhere');
  t.equal(env.storage.create_dirs, false);
  t.equal(env.storage.public_read, true);
  t.throws(() => loadConfig({ dir, env: { SVC_STORAGE_TYPE: 'cloud' } }), { message: /SVC_STORAGE_TYPE must be one of local, object/ });
  const bad = mkdtempSync(join(tmpdir(), 'svc-config-'));
  writeFileSync(join(bad, 'svc.toml'), '[storage]\ntype = "s3"\n');
  t.throws(() => loadConfig({ dir: bad }), { message: /\[storage\] type must be one of local, object/ }, 'type is local or object');
});

t.test('storage settings that cannot work stop the start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  t.throws(() => loadConfig({ dir, env: { SVC_STORAGE_TYPE: 'object' } }), { message: /needs a bucket/ });
  t.equal(loadConfig({ dir, env: { SVC_STORAGE_TYPE: 'object', SVC_STORAGE_OBJ_BUCKET: 'media' } }).config.storage.bucket, 'media');
  t.throws(() => loadConfig({ dir, env: { SVC_STORAGE_OBJ_ENDPOINT_URL: 'minio:9000' } }), { message: /endpoint_url must be an http\(s\) URL/ });
});
