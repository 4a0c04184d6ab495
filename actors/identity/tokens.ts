/**
 * The tokens svc issues: signed from a user record as it
 * was read, refreshed against the record as it is, and revoked by moving the
 * user's security stamp on, on every thread.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { identityError, unauthorized } from './errors.ts';
import { revoked } from './jwt.ts';
import type { IdentityOptions } from './options.ts';
import { rootIdFor } from './root-id.ts';
import type { Role, UserPatch, UserRecord } from './users-repository.ts';

/** The claims svc puts in its tokens. */
export interface TokenClaims {
  user_id: string;
  role: Role;
  /** Issued-at in milliseconds. */
  iat_ms: number;
  /**
   * The security stamp of the user record the token was minted from (read
   * before any password check): a change after that read voids the token,
   * however late it is signed.
   */
  sv: number;
  /** The password must be changed before anything else. */
  pwd_change?: boolean;
  /** The user's root, when it is not the one derived from the user id (users migrated with their old root). */
  root_id?: string;
}

/**
 * @example
 * const tokens = new Tokens(options);
 * const jwt = await tokens.issue(await users.byId(id));
 * await tokens.revoke(id, { status: 'disabled' }); // `jwt` stops working everywhere
 */
export class Tokens {
  /** The secret as a key object made once (jose imports a raw Uint8Array again for every token). */
  private readonly key: KeyObject;

  constructor(private readonly o: Pick<IdentityOptions, 'users' | 'revocations' | 'jwt' | 'adminSessionHours'>) {
    this.key = createSecretKey(Buffer.from(o.jwt.secret, 'utf8'));
  }

  /**
   * Sign a token for a user (jose), from the record as it was read: the
   * token carries that record's security stamp, so a change made since the
   * read voids it.
   */
  async issue(user: UserRecord, hours?: number): Promise<string> {
    if (user.status !== 'active') throw identityError('INVALID_CREDENTIALS');
    const now = Date.now();
    // An admin's token lives no longer than an admin session, however it was obtained (login, refresh, password change).
    if (user.role === 'admin') hours = Math.min(hours ?? Infinity, this.o.adminSessionHours);
    const claims: TokenClaims = { user_id: user.user_id, role: user.role, iat_ms: now, sv: user.tokens_valid_after ?? 0 };
    if (user.must_change_password) claims.pwd_change = true;
    // A root that is not the one derived from the user id (a user migrated with its old root): the token names it.
    if (user.root_id !== rootIdFor(user.user_id)) claims.root_id = user.root_id;
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: this.o.jwt.algorithm, typ: 'JWT' })
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + Math.round((hours ?? this.o.jwt.expDays * 24) * 3600))
      .sign(this.key);
  }

  /**
   * Apply a change to a user and void every token minted from what was read
   * before it (the security stamp moves on, in the same transaction), on
   * every thread, before answering.
   */
  async revoke(userId: string, patch: UserPatch = {}): Promise<void> {
    const stamp = await this.o.users.updateAndRevoke(userId, patch);
    if (stamp !== undefined) await this.o.revocations.broadcast(userId, stamp);
  }

  /**
   * A fresh token for a valid one (the caller checked it). The user record is
   * read once: the old token must still be good against it, and the new one
   * carries its stamp — a revocation landing in between voids both.
   */
  async refresh(claims: { user_id: string; sv?: unknown; iat_ms?: unknown; iat?: unknown }): Promise<string> {
    const user = await this.o.users.byId(claims.user_id);
    if (!user || user.status !== 'active') throw unauthorized('no such active user');
    if (user.tokens_valid_after !== null && revoked(claims, user.tokens_valid_after)) throw unauthorized('token revoked');
    return this.issue(user);
  }
}
