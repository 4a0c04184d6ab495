/**
 * Who a token belongs to, once for every transport: the HTTP front, the
 * built-in routes and WebSocket sessions and upgrades all parse a bearer
 * header with {@link bearer} and turn a token into a caller with
 * {@link Authenticator.authenticate}. The caller (with its root id, a hash)
 * is computed once per verified token and kept as long as the verifier keeps
 * the token; expiry and revocation are still checked on every call.
 */
import type { Caller } from '../walker/index.ts';
import { type Claims, type JwtVerifier, UserLookupNeeded } from './jwt.ts';
import type { KnownUsers } from './known-users.ts';
import { rootIdFor } from './root-id.ts';

/** What a good token says about its holder. */
export interface Authenticated {
  /** Who walkers and functions run for (shared: never mutate it). */
  readonly caller: Readonly<Caller>;
  readonly userId: string;
  /** The verified claims (shared with the verifier's cache: never mutate them). */
  readonly claims: Claims;
  /** The token says the password must be changed before anything else (`pwd_change`). */
  readonly mustChangePassword: boolean;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The token of an `Authorization: Bearer <token>` header (scheme in any case,
 * spaces around the token allowed); `undefined` when the header is missing or
 * has another shape.
 *
 * @example
 * bearer('Bearer abc.def.ghi') // 'abc.def.ghi'
 * bearer('Basic dXNlcjpw')    // undefined
 */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  return BEARER.exec(header)?.[1];
}

/**
 * @example
 * const auth = new Authenticator(jwt);
 * const { caller, mustChangePassword } = auth.authenticate(bearer(req.headers.authorization) ?? '');
 * // throws an UNAUTHORIZED SvcError (401) for a bad, expired or revoked token
 */
export class Authenticator {
  /**
   * Keyed by the verifier's cached claims object: an entry lives as long as
   * the verifier keeps the token (a token it evicts or sees expire takes its
   * caller with it).
   */
  private readonly known = new WeakMap<Claims, Authenticated>();

  /**
   * @param known users learnt from a repository that answers asynchronously
   *   (the verifier's `userExists` reads it): transports call {@link prepare}
   *   before {@link authenticate}.
   */
  constructor(
    readonly jwt: JwtVerifier,
    private readonly users?: KnownUsers,
  ) {}

  /**
   * Make {@link authenticate} able to answer for this token: undefined when it
   * can already (always, with an embedded users repository), else a promise
   * that settles once the token's user is known (rejecting when the
   * repository cannot be asked). A bad token is left for `authenticate` to refuse.
   *
   * @example
   * const wait = auth.prepare(token);
   * if (wait) await wait;
   * const who = auth.authenticate(token);
   */
  /** Whether {@link prepare} may have to wait. */
  get learnsUsers(): boolean {
    return this.users !== undefined;
  }

  prepare(token: string): Promise<void> | undefined {
    if (!this.users) return undefined;
    try {
      this.jwt.verify(token);
      return undefined;
    } catch (error) {
      return error instanceof UserLookupNeeded ? this.users.learn(error.userId) : undefined;
    }
  }

  /** The holder of a good token; throws an `UNAUTHORIZED` SvcError otherwise. */
  authenticate(token: string): Authenticated {
    // Verified every time: expiry and revocation apply to cached tokens too.
    const claims = this.jwt.verify(token);
    let who = this.known.get(claims);
    if (!who) {
      // The root a token names (a user migrated with its old root), else the one derived from the user id.
      const root = typeof claims.root_id === 'string' && /^[0-9a-f]{32}$/.test(claims.root_id) ? claims.root_id : rootIdFor(claims.user_id);
      const caller: Caller = { userId: claims.user_id, rootId: root };
      if (typeof claims.role === 'string') caller.role = claims.role;
      who = { caller: Object.freeze(caller), userId: claims.user_id, claims, mustChangePassword: claims.pwd_change === true };
      this.known.set(claims, who);
    }
    return who;
  }
}
