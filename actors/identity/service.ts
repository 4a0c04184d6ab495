/**
 * Users, tokens and their flows (seed 000 §2.2–2.4, §3, §4.3–4.4, §5, §7):
 * register, login, refresh, me, password change, identities, verification
 * and reset mail, and the admin's user management. HTTP-free: the routes in
 * `transports/http/identity-routes.ts` call these with parsed bodies and verified claims.
 */
import { SignJWT } from 'jose';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ActorSystem, SvcError } from '../../kernel/index.ts';
import { addressKey, type RateLimiter } from './rate-limit.ts';
import type { Emailer } from './emailer.ts';
import { forbidden, identityError, invalid, notFound, unauthorized } from './errors.ts';
import { revoked } from './jwt.ts';
import { rootIdFor } from './root-id.ts';
import { checkPassword, type Passwords } from './passwords.ts';
import type { RevocationTable } from './revocations.ts';
import { type Identity, normalize, type Role, type UserPatch, type UserRecord, userRecord, type UsersRepository } from './users-repository.ts';

export const BOOTSTRAP_ADMIN_ID = '00000000-0000-0000-0000-000000000000';
export const GUEST_USER_ID = '00000000-0000-0000-0000-000000000001';

export interface IdentityOptions {
  users: UsersRepository;
  passwords: Passwords;
  system: ActorSystem;
  revocations: RevocationTable;
  limiter: RateLimiter;
  /** Creates a user's graph root (activates the partition). */
  createRoot(rootId: string): Promise<void>;
  /** Deletes a user's graph (when the user is deleted); resolves to the documents deleted. */
  dropRoot(rootId: string): Promise<number>;
  emailer: Emailer | undefined;
  emailDisabledReason: string;
  jwt: { secret: string; algorithm: string; expDays: number };
  auth: {
    verify_token_ttl_seconds: number;
    reset_token_ttl_seconds: number;
    verify_url_template: string;
    reset_url_template: string;
    login_attempts_per_identity: number;
    login_attempts_per_address: number;
    login_successes_per_identity: number;
    register_attempts_per_address: number;
    forgot_attempts_per_identity: number;
    rate_window_seconds: number;
  };
  adminSessionHours: number;
  log: (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, unknown>) => void;
}

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

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{2,63}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;
const PROFILE_KEY = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

/**
 * The longest string each field of the built-in routes takes, checked before
 * any other work (no hashing, no rate-limit key, no lookup for longer ones).
 * Documented in the README.
 */
export const FIELD_MAX = {
  /** A username or email as sent (`identity.value`, `username`, `email`, `{username}` in paths, `search`). */
  identity: 320,
  /** A password as sent to log in or as the current one; new passwords follow the policy (8–256). */
  password: 1024,
  /** A JWT (`/user/refresh-token`). */
  jwt: 4096,
  /** A one-time token from a mail (verification, reset). */
  oneTimeToken: 256,
} as const;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function obj(x: unknown, field: string): Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw invalid(field, 'must be an object');
  return x as Record<string, unknown>;
}

function str(x: unknown, field: string, max: number): string {
  if (typeof x !== 'string' || x.length === 0) throw invalid(field, 'must be a non-empty string');
  if (x.length > max) throw invalid(field, `must be at most ${max} characters`);
  return x;
}

/** `{type, value}` of a username or email identity, checked. */
function identityInput(x: unknown, field: string, allowed: readonly ('username' | 'email')[] = ['username', 'email']): { type: 'username' | 'email'; value: string } {
  const o = obj(x, field);
  const type = o.type;
  if (!allowed.includes(type as 'username')) throw invalid(`${field}.type`, `must be ${allowed.join(' or ')}`);
  // Normalised first, then checked: what is stored and looked up is what was validated.
  const value = normalizeRaw(str(o.value, `${field}.value`, FIELD_MAX.identity));
  if (value.length > 254) throw invalid(`${field}.value`, 'must be at most 254 characters');
  if (type === 'username' && !USERNAME.test(value)) throw invalid(`${field}.value`, 'a username is 3–64 letters, digits, _ . - (starting with a letter or digit)');
  if (type === 'email' && !EMAIL.test(value)) throw invalid(`${field}.value`, 'is not an email address');
  return { type: type as 'username' | 'email', value };
}

