/**
 * Pods clustered through Redis: membership with heartbeats and leases,
 * process links for kernel frames, a member's shared state (lease validity,
 * readiness) for its worker threads, cluster-wide activation leases and rate
 * limits, and the L1 invalidation channel. The kernel and the walker runtime
 * never see Redis: they get a transport, a placement, a lease, a limiter.
 */
export { ClusterMember, CLUSTER_ACTOR } from './member.ts';
export type { ClusterMemberOptions, ClusterAsk, MemberPool, MemberSummary } from './member.ts';
export { MemberState } from './state.ts';
export { ProcessLinks } from './link.ts';
export type { ProcessLinksOptions } from './link.ts';
export { Membership } from './membership.ts';
export type { MemberRecord, MemberView, MembershipOptions } from './membership.ts';
export { CLUSTER_ERRORS, clusterError } from './errors.ts';
export type { ClusterErrorCode } from './errors.ts';
export { redactUrl, openRedis, connectRedis, whenReady } from './redis.ts';
export type { OpenRedisOptions } from './redis.ts';
export { RedisRateLimiter } from './rate-limit.ts';
export type { RedisRateLimiterOptions } from './rate-limit.ts';
export { RedisActivationLease } from './lease.ts';
export type { RedisActivationLeaseOptions } from './lease.ts';
export { Invalidation } from './invalidation.ts';
export type { InvalidationEvent, InvalidationOptions } from './invalidation.ts';
export * from './events/index.ts';
export * from './storage/index.ts';
export * from './kvstore/index.ts';
