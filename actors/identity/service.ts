/**
 * The identity service (README *Users, tokens and the admin*): one object
 * the runtime builds and the HTTP routes call, HTTP-free (they hand it parsed
 * bodies and verified claims). It is a facade over the parts, one job each:
 *
 * - `schemas.ts`: what each route takes (TypeBox schemas that validate and document), field limits;
 * - `tokens.ts`: issuing, refreshing and revoking tokens;
 * - `accounts.ts`: register, login, the user's own account;
 * - `recovery.ts`: email verification and password reset (one-time tokens by mail);
 * - `admin.ts`: the admin's user management.
 */
import { Accounts } from './accounts.ts';
import { Attempts } from './attempts.ts';
import { UserAdmin } from './admin.ts';
import type { IdentityOptions } from './options.ts';
import { Recovery } from './recovery.ts';
import { Tokens } from './tokens.ts';
import type { UserPatch, UserRecord, UsersRepository } from './users-repository.ts';

export const BOOTSTRAP_ADMIN_ID = '00000000-0000-0000-0000-000000000000';
export const GUEST_USER_ID = '00000000-0000-0000-0000-000000000001';

/**
 * @example
 * const identity = new IdentityService(options);
 * const { user, token } = await identity.login({ identity: { type: 'username', value: 'ada' }, credential: { type: 'password', password } }, clientAddress);
 */
export class IdentityService {
  private readonly tokens: Tokens;
  private readonly accounts: Accounts;
  private readonly recovery: Recovery;
  private readonly admin: UserAdmin;

  constructor(private readonly o: IdentityOptions) {
    this.tokens = new Tokens(o);
    const attempts = new Attempts(o.limiter, o.auth.rate_window_seconds);
    this.accounts = new Accounts(o, this.tokens, attempts);
    this.recovery = new Recovery(o, this.tokens, attempts);
    this.admin = new UserAdmin(o, this.tokens, this.accounts);
  }

  get users(): UsersRepository {
    return this.o.users;
  }

  // ---- tokens ---------------------------------------------------------------------

  /** A token for a user, from the record as it was read (see {@link Tokens.issue}). */
  token(user: UserRecord, hours?: number): Promise<string> {
    return this.tokens.issue(user, hours);
  }

  /** Apply a change to a user and void every token minted before it, on every thread (see {@link Tokens.revoke}). */
  revokeTokens(userId: string, patch: UserPatch = {}): Promise<void> {
    return this.tokens.revoke(userId, patch);
  }

  /** A fresh token for a valid one (see {@link Tokens.refresh}). */
  refresh(claims: { user_id: string; sv?: unknown; iat_ms?: unknown; iat?: unknown }): Promise<string> {
    return this.tokens.refresh(claims);
  }

  // ---- /user/* ----------------------------------------------------------------------

  register(body: Record<string, unknown>, address = ''): Promise<{ user_id: string; message: string }> {
    return this.accounts.register(body, address);
  }

  /** Log in (see {@link Accounts.login}); `adminOnly` for `/admin/login`. */
  login(body: Record<string, unknown>, address: string, adminOnly = false): Promise<{ user: UserRecord; token: string }> {
    return this.accounts.login(body, address, adminOnly);
  }

  me(userId: string): Promise<Record<string, unknown>> {
    return this.accounts.me(userId);
  }

  changePassword(userId: string, body: Record<string, unknown>): Promise<{ status: string; message: string; token: string }> {
    return this.accounts.changePassword(userId, body);
  }

  addIdentity(userId: string, body: Record<string, unknown>): Promise<{ status: string; verified: boolean }> {
    return this.accounts.addIdentity(userId, body);
  }

  sendVerification(userId: string, body: Record<string, unknown>): Promise<{ status: number; data: Record<string, unknown> }> {
    return this.recovery.sendVerification(userId, body);
  }

  verifyIdentity(body: Record<string, unknown>): Promise<{ status: string; identity: string }> {
    return this.recovery.verifyIdentity(body);
  }

  forgotPassword(body: Record<string, unknown>, address: string): Promise<{ status: string; message: string }> {
    return this.recovery.forgotPassword(body, address);
  }

  resetPassword(body: Record<string, unknown>): Promise<{ status: string; message: string }> {
    return this.recovery.resetPassword(body);
  }

  // ---- /admin/* ---------------------------------------------------------------------

  listUsers(query: URLSearchParams): Promise<{ users: Record<string, unknown>[]; total: number }> {
    return this.admin.listUsers(query);
  }

  getUser(name: string): Promise<Record<string, unknown>> {
    return this.admin.getUser(name);
  }

  createUser(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.admin.createUser(body);
  }

  updateUser(name: string, body: Record<string, unknown>, actorId: string): Promise<Record<string, unknown>> {
    return this.admin.updateUser(name, body, actorId);
  }

  deleteUser(name: string, actorId: string): Promise<{ deleted: string; graph_documents_deleted: number | null; graph?: string }> {
    return this.admin.deleteUser(name, actorId);
  }

  /** Finish deleting the graphs of deleted users (at start: a deletion cut short goes on). */
  finishGraphDrops(): Promise<void> {
    return this.admin.finishGraphDrops();
  }

  forcePasswordReset(name: string): Promise<{ status: string; api_keys_revoked: number }> {
    return this.admin.forcePasswordReset(name);
  }
}