/** The profile rules of seed 000 §2.4. */
export function checkProfile(x: unknown): Record<string, unknown> {
  if (x === undefined || x === null) return {};
  const profile = obj(x, 'profile');
  const keys = Object.keys(profile);
  if (keys.length > 20) throw invalid('profile', 'at most 20 keys');
  for (const k of keys) {
    if (k === 'sso') throw invalid('profile.sso', 'is set by single sign-on only');
    if (!PROFILE_KEY.test(k)) throw invalid(`profile.${k}`, 'keys start with a letter, then letters, digits or _, at most 64');
    const v = profile[k];
    if (typeof v === 'string') {
      if (v.length > 1024) throw invalid(`profile.${k}`, 'at most 1024 characters');
    } else if (!(typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))) {
      throw invalid(`profile.${k}`, 'must be a string, number or boolean');
    }
  }
  if (Buffer.byteLength(JSON.stringify(profile)) > 8192) throw invalid('profile', 'at most 8192 bytes as JSON');
  return profile;
}

/** An identity as the user typed it, Unicode-normalised (NFKC) and trimmed — case kept for display. */
function normalizeRaw(value: string): string {
  return value.normalize('NFKC').trim();
}

function newIdentity(type: 'username' | 'email', value: string, isRecovery?: boolean): Identity {
  return {
    type,
    value_raw: value,
    value_normalized: normalize(value),
    verified: type === 'username',
    is_recovery: isRecovery ?? type === 'email',
  };
}

/** What `/user/me` and the admin show of a user: never hashes, normalised values, root ids. */
export function publicUser(u: UserRecord): Record<string, unknown> {
  return {
    user_id: u.user_id,
    role: u.role,
    status: u.status,
    identities: u.identities.map((i) =>
      i.type === 'sso' ? { type: i.type, provider: i.provider, verified: i.verified, is_recovery: i.is_recovery } : { type: i.type, value: i.value_raw, verified: i.verified, is_recovery: i.is_recovery },
    ),
    profile: u.profile,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}

function tooMany(retryAfterMs: number): SvcError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return identityError('TOO_MANY_REQUESTS', `too many attempts; retry in ${seconds} s`, { retry_after_seconds: seconds });
}

export class IdentityService {
  private readonly key: Uint8Array;
  /** Per user, the password change under way (they run one at a time). */
  private readonly changing = new Map<string, Promise<void>>();

  constructor(private readonly o: IdentityOptions) {
    this.key = new TextEncoder().encode(o.jwt.secret);
  }

  get users(): UsersRepository {
    return this.o.users;
  }

