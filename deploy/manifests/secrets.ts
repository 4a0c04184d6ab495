/**
 * The Secrets: every credential of a deployment lives in one of these and
 * reaches a pod only by reference (`secretKeyRef`, `envFrom`, a Secret
 * volume) — never in a pod spec, a ConfigMap, an annotation or an argument.
 * Values are `stringData` (the API server encodes them).
 */
import { createHash } from 'node:crypto';
import type { DeploySpec, K8sObject } from '../spec.ts';
import { meta, nameOf, serviceHost, sortKeys, type Component } from './common.ts';

/** The port of each database Service. */
export const DOCDB_PORT = { postgres: 5432, mongo: 27017 } as const;
export const KV_PORT = 6379;
/** The replica set the provisioned MongoDB runs (svc's Mongo store needs transactions: a one-member replica set). */
export const MONGO_REPLICA_SET = 'rs0';

/**
 * The names of the Secrets and the keys the pods read.
 *
 * @example
 * secretNames(spec).docdb // 'shop-docdb-secret'
 */
export function secretNames(spec: DeploySpec) {
  return {
    docdb: nameOf(spec, 'docdb-secret'),
    kv: nameOf(spec, 'kv-secret'),
    app: nameOf(spec, 'secrets'),
    jwt: nameOf(spec, 'jwt-secret'),
    admin: nameOf(spec, 'admin-secret'),
    scrape: nameOf(spec, 'metrics-scrape-secret'),
    grafana: nameOf(spec, 'grafana-secret'),
    kvDashboard: nameOf(spec, 'kv-dashboard-secret'),
    docdbDashboard: nameOf(spec, 'docdb-dashboard-secret'),
  };
}

/**
 * Where the pods read `JWT_SECRET`: the app's `{app}-secrets` when `[scale.secrets]` sets it, else `{app}-jwt-secret`.
 *
 * @example
 * jwtRef(spec) // { secret: 'shop-jwt-secret', key: 'JWT_SECRET' }
 */
export function jwtRef(spec: DeploySpec): { secret: string; key: string } {
  const names = secretNames(spec);
  return { secret: hasAppJwt(spec) ? names.app : names.jwt, key: 'JWT_SECRET' };
}

function hasAppJwt(spec: DeploySpec): boolean {
  return (spec.appSecrets.JWT_SECRET ?? '') !== '';
}

/**
 * The headless Service of the document database's StatefulSet (stable pod names; MongoDB's replica set member is named by it).
 *
 * @example
 * docdbHeadless(spec) // 'shop-docdb-headless'
 */
export function docdbHeadless(spec: DeploySpec): string {
  return nameOf(spec, 'docdb-headless');
}

/**
 * The URI the pods reach the document database at: the provisioned one (in-cluster DNS, generated credentials)
 * or the external `docdb_uri`; '' when there is none.
 *
 * @example
 * docdbUri(spec) // 'postgres://svc:…@shop-docdb.default.svc:5432/svc_db?sslmode=disable'
 */
export function docdbUri(spec: DeploySpec): string {
  const d = spec.docdb;
  if (!d.provision) return d.uri;
  const auth = `${encodeURIComponent(d.username)}:${encodeURIComponent(d.password.value)}`;
  if (d.engine === 'mongo') {
    // The replica set member's own name (the pod's stable DNS name): the driver connects to the members the set lists.
    const host = `${nameOf(spec, 'docdb')}-0.${serviceHost(spec, docdbHeadless(spec))}`;
    return `mongodb://${auth}@${host}:${DOCDB_PORT.mongo}/${d.database}?authSource=admin&replicaSet=${MONGO_REPLICA_SET}`;
  }
  // In-cluster PostgreSQL serves no TLS; the dashboard's driver would default to requiring it.
  return `postgres://${auth}@${serviceHost(spec, nameOf(spec, 'docdb'))}:${DOCDB_PORT.postgres}/${d.database}?sslmode=disable`;
}

/**
 * The URL the pods reach Redis at (provisioned or the external `kv_url`); '' when there is none.
 *
 * @example
 * kvUrl(spec) // 'redis://default:…@shop-kv.default.svc:6379'
 */
