/**
 * Pods clustered through Redis: membership with heartbeats and leases, a
 * member's shared state (lease validity, readiness) for its worker threads,
 * cluster-wide activation leases, and the L1 invalidation channel — clustering
 * only. Frames between members travel on process links (`transports/link`);
 * the Redis connection itself is `stores/redis`. The kernel and the walker
 * runtime never see Redis: they get a transport, a placement, a lease.
 */
export { ClusterMember, CLUSTER_ACTOR } from './member.ts';
export type { ClusterMemberOptions, ClusterAsk, MemberPool, MemberSummary } from './member.ts';
export { MemberState } from './state.ts';
export { Membership } from './membership.ts';
export type { MemberRecord, MemberView, MembershipOptions } from './membership.ts';
export { CLUSTER_ERRORS, clusterError } from './errors.ts';
export type { ClusterErrorCode } from './errors.ts';
export { RedisActivationLease } from './lease.ts';
export type { RedisActivationLeaseOptions } from './lease.ts';
export { Invalidation } from './invalidation.ts';
export type { InvalidationEvent, InvalidationOptions } from './invalidation.ts';