  /**
   * Sign a token for a user (jose), from the record as it was read: the
   * token carries that record's security stamp, so a change made since the
   * read voids it.
   */
  async token(user: UserRecord, hours?: number): Promise<string> {
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
  async revokeTokens(userId: string, patch: UserPatch = {}): Promise<void> {
    const stamp = await this.o.users.updateAndRevoke(userId, patch);
    if (stamp !== undefined) await this.o.revocations.broadcast(userId, stamp);
  }

  private async limit(key: string, limit: number): Promise<void> {
    const verdict = await this.o.limiter.hit(key, limit, this.windowMs);
    if (!verdict.allowed) throw tooMany(verdict.retryAfterMs);
  }

  private get windowMs(): number {
    return this.o.auth.rate_window_seconds * 1000;
  }

  // ---- /user/* -----------------------------------------------------------------

  async register(body: Record<string, unknown>, address = ''): Promise<{ user_id: string; message: string }> {
    if (!Array.isArray(body.identities) || body.identities.length === 0) throw invalid('identities', 'at least one identity is required');
    if (body.identities.length > 2) throw invalid('identities', 'at most one username and one email');
    const ids = body.identities.map((x, i) => identityInput(x, `identities[${i}]`));
    if (new Set(ids.map((i) => i.type)).size !== ids.length) throw invalid('identities', 'one identity of each type at most');
    const credential = obj(body.credential, 'credential');
    if (credential.type !== 'password') throw invalid('credential.type', 'must be password');
    const password = checkPassword(credential.password, ids.map((i) => i.value), 'credential.password');
    const profile = checkProfile(body.profile);
    // Each registration costs a hash: limited per client address.
    if (address) await this.limit(`register:addr:${addressKey(address)}`, this.o.auth.register_attempts_per_address);
    for (const i of ids) if (await this.o.users.byIdentity(normalize(i.value))) throw identityError('IDENTITY_TAKEN', `${i.type} ${i.value} is already used`);
    const user = userRecord({
      user_id: randomUUID(),
      role: 'user',
      profile,
      identities: ids.map((i) => newIdentity(i.type, i.value)),
      password_hash: await this.o.passwords.hash(password),
    });
    await this.o.users.create(user);
    await this.o.createRoot(user.root_id);
    return { user_id: user.user_id, message: 'registered' };
  }

  /**
   * Login: the same answer, in the same time, for an unknown identity, a
   * wrong password and a disabled account (whatever the password: the answer
   * never confirms one). Failures are limited per client address and per
   * account; successes have a budget of their own per account. The token is
   * minted from the user record read before the password is checked: a
   * change that lands while it hashes voids it.
   */
  async login(body: Record<string, unknown>, address: string, adminOnly = false): Promise<{ user: UserRecord; token: string }> {
    let identityValue: string;
    let password: string;
    if (adminOnly && body.username !== undefined) {
      identityValue = str(body.username, 'username', FIELD_MAX.identity);
      password = str(body.password, 'password', FIELD_MAX.password);
    } else {
      const identity = identityInput(body.identity, 'identity');
      identityValue = identity.value;
      const credential = obj(body.credential, 'credential');
      if (credential.type !== 'password') throw invalid('credential.type', 'must be password');
      password = str(credential.password, 'credential.password', FIELD_MAX.password);
    }
    const normalized = normalize(identityValue);
    const user = await this.o.users.byIdentity(normalized);
    // Every attempt is counted up front (concurrent guesses cannot slip past the limit); a
    // successful one is given back, so only failures add up. The address first: an attempt it
    // refuses records nothing for the identity. Counted per account (all its identities share
    // one budget), or per identity when there is no such account.
    const byIdentity = user ? `login:user:${user.user_id}` : `login:id:${normalized}`;
    const byAddress = address ? `login:addr:${addressKey(address)}` : '';
    if (byAddress) await this.limit(byAddress, this.o.auth.login_attempts_per_address);
    try {
      await this.limit(byIdentity, this.o.auth.login_attempts_per_identity);
    } catch (error) {
      if (byAddress) this.o.limiter.refund(byAddress);
      throw error;
    }
    const successes = user ? `login:ok:${user.user_id}` : '';
    if (successes) {
      // Successful logins have a budget of their own; spent, no password is checked (no hash).
      const budget = await this.o.limiter.peek(successes, this.o.auth.login_successes_per_identity, this.windowMs);
      if (!budget.allowed) {
        this.o.limiter.refund(byIdentity);
        if (byAddress) this.o.limiter.refund(byAddress);
        throw tooMany(budget.retryAfterMs);
      }
    }
    if (!user?.password_hash) {
      await this.o.passwords.verifyNothing(password);
      throw identityError('INVALID_CREDENTIALS');
    }
    const { ok, rehash } = await this.o.passwords.verify(user.password_hash, password);
    if (!ok || user.status !== 'active') throw identityError('INVALID_CREDENTIALS');
    if (adminOnly && user.role !== 'admin') throw forbidden('this account is not an admin');
    await this.limit(successes, this.o.auth.login_successes_per_identity);
    this.o.limiter.refund(byIdentity);
    if (byAddress) this.o.limiter.refund(byAddress);
    if (rehash && (await this.o.users.replacePasswordHash(user.user_id, user.password_hash, await this.o.passwords.hash(password)))) {
      this.o.log('info', 'password rehashed to argon2id', { user_id: user.user_id });
    }
    return { user, token: await this.token(user, adminOnly ? this.o.adminSessionHours : undefined) };
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
    return this.token(user);
  }

  async me(userId: string): Promise<Record<string, unknown>> {
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    return publicUser(user);
  }

  /**
   * Change the password: the current one is needed; every older token is
   * void afterwards. A right current password is never refused for rate
   * reasons; wrong ones count against the account's login budget.
   */
  async changePassword(userId: string, body: Record<string, unknown>): Promise<{ status: string; message: string; token: string }> {
    // One at a time per user (a token holder cannot keep the hashing threads busy in parallel).
    const before = this.changing.get(userId) ?? Promise.resolve();
    const mine = before.then(() => this.changePasswordNow(userId, body));
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.changing.set(userId, settled);
    void settled.then(() => {
      if (this.changing.get(userId) === settled) this.changing.delete(userId);
    });
    return mine;
  }

  private async changePasswordNow(userId: string, body: Record<string, unknown>): Promise<{ status: string; message: string; token: string }> {
    const current = str(body.current_password, 'current_password', FIELD_MAX.password);
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    const next = checkPassword(body.new_password, user.identities.map((i) => i.value_raw), 'new_password');
    if (!user.password_hash || !(await this.o.passwords.verify(user.password_hash, current)).ok) {
      // Guessing the current password with a stolen token is limited like logins (the account's login budget).
      await this.limit(`login:user:${userId}`, this.o.auth.login_attempts_per_identity);
      throw invalid('current_password', 'is wrong');
    }
    if (current === next) throw invalid('new_password', 'must differ from the current password');
    await this.revokeTokens(userId, { password_hash: await this.o.passwords.hash(next), must_change_password: false });
    const fresh = await this.o.users.byId(userId);
    if (!fresh) throw notFound('no such user');
    return { status: 'password_changed', message: 'password changed; tokens issued before are no longer valid', token: await this.token(fresh) };
  }

  async addIdentity(userId: string, body: Record<string, unknown>): Promise<{ status: string; verified: boolean }> {
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    const input = identityInput(body.identity, 'identity');
    if (user.identities.some((i) => i.type === input.type)) throw invalid('identity.type', `this account has a ${input.type} already`);
    if (body.is_recovery !== undefined && typeof body.is_recovery !== 'boolean') throw invalid('is_recovery', 'must be true or false');
    const id = newIdentity(input.type, input.value, body.is_recovery as boolean | undefined);
    await this.o.users.addIdentity(userId, id);
    return { status: 'added', verified: id.verified };
  }

  private async issue(user: UserRecord, kind: 'verify' | 'reset', identity: string): Promise<string> {
    await this.o.users.voidOneTimeTokens(user.user_id, kind);
    const token = randomBytes(32).toString('base64url');
    const ttl = kind === 'verify' ? this.o.auth.verify_token_ttl_seconds : this.o.auth.reset_token_ttl_seconds;
    await this.o.users.putOneTimeToken({ token_hash: sha256(token), user_id: user.user_id, kind, identity, expires_at: Date.now() + ttl * 1000 });
    return token;
  }

  private link(template: string, token: string): string {
    return template ? template.replaceAll('{token}', encodeURIComponent(token)) : token;
  }

  async sendVerification(userId: string, body: Record<string, unknown>): Promise<{ status: number; data: Record<string, unknown> }> {
    const input = obj(body.identity, 'identity');
    if (input.type !== 'email') throw invalid('identity.type', 'only email identities are verified by mail');
    const value = normalizeRaw(str(input.value, 'identity.value', FIELD_MAX.identity));
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    await this.limit(`verify:user:${userId}`, this.o.auth.forgot_attempts_per_identity);
    const id = user.identities.find((i) => i.type === 'email' && i.value_normalized === normalize(value));
    if (!id) throw notFound('that email is not an identity of this account');
    if (id.verified) return { status: 200, data: { status: 'already_verified' } };
    if (!this.o.emailer) throw identityError('EMAIL_DISABLED', this.o.emailDisabledReason);
    const token = await this.issue(user, 'verify', id.value_normalized);
    const link = this.link(this.o.auth.verify_url_template, token);
    let sent = false;
    try {
      sent = await this.o.emailer.sendEmail(id.value_raw, 'Verify your email', `Verify your email with this ${this.o.auth.verify_url_template ? 'link' : 'token'}:\n\n${link}\n`);
    } catch (error) {
      this.o.log('error', 'verification mail failed', { error: (error as Error).message });
    }
    return { status: 202, data: { status: 'pending_verification', email_sent: sent } };
  }

  async verifyIdentity(body: Record<string, unknown>): Promise<{ status: string; identity: string }> {
    const token = str(body.token, 'token', FIELD_MAX.oneTimeToken);
    const row = await this.o.users.takeOneTimeToken(sha256(token), 'verify');
    if (!row) throw identityError('INVALID_TOKEN');
    await this.o.users.setVerified(row.user_id, row.identity);
    return { status: 'verified', identity: row.identity };
  }

  /** Always the same answer; mail only when the account exists with a verified recovery email. */
  async forgotPassword(body: Record<string, unknown>, address: string): Promise<{ status: string; message: string }> {
    const input = identityInput(body.identity, 'identity', ['email']);
    const normalized = normalize(input.value);
    // The address first: an attempt it refuses records nothing for the identity.
    if (address) await this.limit(`forgot:addr:${addressKey(address)}`, this.o.auth.login_attempts_per_address);
    await this.limit(`forgot:id:${normalized}`, this.o.auth.forgot_attempts_per_identity);
    const answer = { status: 'ok', message: 'if an account has this verified recovery email, a reset link was sent to it' };
    const user = await this.o.users.byIdentity(normalized);
    const id = user?.identities.find((i) => i.value_normalized === normalized && i.type === 'email');
    if (!user || !id?.verified || !id.is_recovery || user.status !== 'active' || !this.o.emailer) return answer;
    const token = await this.issue(user, 'reset', normalized);
    const link = this.link(this.o.auth.reset_url_template, token);
    // Not awaited: the answer takes the same time whether or not there is a mail to send.
    void this.o.emailer.sendEmail(id.value_raw, 'Reset your password', `Reset your password with this ${this.o.auth.reset_url_template ? 'link' : 'token'}:\n\n${link}\n\nIf you did not ask for it, ignore this mail.\n`).catch((error: unknown) => this.o.log('error', 'reset mail failed', { error: (error as Error).message }));
    return answer;
  }

  async resetPassword(body: Record<string, unknown>): Promise<{ status: string; message: string }> {
    const token = str(body.token, 'token', FIELD_MAX.oneTimeToken);
    const password = body.new_password;
    if (typeof password !== 'string' || password.length === 0) throw invalid('new_password', 'must be a non-empty string');
    // The password is checked before the token is spent: a refused password does not cost the link.
    const pending = await this.o.users.peekOneTimeToken(sha256(token), 'reset');
    const owner = pending && (await this.o.users.byId(pending.user_id));
    if (!owner) throw identityError('INVALID_TOKEN');
    checkPassword(password, owner.identities.map((i) => i.value_raw), 'new_password');
    const row = await this.o.users.takeOneTimeToken(sha256(token), 'reset');
    const user = row && (await this.o.users.byId(row.user_id));
    if (!user) throw identityError('INVALID_TOKEN');
    const hash = await this.o.passwords.hash(password);
    await this.o.users.voidOneTimeTokens(user.user_id, 'reset');
    await this.revokeTokens(user.user_id, { password_hash: hash, must_change_password: false });
    return { status: 'password_reset', message: 'password reset; log in with the new password' };
  }

  // ---- /admin/* ------------------------------------------------------------------

  private async byName(name: string): Promise<UserRecord> {
    if (name.length > FIELD_MAX.identity) throw invalid('username', `must be at most ${FIELD_MAX.identity} characters`);
    // By username or email; service accounts (from svc token) have neither: by user id.
    const user = (await this.o.users.byIdentity(normalize(name))) ?? (await this.o.users.byId(name));
    if (!user) throw notFound(`no user ${name}`);
    return user;
  }

  async listUsers(query: URLSearchParams): Promise<{ users: Record<string, unknown>[]; total: number }> {
    const limit = Number(query.get('limit') ?? 50);
    const offset = Number(query.get('offset') ?? 0);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 500) throw invalid('limit', 'must be an integer from 1 to 500');
    if (!Number.isSafeInteger(offset) || offset < 0) throw invalid('offset', 'must be a whole number ≥ 0');
    const search = query.get('search') ?? undefined;
    if (search !== undefined && search.length > FIELD_MAX.identity) throw invalid('search', `must be at most ${FIELD_MAX.identity} characters`);
    const { users, total } = await this.o.users.list({ search, limit, offset });
    return { users: users.map((u) => ({ ...publicUser(u), username: u.identities.find((i) => i.type === 'username')?.value_raw ?? null, protected: u.protected, must_change_password: u.must_change_password })), total };
  }

