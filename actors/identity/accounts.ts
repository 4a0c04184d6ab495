/**
 * A user's own account (README *Users, tokens and the admin*): register, log in, read it,
 * change the password, add an identity; and the account records every flow
 * shares (a new identity, a new account, what a user may see of one).
 */
import { randomUUID } from 'node:crypto';
import { type Attempts, tooMany } from './attempts.ts';
import { forbidden, identityError, invalid, notFound } from './errors.ts';
import type { IdentityOptions } from './options.ts';
import { checkPassword } from './passwords.ts';
import { addressKey } from './rate-limit.ts';
import { checkProfile, IDENTITY_BODIES, identityValue } from './schemas.ts';
import type { Tokens } from './tokens.ts';
import { type Identity, normalize, type Role, type UserRecord, userRecord } from './users-repository.ts';

/** A username or email identity of a new account (a username is verified by nature; an email is the recovery one unless told). */
export function newIdentity(type: 'username' | 'email', value: string, isRecovery?: boolean): Identity {
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

/** A new account as its creator asked for it (checked already). */
export interface NewAccount {
  identities: Identity[];
  role: Role;
  profile: Record<string, unknown>;
  password: string;
  mustChangePassword?: boolean;
}

/**
 * @example
 * const accounts = new Accounts(options, new Tokens(options), new Attempts(options.limiter, 900));
 * const { user_id } = await accounts.register({ identities: [{ type: 'username', value: 'ada' }], credential: { type: 'password', password } });
 */
export class Accounts {
  /** Per user, the password change under way (they run one at a time). */
  private readonly changing = new Map<string, Promise<void>>();

  constructor(
    private readonly o: IdentityOptions,
    private readonly tokens: Tokens,
    private readonly attempts: Attempts,
  ) {}

  /** Create an account and its graph root, unless one of its identities is taken. */
  async create(account: NewAccount): Promise<UserRecord> {
    for (const i of account.identities) if (await this.o.users.byIdentity(i.value_normalized)) throw identityError('IDENTITY_TAKEN', `${i.type} ${i.value_raw} is already used`);
    const user = userRecord({
      user_id: randomUUID(),
      role: account.role,
      profile: account.profile,
      must_change_password: account.mustChangePassword ?? false,
      identities: account.identities,
      password_hash: await this.o.passwords.hash(account.password),
    });
    await this.o.users.create(user);
    await this.o.createRoot(user.root_id);
    return user;
  }

  async register(raw: Record<string, unknown>, address = ''): Promise<{ user_id: string; message: string }> {
    const body = IDENTITY_BODIES.register.parse(raw);
    const ids = body.identities.map((i, n) => ({ type: i.type, value: identityValue(i.type, i.value, `identities[${n}].value`) }));
    if (new Set(ids.map((i) => i.type)).size !== ids.length) throw invalid('identities', 'one identity of each type at most');
    const password = checkPassword(body.credential.password, ids.map((i) => i.value), 'credential.password');
    const profile = checkProfile(body.profile);
    // Each registration costs a hash: limited per client address.
    if (address) await this.attempts.count(`register:addr:${addressKey(address)}`, this.o.auth.register_attempts_per_address);
    const user = await this.create({ identities: ids.map((i) => newIdentity(i.type, i.value)), role: 'user', profile, password });
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
  async login(raw: Record<string, unknown>, address: string, adminOnly = false): Promise<{ user: UserRecord; token: string }> {
    let name: string;
    let password: string;
    if (adminOnly && raw.username !== undefined) {
      ({ username: name, password } = IDENTITY_BODIES.adminLogin.parse(raw));
    } else {
      const body = IDENTITY_BODIES.login.parse(raw);
      name = identityValue(body.identity.type, body.identity.value, 'identity.value');
      password = body.credential.password;
    }
    const normalized = normalize(name);
    const user = await this.o.users.byIdentity(normalized);
    // Every attempt is counted up front (concurrent guesses cannot slip past the limit); a
    // successful one is given back, so only failures add up. The address first: an attempt it
    // refuses records nothing for the identity. Counted per account (all its identities share
    // one budget), or per identity when there is no such account.
    const byIdentity = user ? `login:user:${user.user_id}` : `login:id:${normalized}`;
    const byAddress = address ? `login:addr:${addressKey(address)}` : '';
    if (byAddress) await this.attempts.count(byAddress, this.o.auth.login_attempts_per_address);
    try {
      await this.attempts.count(byIdentity, this.o.auth.login_attempts_per_identity);
    } catch (error) {
      this.attempts.refund(byAddress);
      throw error;
    }
    const successes = user ? `login:ok:${user.user_id}` : '';
    if (successes) {
      // Successful logins have a budget of their own; spent, no password is checked (no hash).
      const budget = await this.attempts.peek(successes, this.o.auth.login_successes_per_identity);
      if (!budget.allowed) {
        this.attempts.refund(byIdentity, byAddress);
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
    await this.attempts.count(successes, this.o.auth.login_successes_per_identity);
    this.attempts.refund(byIdentity, byAddress);
    if (rehash && (await this.o.users.replacePasswordHash(user.user_id, user.password_hash, await this.o.passwords.hash(password)))) {
      this.o.log('info', 'password rehashed to argon2id', { user_id: user.user_id });
    }
    return { user, token: await this.tokens.issue(user, adminOnly ? this.o.adminSessionHours : undefined) };
  }

  async me(userId: string): Promise<Record<string, unknown>> {
    return publicUser(await this.existing(userId));
  }

  /**
   * Change the password: the current one is needed; every older token is
   * void afterwards. A right current password is never refused for rate
   * reasons; wrong ones count against the account's login budget.
   */
  async changePassword(userId: string, raw: Record<string, unknown>): Promise<{ status: string; message: string; token: string }> {
    // One at a time per user (a token holder cannot keep the hashing threads busy in parallel).
    const before = this.changing.get(userId) ?? Promise.resolve();
    const mine = before.then(() => this.changePasswordNow(userId, raw));
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

  private async changePasswordNow(userId: string, raw: Record<string, unknown>): Promise<{ status: string; message: string; token: string }> {
    const body = IDENTITY_BODIES.changePassword.parse(raw);
    const current = body.current_password;
    const user = await this.existing(userId);
    const next = checkPassword(body.new_password, user.identities.map((i) => i.value_raw), 'new_password');
    if (!user.password_hash || !(await this.o.passwords.verify(user.password_hash, current)).ok) {
      // Guessing the current password with a stolen token is limited like logins (the account's login budget).
      await this.attempts.count(`login:user:${userId}`, this.o.auth.login_attempts_per_identity);
      throw invalid('current_password', 'is wrong');
    }
    if (current === next) throw invalid('new_password', 'must differ from the current password');
    await this.tokens.revoke(userId, { password_hash: await this.o.passwords.hash(next), must_change_password: false });
    return { status: 'password_changed', message: 'password changed; tokens issued before are no longer valid', token: await this.tokens.issue(await this.existing(userId)) };
  }

  async addIdentity(userId: string, raw: Record<string, unknown>): Promise<{ status: string; verified: boolean }> {
    const user = await this.existing(userId);
    const body = IDENTITY_BODIES.addIdentity.parse(raw);
    const type = body.identity.type;
    const value = identityValue(type, body.identity.value, 'identity.value');
    if (user.identities.some((i) => i.type === type)) throw invalid('identity.type', `this account has a ${type} already`);
    const id = newIdentity(type, value, body.is_recovery);
    await this.o.users.addIdentity(userId, id);
    return { status: 'added', verified: id.verified };
  }

  /** The user's record; NOT_FOUND when there is none (any more). */
  private async existing(userId: string): Promise<UserRecord> {
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    return user;
  }
}
