/**
 * Users, tokens, their graphs, and the admin — with the seams this room owns:
 * the users repository (`UsersRepository`; backends register by URI scheme
 * from `stores/`), the rate limiter and the sign-in states (the cluster's
 * Redis ones are in `stores/redis`).
 */
export { rootIdFor } from './root-id.ts';
export { Authenticator, bearer } from './authenticator.ts';
export type { Authenticated } from './authenticator.ts';
export { JwtVerifier, isHmacAlgorithm, revoked, UserLookupNeeded } from './jwt.ts';
export { KnownUsers } from './known-users.ts';
export type { Claims, RevocationList, HmacAlgorithm } from './jwt.ts';
export { normalize, userRecord, immediateUserExists, PATCHABLE, identityFromRow, pageBounds } from './users-repository.ts';
export type { UsersRepository, UserRecord, UserPatch, Identity, Role, Status, OneTimeToken, UsersPage, UsersPageOptions, ImmediateUserLookup, DeletedUser, GraphDrop } from './users-repository.ts';
export { ForwardingUsersRepository, serveUsersWriter, USERS_WRITER_ACTOR } from './users-writer.ts';
export type { UsersWriterMsg } from './users-writer.ts';
export { legacyUserRecords, legacyUserId } from './legacy-users.ts';
export type { LegacyUser } from './legacy-users.ts';
export { openUsersRepository, registerUsersRepository } from './open-users.ts';
export type { OpenUsersOptions, UsersRepositoryFactory } from './open-users.ts';
export { Passwords, checkPassword, argon2NeedsRehash } from './passwords.ts';
export { ARGON2_OPTIONS, ThreadHasher, RemoteHasher, HASHER_ACTOR } from './hasher.ts';
export type { Hasher, HashJob } from './hasher.ts';
export { IdentityService, BOOTSTRAP_ADMIN_ID, GUEST_USER_ID } from './service.ts';
export type { IdentityOptions } from './options.ts';
export type { TokenClaims } from './tokens.ts';
export { publicUser } from './accounts.ts';
export { checkProfile, FIELD_MAX, IDENTITY_BODIES } from './schemas.ts';
export type { BodyCheck } from './body-check.ts';
export { bootstrapAccounts, serviceAccount } from './bootstrap.ts';
export type { AdminConfig } from './bootstrap.ts';
export { createEmailer, registerEmailer } from './emailer.ts';
export type { Emailer, EmailerConfig } from './emailer.ts';
export { ActorRateLimiter, WindowTable, addressKey } from './rate-limit.ts';
export type { RateLimiter, RateVerdict, ActorRateLimiterOptions } from './rate-limit.ts';
export { RevocationTable, REVOCATIONS_TOPIC } from './revocations.ts';
export { IDENTITY_ERRORS, identityError, invalid, notFound } from './errors.ts';
export type { IdentityErrorCode } from './errors.ts';
export { ApiKeys, API_KEY_BODY, API_KEYS_TOPIC, hashKey } from './api-keys.ts';
export type { ApiKeyHolder, ApiKeysOptions, CreatedApiKey, ListedApiKey } from './api-keys.ts';
export type { ApiKeyRecord, SsoUnlink } from './users-repository.ts';
export { SsoService, createSsoProvider, SSO_BROWSER_COOKIE } from './sso.ts';
export type { SsoServiceOptions, SsoSettings, SsoResult, SsoProviderInfo, SsoStart, SsoBrowserBinding } from './sso.ts';
export { isLoopbackHttp, SSO_PLATFORMS, SSO_PLATFORM_ALIASES, MICROSOFT_CONSUMER_TENANT } from './sso-providers.ts';
export type { SsoPlatform, SsoProvider, SsoProviderSettings, SsoProviderOptions, SsoProfile, ProviderAccount, AuthorizationRequest } from './sso-providers.ts';
export { ActorSsoStates, PendingTable, stateKey, MAX_PENDING_SIGN_INS } from './sso-states.ts';
export type { SsoStateStore, PendingSignIn, ActorSsoStatesOptions } from './sso-states.ts';