  async getUser(name: string): Promise<Record<string, unknown>> {
    const u = await this.byName(name);
    return { ...publicUser(u), protected: u.protected, must_change_password: u.must_change_password, root_id: u.root_id };
  }

  async createUser(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const username = identityInput({ type: 'username', value: body.username }, 'username');
    const ids = [newIdentity('username', username.value)];
    if (body.email !== undefined && body.email !== '') ids.push(newIdentity('email', identityInput({ type: 'email', value: body.email }, 'email').value));
    const role = (body.role ?? 'user') as Role;
    if (!['user', 'admin'].includes(role)) throw invalid('role', 'must be user or admin');
    const generated = body.password === undefined || body.password === '';
    const password = generated ? randomBytes(12).toString('base64url') : checkPassword(body.password, ids.map((i) => i.value_raw));
    for (const i of ids) if (await this.o.users.byIdentity(i.value_normalized)) throw identityError('IDENTITY_TAKEN', `${i.type} ${i.value_raw} is already used`);
    const user = userRecord({
      user_id: randomUUID(),
      role,
      profile: checkProfile(body.profile),
      must_change_password: true,
      identities: ids,
      password_hash: await this.o.passwords.hash(password),
    });
    await this.o.users.create(user);
    await this.o.createRoot(user.root_id);
    return { user_id: user.user_id, username: username.value, role, ...(generated ? { temporary_password: password } : {}) };
  }

