/**
 * The document database, when provisioned: a one-replica StatefulSet with a
 * `pvc_size` claim — PostgreSQL (the shared store svc tests for real) or
 * MongoDB as a one-member replica set (svc's Mongo store writes in
 * multi-document transactions, which a standalone server refuses) — its
 * ClusterIP Service `{app}-docdb`, the headless Service that names its pod,
 * and, when asked, the dashboard at `/db-dashboard` (pgweb, or mongo-express).
 * Credentials come from `{app}-docdb-secret` by reference only.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { IMAGES, clusterIpService, containerSecurity, env, labels, meta, nameOf, podSecurity, scratch, secretEnv, selectorLabels, serviceHost } from './common.ts';
import { DOCDB_PORT, MONGO_REPLICA_SET, docdbDashboardEnabled, docdbHeadless, secretNames } from './secrets.ts';

/** uid/gid of the images: postgres (alpine) runs as 70, mongo as 999 — fixed here so the restricted profile admits them. */
const POSTGRES_UID = 70;
const MONGO_UID = 999;
/** pgweb and mongo-express (the node user of its Node image) run as 1000. */
const DASHBOARD_UID = 1000;
export const DASHBOARD_PORT = 8081;
const DATA_DIR = { postgres: '/var/lib/postgresql/data', mongo: '/data/db' } as const;

function postgresContainer(spec: DeploySpec): Record<string, unknown> {
  const secret = secretNames(spec).docdb;
  const ready = ['/bin/sh', '-c', `pg_isready -h 127.0.0.1 -p ${DOCDB_PORT.postgres} -U "$POSTGRES_USER" -d "$POSTGRES_DB"`];
  const run = scratch('run', '/var/run/postgresql');
  const tmp = scratch('tmp', '/tmp');
  return {
    name: 'postgres',
    image: IMAGES.postgres,
    ports: [{ name: 'postgres', containerPort: DOCDB_PORT.postgres, protocol: 'TCP' }],
    env: [
      secretEnv('POSTGRES_USER', secret, 'username'),
      secretEnv('POSTGRES_PASSWORD', secret, 'password'),
      env('POSTGRES_DB', spec.docdb.database),
      // A subdirectory of the mount: initdb wants an empty directory, and a fresh volume may hold lost+found.
      env('PGDATA', `${DATA_DIR.postgres}/pgdata`),
    ],
    readinessProbe: { exec: { command: ready }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 5 },
    livenessProbe: { exec: { command: ready }, initialDelaySeconds: 30, periodSeconds: 20, timeoutSeconds: 5, failureThreshold: 6 },
    securityContext: containerSecurity(),
    volumeMounts: [{ name: 'data', mountPath: DATA_DIR.postgres }, run.mount, tmp.mount],
  };
}

/** The replica set's one member, by its stable pod name (mongod checks the name is itself; the driver dials it). */
function mongoMember(spec: DeploySpec): string {
  return `${nameOf(spec, 'docdb')}-0.${serviceHost(spec, docdbHeadless(spec))}:${DOCDB_PORT.mongo}`;
}