export function kvUrl(spec: DeploySpec): string {
  const k = spec.kv;
  if (!k.provision) return k.url;
  return `redis://${encodeURIComponent(k.username)}:${encodeURIComponent(k.password.value)}@${serviceHost(spec, nameOf(spec, 'kv'))}:${KV_PORT}`;
}

/**
 * A value derived from a credential for a purpose (MongoDB's replica-set key file, Grafana's encryption key, a dashboard's
 * session secret): as secret as its source, stable across deploys, and no development default.
 */
function derived(value: string, purpose: string): string {
  return createHash('sha256').update(`svc:${purpose}:${value}`).digest('hex');
}

/**
 * The MongoDB replica-set key file (members authenticate each other with it; required once auth is on).
 *
 * @example
 * mongoKeyFile(spec).length // 64
 */
export function mongoKeyFile(spec: DeploySpec): string {
  return derived(spec.docdb.password.value, 'mongo-keyfile');
}

function secret(spec: DeploySpec, name: string, component: Component, data: Record<string, string>, type = 'Opaque'): K8sObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(spec, name, component), type, stringData: sortKeys(data) };
}

/**
 * Every Secret the deployment needs, in a stable order.
 *
 * @example
 * secrets(spec).map((s) => s.metadata.name) // ['shop-docdb-secret', 'shop-kv-secret', 'shop-jwt-secret', …]
 */
export function secrets(spec: DeploySpec): K8sObject[] {
  const names = secretNames(spec);
  const out: K8sObject[] = [];
  const uri = docdbUri(spec);
  if (spec.docdb.provision) {
    const data: Record<string, string> = { username: spec.docdb.username, password: spec.docdb.password.value, uri };
    if (spec.docdb.engine === 'mongo') data.keyfile = mongoKeyFile(spec);
    out.push(secret(spec, names.docdb, 'docdb', data));
  } else if (uri !== '') {
    out.push(secret(spec, names.docdb, 'docdb', { uri }));
  }
  const url = kvUrl(spec);
  if (spec.kv.provision) out.push(secret(spec, names.kv, 'kv', { username: spec.kv.username, password: spec.kv.password.value, url }));
  else if (url !== '') out.push(secret(spec, names.kv, 'kv', { url }));
  if (Object.keys(spec.appSecrets).length > 0) out.push(secret(spec, names.app, 'app', spec.appSecrets));
  if (!hasAppJwt(spec)) out.push(secret(spec, names.jwt, 'app', { JWT_SECRET: spec.jwtSecret.value }));
  out.push(secret(spec, names.admin, 'app', { password: spec.adminPassword.value }));
  if (spec.monitoring.enabled) {
    out.push(secret(spec, names.scrape, 'prometheus', { token: spec.monitoring.scrapeToken.value }));
    const admin = spec.monitoring.adminPassword.value;
    out.push(secret(spec, names.grafana, 'grafana', { 'admin-password': admin, 'secret-key': derived(admin, 'grafana-secret-key') }));
  }
  if (kvDashboardEnabled(spec)) {
    // Type basic-auth: the ingress proxy's basicAuth middleware reads username/password from it (and hashes the password itself).
    const d = spec.kv.dashboard;
    out.push(secret(spec, names.kvDashboard, 'kv-dashboard', { username: d.username, password: d.password.value }, 'kubernetes.io/basic-auth'));
  }
  if (docdbDashboardEnabled(spec)) {
    const d = spec.docdb.dashboard;
    out.push(secret(spec, names.docdbDashboard, 'docdb-dashboard', { username: d.username, password: d.password.value, 'session-secret': derived(d.password.value, 'docdb-dashboard-session') }));
  }
  return out;
}

/**
 * Whether the key-value dashboard is deployed (asked for, and Redis provisioned here: it is wired to the in-cluster Redis).
 *
 * @example
 * if (kvDashboardEnabled(spec)) routes.push('/cache-dashboard/');
 */
export function kvDashboardEnabled(spec: DeploySpec): boolean {
  return spec.kv.dashboard.enabled && spec.kv.provision;
}

/**
 * Whether the document-database dashboard is deployed (asked for, and the database provisioned here).
 *
 * @example
 * if (docdbDashboardEnabled(spec)) routes.push('/db-dashboard');
 */
export function docdbDashboardEnabled(spec: DeploySpec): boolean {
  return spec.docdb.dashboard.enabled && spec.docdb.provision;
}