  async updateUser(name: string, body: Record<string, unknown>, actorId: string): Promise<Record<string, unknown>> {
    const u = await this.byName(name);
    const patch: UserPatch = {};
    if (body.role !== undefined) {
      if (!['user', 'admin'].includes(body.role as string)) throw invalid('role', 'must be user or admin');
      if (u.protected && body.role !== u.role) throw identityError('PROTECTED_ACCOUNT');
      if (u.user_id === actorId && body.role !== u.role) throw invalid('role', 'an admin cannot change their own role');
      patch.role = body.role as Role;
    }
    if (body.status !== undefined) {
      if (!['active', 'disabled'].includes(body.status as string)) throw invalid('status', 'must be active or disabled');
      if (u.protected && body.status !== 'active') throw identityError('PROTECTED_ACCOUNT');
      if (u.user_id === actorId && body.status !== 'active') throw invalid('status', 'an admin cannot disable their own account');
      patch.status = body.status as 'active' | 'disabled';
    }
    if (body.profile !== undefined) patch.profile = { ...checkProfile(body.profile), ...(u.profile.sso ? { sso: u.profile.sso } : {}) };
    // A new role or a disabled account: tokens minted from the old state are void (in the same write).
    if ((patch.role && patch.role !== u.role) || (patch.status && patch.status !== u.status)) await this.revokeTokens(u.user_id, patch);
    else await this.o.users.update(u.user_id, patch);
    return this.getUser(name);
  }