function mongoContainer(spec: DeploySpec): Record<string, unknown> {
  const secret = secretNames(spec).docdb;
  // Readiness also initiates the replica set once (rs.status() throws until it is): ready means a writable primary.
  const script = `try { rs.status() } catch (e) { rs.initiate({ _id: '${MONGO_REPLICA_SET}', members: [{ _id: 0, host: '${mongoMember(spec)}' }] }) }; if (!db.hello().isWritablePrimary) quit(1)`;
  const ready = ['/bin/sh', '-c', `mongosh --quiet --host 127.0.0.1 -u "$MONGO_INITDB_ROOT_USERNAME" -p "$MONGO_INITDB_ROOT_PASSWORD" --authenticationDatabase admin --eval "${script}"`];
  const alive = ['/bin/sh', '-c', `mongosh --quiet --host 127.0.0.1 --eval "db.adminCommand('ping')"`];
  const tmp = scratch('tmp', '/tmp');
  const config = scratch('configdb', '/data/configdb');
  return {
    name: 'mongo',
    image: IMAGES.mongo,
    // The image's entrypoint runs mongod with these (and without --replSet/--keyFile while it creates the root user).
    args: ['--replSet', MONGO_REPLICA_SET, '--bind_ip_all', '--keyFile', '/etc/mongo-keyfile/keyfile'],
    ports: [{ name: 'mongo', containerPort: DOCDB_PORT.mongo, protocol: 'TCP' }],
    env: [secretEnv('MONGO_INITDB_ROOT_USERNAME', secret, 'username'), secretEnv('MONGO_INITDB_ROOT_PASSWORD', secret, 'password'), env('HOME', '/tmp')],
    readinessProbe: { exec: { command: ready }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 10 },
    livenessProbe: { exec: { command: alive }, initialDelaySeconds: 30, periodSeconds: 20, timeoutSeconds: 10, failureThreshold: 6 },
    securityContext: containerSecurity(),
    volumeMounts: [{ name: 'data', mountPath: DATA_DIR.mongo }, { name: 'keyfile', mountPath: '/etc/mongo-keyfile', readOnly: true }, config.mount, tmp.mount],
  };
}

/** mongod refuses a key file readable by its group: copy it from the Secret volume, mode 0400, owned by the mongod user. */
function mongoKeyFileInit(spec: DeploySpec): Record<string, unknown> {
  return {
    name: 'keyfile',
    image: spec.images.busybox,
    command: ['sh', '-c', 'cp /keyfile-secret/keyfile /etc/mongo-keyfile/keyfile && chmod 0400 /etc/mongo-keyfile/keyfile'],
    securityContext: containerSecurity(),
    volumeMounts: [
      { name: 'keyfile-secret', mountPath: '/keyfile-secret', readOnly: true },
      { name: 'keyfile', mountPath: '/etc/mongo-keyfile' },
    ],
  };
}

/**
 * The StatefulSet `{app}-docdb`, one replica, its data on a `pvc_size` claim.
 *
 * @example
 * docdbStatefulSet(spec).spec.volumeClaimTemplates[0].spec.resources // { requests: { storage: '5Gi' } }
 */
export function docdbStatefulSet(spec: DeploySpec): K8sObject {
  const mongo = spec.docdb.engine === 'mongo';
  const podSpec: Record<string, unknown> = mongo
    ? {
        automountServiceAccountToken: false,
        securityContext: podSecurity(MONGO_UID),
        initContainers: [mongoKeyFileInit(spec)],
        containers: [mongoContainer(spec)],
        volumes: [
          { name: 'keyfile-secret', secret: { secretName: secretNames(spec).docdb, items: [{ key: 'keyfile', path: 'keyfile' }], defaultMode: 0o400 } },
          { name: 'keyfile', emptyDir: { medium: 'Memory' } },
          { name: 'configdb', emptyDir: {} },
          { name: 'tmp', emptyDir: {} },
        ],
      }
    : {
        automountServiceAccountToken: false,
        securityContext: podSecurity(POSTGRES_UID),
        containers: [postgresContainer(spec)],
        volumes: [
          { name: 'run', emptyDir: {} },
          { name: 'tmp', emptyDir: {} },
        ],
      };
  const claim: Record<string, unknown> = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: spec.docdb.pvcSize } } };
  if (spec.docdb.storageClass !== '') claim.storageClassName = spec.docdb.storageClass;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(spec, nameOf(spec, 'docdb'), 'docdb'),
    spec: {
      serviceName: docdbHeadless(spec),
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, 'docdb') },
      template: { metadata: { labels: labels(spec, 'docdb') }, spec: podSpec },
      volumeClaimTemplates: [{ metadata: { name: 'data', labels: labels(spec, 'docdb') }, spec: claim }],
    },
  };
}

