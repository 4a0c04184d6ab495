/**
 * The test kit's door: the launchers tests and benchmarks share. A real Redis, PostgreSQL, S3 API server, OpenID
 * Connect issuer and SMTP listener, each on a free loopback port and stopped when the test ends; a child `svc start`
 * (and N of them as one cluster); latches; the fixture apps by path; podman (real containers, where it can run).
 *
 * Benchmarks import nothing of `test/` but this file (test/meta/rooms.test.ts holds them to it). Assertions and
 * drivers only tests use stay in `test/helpers/`; the suites every backend of a seam passes are in
 * `test/conformance/`. The heavy servers (s3rver, oidc-provider, smtp-server) load when one starts, not on import.
 */
export { freePort } from './ports.ts';
export { Latch, deferred } from './latch.ts';
export { fixture } from './fixtures.ts';
export { haveRedis, skipRedis, startRedis } from './redis.ts';
export type { RedisServer } from './redis.ts';
export { skipPostgres, startPostgres } from './postgres.ts';
export type { PostgresServer } from './postgres.ts';
export { startS3 } from './s3.ts';
export type { S3Server } from './s3.ts';
export { startOidcIssuer } from './oidc.ts';
export type { OidcClient, OidcIssuer } from './oidc.ts';
export { smtpEnv, startSmtp } from './smtp.ts';
export type { Mail, SmtpServer } from './smtp.ts';
export { post, runSvc, startServer, TEST_SECRET, tokenFor, transport } from './server.ts';
export type { Server, SvcRun } from './server.ts';
export { adminToken, CLUSTER_APP, pool, startCluster, waitForMembers, walk } from './cluster.ts';
export type { Answer, ClusterSpec, TestCluster } from './cluster.ts';
export { startFakeKubeApi } from './fake-kube-api.ts';
export type { ExecIo, FakeKubeApi, FakeKubeObject, FakeKubeOptions, FakeKubeRequest, PodRuntime, PodScript } from './fake-kube-api.ts';
export { Podman, PODMAN_DIR, podmanAvailable } from './podman.ts';
export type { PodmanResult } from './podman.ts';
export { standInIngress } from './stand-in-ingress.ts';
export type { StandInIngress } from './stand-in-ingress.ts';
export { podRunner } from './pod-runner.ts';
export type { PodContainer, PodIngress, PodRunner, StandIn } from './pod-runner.ts';
