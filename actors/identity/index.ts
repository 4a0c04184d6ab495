/** Users, tokens, their graphs, and the admin. */
export { rootIdFor } from './root-id.ts';
export { UsersStore, normalize, userRecord } from './users-store.ts';
export type { UserRecord, Identity, Role, Status, OneTimeToken } from './users-store.ts';
export { Passwords, checkPassword, argon2NeedsRehash } from './passwords.ts';
export { ARGON2_OPTIONS, ThreadHasher, RemoteHasher, HASHER_ACTOR } from './hasher.ts';
export type { Hasher, HashJob } from './hasher.ts';
export { IdentityService, BOOTSTRAP_ADMIN_ID, GUEST_USER_ID, publicUser, checkProfile, FIELD_MAX } from './service.ts';
export type { IdentityOptions, TokenClaims } from './service.ts';
export { identityRoutes } from './http-routes.ts';
export { bootstrapAccounts, serviceAccount } from './bootstrap.ts';
export type { AdminConfig } from './bootstrap.ts';
export { createEmailer, registerEmailer } from './emailer.ts';
export type { Emailer, EmailerConfig } from './emailer.ts';
export { ActorRateLimiter, WindowTable } from './rate-limit.ts';
export type { RateLimiter, RateVerdict, ActorRateLimiterOptions } from './rate-limit.ts';
export { RevocationTable, REVOCATIONS_ACTOR } from './revocations.ts';
export { IDENTITY_ERRORS, identityError } from './errors.ts';
export type { IdentityErrorCode } from './errors.ts';
