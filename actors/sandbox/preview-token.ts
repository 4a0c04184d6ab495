/**
 * Preview tokens: who may see a sandbox in private mode. An HS256 JWT signed with the proxy's `PREVIEW_SECRET`,
 * `sub` the sandbox id, `user` its owner, `aud` 'svc-preview', `iat` and `exp`. The app signs one for the sandbox's
 * owner; the proxy verifies it on every request (a verified token is remembered until it expires, so a busy page
 * costs one verification, not one per request).
 */
import { jwtVerify, SignJWT } from 'jose';

/** The audience of every preview token. */
export const PREVIEW_AUDIENCE = 'svc-preview';

/** What a valid token says. */
export interface PreviewClaims {
  sandbox_id: string;
  user: string;
  /** Seconds since the epoch. */
  exp: number;
  iat: number;
}

const key = (secret: string): Uint8Array => new TextEncoder().encode(secret);

/**
 * A preview token for one sandbox and user, valid `ttlSeconds` (3600 by default).
 *
 * @example
 * const token = await signPreviewToken(process.env.PREVIEW_SECRET!, { sandbox_id: 'sbx-0123456789abcdef', user: 'ada', ttlSeconds: 3600 });
 * const url = `https://sbx-0123456789abcdef.preview.example.com/?svc_preview_token=${token}`;
 */
export async function signPreviewToken(secret: string, claims: { sandbox_id: string; user: string; ttlSeconds?: number }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ user: claims.user })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sandbox_id)
    .setAudience(PREVIEW_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.ttlSeconds ?? 3600))
    .sign(key(secret));
}

/**
 * The claims of `token` when it is signed with `secret`, unexpired and for `sandboxId`; undefined otherwise (a
 * missing, forged, expired or other sandbox's token alike: the caller answers 401 either way).
 *
 * @example
 * const claims = await verifyPreviewToken(secret, token, 'sbx-0123456789abcdef'); // { sandbox_id, user, exp, iat } | undefined
 */
export async function verifyPreviewToken(secret: string, token: string, sandboxId: string): Promise<PreviewClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, key(secret), { algorithms: ['HS256'], audience: PREVIEW_AUDIENCE, subject: sandboxId, requiredClaims: ['exp', 'iat', 'sub'] });
    if (typeof payload.user !== 'string' || typeof payload.exp !== 'number' || typeof payload.iat !== 'number') return undefined;
    return { sandbox_id: sandboxId, user: payload.user, exp: payload.exp, iat: payload.iat };
  } catch {
    return undefined;
  }
}

/**
 * {@link verifyPreviewToken} with a bounded memory of tokens already verified (until their `exp`).
 *
 * @example
 * const verifier = new PreviewVerifier(secret);
 * if (!(await verifier.verify(token, sandboxId))) answer401();
 */
export class PreviewVerifier {
  private readonly seen = new Map<string, PreviewClaims>();

  constructor(
    private readonly secret: string,
    private readonly capacity = 10_000,
  ) {}

  async verify(token: string, sandboxId: string): Promise<PreviewClaims | undefined> {
    const key = `${sandboxId} ${token}`;
    const hit = this.seen.get(key);
    if (hit) {
      if (hit.exp * 1000 > Date.now()) return hit;
      this.seen.delete(key);
    }
    const claims = await verifyPreviewToken(this.secret, token, sandboxId);
    if (!claims) return undefined;
    // The oldest entry goes first (Map keeps insertion order).
    if (this.seen.size >= this.capacity) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(key, claims);
    return claims;
  }
}