/**
 * The headless Service that gives the database pod its stable DNS name (published before it is ready: the replica set
 * is initiated under that name).
 *
 * @example
 * docdbHeadlessService(spec).spec.clusterIP // 'None'
 */
export function docdbHeadlessService(spec: DeploySpec): K8sObject {
  const service = clusterIpService(spec, docdbHeadless(spec), 'docdb', [{ name: spec.docdb.engine, port: DOCDB_PORT[spec.docdb.engine] }]);
  return { ...service, spec: { ...(service.spec as object), clusterIP: 'None', publishNotReadyAddresses: true } };
}

function dashboardContainer(spec: DeploySpec): Record<string, unknown> {
  const names = secretNames(spec);
  const auth = names.docdbDashboard;
  const common = { ports: [{ name: 'http', containerPort: DASHBOARD_PORT, protocol: 'TCP' }], securityContext: containerSecurity(), volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] };
  // Both answer 401 without the login: probe the port, not a page.
  const probe = { tcpSocket: { port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10 };
  if (spec.docdb.engine === 'mongo') {
    return {
      name: 'mongo-express',
      image: IMAGES.mongoExpress,
      env: [
        secretEnv('ME_CONFIG_MONGODB_URL', names.docdb, 'uri'),
        env('ME_CONFIG_MONGODB_ENABLE_ADMIN', 'true'),
        env('ME_CONFIG_BASICAUTH', 'true'),
        secretEnv('ME_CONFIG_BASICAUTH_USERNAME', auth, 'username'),
        secretEnv('ME_CONFIG_BASICAUTH_PASSWORD', auth, 'password'),
        secretEnv('ME_CONFIG_SITE_SESSIONSECRET', auth, 'session-secret'),
        secretEnv('ME_CONFIG_SITE_COOKIESECRET', auth, 'session-secret'),
        env('ME_CONFIG_SITE_BASEURL', '/db-dashboard/'),
      ],
      readinessProbe: probe,
      ...common,
    };
  }
  return {
    name: 'pgweb',
    image: IMAGES.pgweb,
    env: [
      secretEnv('PGWEB_DATABASE_URL', names.docdb, 'uri'),
      // One connection, the one configured: the page cannot be used to reach other hosts.
      env('PGWEB_LOCK_SESSION', 'true'),
      env('PGWEB_URL_PREFIX', 'db-dashboard'),
      secretEnv('PGWEB_AUTH_USER', auth, 'username'),
      secretEnv('PGWEB_AUTH_PASS', auth, 'password'),
    ],
    readinessProbe: probe,
    ...common,
  };
}

/** The dashboard's Deployment `{app}-docdb-dashboard` and its Service. */
function dashboardObjects(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'docdb-dashboard');
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, name, 'docdb-dashboard'),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, 'docdb-dashboard') },
      template: {
        metadata: { labels: labels(spec, 'docdb-dashboard') },
        spec: {
          automountServiceAccountToken: false,
          securityContext: podSecurity(DASHBOARD_UID),
          containers: [dashboardContainer(spec)],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  };
  return [clusterIpService(spec, name, 'docdb-dashboard', [{ name: 'http', port: DASHBOARD_PORT }]), deployment];
}

/**
 * Every object of the document database (none unless it is provisioned here).
 *
 * @example
 * docdbObjects(spec).map((o) => `${o.kind}/${o.metadata.name}`)
 */
export function docdbObjects(spec: DeploySpec): K8sObject[] {
  if (!spec.docdb.provision) return [];
  const port = DOCDB_PORT[spec.docdb.engine];
  const out = [docdbStatefulSet(spec), clusterIpService(spec, nameOf(spec, 'docdb'), 'docdb', [{ name: spec.docdb.engine, port }]), docdbHeadlessService(spec)];
  if (docdbDashboardEnabled(spec)) out.push(...dashboardObjects(spec));
  return out;
}