  async deleteUser(name: string, actorId: string): Promise<{ deleted: string; graph_documents_deleted: number | null; graph?: string }> {
    const u = await this.byName(name);
    if (u.protected) throw identityError('PROTECTED_ACCOUNT');
    if (u.user_id === actorId) throw invalid('username', 'an admin cannot delete their own account');
    const mark = await this.o.users.delete(u.user_id);
    await this.o.revocations.broadcast(u.user_id, mark);
    // Their graph goes too: nodes and edges they own (edges of others reaching them are left, and
    // skipped). Recorded with the deletion: if it does not finish now, the next start finishes it.
    try {
      const documents = await this.o.dropRoot(u.root_id);
      await this.o.users.graphDropped(u.root_id);
      return { deleted: u.user_id, graph_documents_deleted: documents };
    } catch (error) {
      this.o.log('error', 'deleting a user’s graph failed; it is retried at the next start', { root_id: u.root_id, error: (error as Error).message });
      return { deleted: u.user_id, graph_documents_deleted: null, graph: 'deletion pending: finished at the next start' };
    }
  }

  /** Finish deleting the graphs of deleted users (at start: a deletion cut short goes on). */
  async finishGraphDrops(): Promise<void> {
    for (const root of await this.o.users.pendingGraphDrops()) {
      try {
        const documents = await this.o.dropRoot(root);
        await this.o.users.graphDropped(root);
        this.o.log('info', 'the graph of a deleted user is deleted', { root_id: root, documents });
      } catch (error) {
        this.o.log('error', 'deleting a deleted user’s graph failed again; retried at the next start', { root_id: root, error: (error as Error).message });
      }
    }
  }

  async forcePasswordReset(name: string): Promise<{ status: string }> {
    const u = await this.byName(name);
    await this.revokeTokens(u.user_id, { must_change_password: true });
    return { status: 'password_change_required' };
  }
}
