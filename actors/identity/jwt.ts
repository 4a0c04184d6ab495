/**
 * JWT verification, for every transport (HTTP front, WebSocket sessions, the
 * `svc token` command): HMAC (HS256/384/512) checked
 * synchronously with node:crypto — no promise, no event-loop hop — with a
 * constant-time signature comparison, the algorithm pinned by configuration
 * (`alg: none` and any other algorithm are refused), `exp` required. Verified
 * tokens are cached until they expire; revocation is checked on every use,
 * cache hit or not.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { unauthorized } from './errors.ts';
import { SvcError } from '../../kernel/index.ts';

export type HmacAlgorithm = 'HS256' | 'HS384' | 'HS512';
const HASH: Record<HmacAlgorithm, string> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' };

export function isHmacAlgorithm(x: string): x is HmacAlgorithm {
  return x in HASH;
}

export interface Claims {
  user_id: string;
  role?: string;
  exp: number;
  iat?: number;
  [key: string]: unknown;
}

/** Tells whether tokens of a user issued before some moment are revoked (password change, logout-all). */
export interface RevocationList {
  /**
   * The user's security stamp, if their tokens were ever revoked: tokens
   * minted from an older stamp (claim `sv`) — or, for tokens without one,
   * issued (`iat_ms`, else `iat`) before this moment in ms — are invalid.
   */
  validAfter(userId: string): number | undefined;
}

const noRevocations: RevocationList = { validAfter: () => undefined };

function b64json(part: string): unknown {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/**
 * Whether claims are void under a user's security stamp `after`: svc's own
 * tokens carry the stamp they were minted from (`sv`), so a token minted from
 * a read before a change is void whenever it was signed; others are judged by
 * when they were issued (`iat_ms`, to the millisecond, else `iat`).
 */
export function revoked(claims: { sv?: unknown; iat_ms?: unknown; iat?: unknown }, after: number): boolean {
  if (typeof claims.sv === 'number') return claims.sv < after;
  const issued = typeof claims.iat_ms === 'number' ? claims.iat_ms : typeof claims.iat === 'number' ? claims.iat * 1000 : 0;
  return issued < after;
}

/**
 * @example
 * const jwt = new JwtVerifier({ secret, algorithm: 'HS256' });
 * const claims = jwt.verify(token);   // throws UNAUTHORIZED
 */
/**
 * A good token whose user the verifier cannot tell exists yet (a shared
 * users repository answers asynchronously): learn it, then verify again.
 * An `UNAUTHORIZED` 401 if it ever reaches a client.
 */
export class UserLookupNeeded extends SvcError {
  constructor(readonly userId: string) {
    super('UNAUTHORIZED', 'the token’s user could not be checked', { status: 401 });
  }
}

export class JwtVerifier {
  private readonly key: Buffer;
  private readonly hash: string;
  private readonly cache = new Map<string, Claims>();
  revocations: RevocationList;

  constructor(
    private readonly options: {
      secret: string;
      algorithm: HmacAlgorithm;
      cacheSize?: number;
      now?: () => number;
      revocations?: RevocationList;
      /** Tokens that live longer (from now, or from `iat`) are refused (`[scale.jwt] max_token_days`, 365). */
      maxTokenDays?: number;
      /**
       * Whether a user exists: asked once per token, when it is first verified
       * (then cached with it). `undefined`: not known yet — the verifier throws
       * {@link UserLookupNeeded}; the caller learns it and verifies again.
       */
      userExists?: (userId: string) => boolean | undefined;
      /** A token with the admin role lives at most this long (`[scale.admin] session_expiry_hours`). */
      maxAdminHours?: number;
    },
  ) {
    this.key = Buffer.from(options.secret, 'utf8');
    this.hash = HASH[options.algorithm];
    this.revocations = options.revocations ?? noRevocations;
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  /** The claims of a valid token; otherwise throws an `UNAUTHORIZED` {@link SvcError} (401) with the reason. */
  verify(token: string): Claims {
    const nowMs = this.now();
    let claims = this.cache.get(token);
    if (!claims) {
      claims = this.check(token, nowMs);
      if (this.cache.size >= (this.options.cacheSize ?? 10_000)) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(token, claims);
    } else if (claims.exp * 1000 <= nowMs) {
      this.cache.delete(token);
      throw unauthorized('token expired');
    }
    const after = this.revocations.validAfter(claims.user_id);
    if (after !== undefined && revoked(claims, after)) throw unauthorized('token revoked');
    return claims;
  }

  private check(token: string, nowMs: number): Claims {
    const parts = token.split('.');
    if (parts.length !== 3) throw unauthorized('malformed token');
    const [h, p, s] = parts as [string, string, string];
    let header: { alg?: unknown };
    let payload: Claims;
    try {
      header = b64json(h) as { alg?: unknown };
      payload = b64json(p) as Claims;
    } catch {
      throw unauthorized('malformed token');
    }
    if (header?.alg !== this.options.algorithm) throw unauthorized(`token algorithm must be ${this.options.algorithm}`);
    // Compared as canonical base64url text: padding or alphabet variants of a good signature are refused.
    const expected = Buffer.from(createHmac(this.hash, this.key).update(`${h}.${p}`).digest('base64url'));
    const given = Buffer.from(s);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized('bad token signature');
    if (typeof payload !== 'object' || payload === null) throw unauthorized('malformed token');
    if (typeof payload.exp !== 'number') throw unauthorized('token has no expiry');
    if (payload.exp * 1000 <= nowMs) throw unauthorized('token expired');
    if (typeof payload.nbf === 'number' && payload.nbf * 1000 > nowMs) throw unauthorized('token not valid yet');
    // A token issued in the future would escape revocation (iat < valid-after).
    if (typeof payload.iat === 'number' && payload.iat * 1000 > nowMs + 60_000) throw unauthorized('token issued in the future');
    if (typeof payload.user_id !== 'string' || payload.user_id === '') throw unauthorized('token has no user_id');
    const maxMs = (this.options.maxTokenDays ?? 365) * 86_400_000;
    const from = typeof payload.iat === 'number' ? Math.min(payload.iat * 1000, nowMs) : nowMs;
    if (payload.exp * 1000 - from > maxMs) throw unauthorized(`token lives longer than ${this.options.maxTokenDays ?? 365} days (max_token_days)`);
    const adminHours = this.options.maxAdminHours;
    if (adminHours !== undefined && payload.role === 'admin' && payload.exp * 1000 - from > adminHours * 3_600_000 + 60_000) {
      throw unauthorized(`an admin token lives at most ${adminHours} hours (session_expiry_hours)`);
    }
    if (this.options.userExists) {
      const exists = this.options.userExists(payload.user_id);
      if (exists === undefined) throw new UserLookupNeeded(payload.user_id);
      if (!exists) throw unauthorized('token of a user that does not exist');
    }
    return payload;
  }

  /** Sign claims (for tests, tools and the login endpoint). `exp` defaults to `expDays` from now. */
  sign(claims: Omit<Claims, 'exp' | 'iat'> & { exp?: number; iat?: number }, expDays = 7): string {
    const iat = claims.iat ?? Math.floor(this.now() / 1000);
    const body = { ...claims, iat, exp: claims.exp ?? iat + Math.round(expDays * 86400) };
    const h = Buffer.from(JSON.stringify({ alg: this.options.algorithm, typ: 'JWT' })).toString('base64url');
    const p = Buffer.from(JSON.stringify(body)).toString('base64url');
    const s = createHmac(this.hash, this.key).update(`${h}.${p}`).digest('base64url');
    return `${h}.${p}.${s}`;
  }
}
