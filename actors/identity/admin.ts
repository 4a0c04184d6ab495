/**
 * The admin's user management (README *Users, tokens and the admin*): list, read, create, edit,
 * delete (with the user's graph) and force a password change. Users are
 * named by username, email or — service accounts have neither — user id.
 *
 * Protected accounts — the guest (role `system`, whose root is the shared
 * graph) and the bootstrap admin — are never deleted, disabled or demoted,
 * never have a password reset forced on them (the guest has no password; the
 * bootstrap admin's owner changes theirs with `PUT /user/password`), and
 * their profile is edited by no one else (the guest's by no one): each of
 * these is PROTECTED_ACCOUNT (403), refused before anything is written.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Accounts, newIdentity, publicUser } from './accounts.ts';
import { identityError, invalid, notFound } from './errors.ts';
import type { IdentityOptions } from './options.ts';
import { checkPassword } from './passwords.ts';
import { checkProfile, FIELD_MAX, IDENTITY_BODIES, identityValue } from './schemas.ts';
import type { Tokens } from './tokens.ts';
import { normalize, type UserPatch, type UserRecord } from './users-repository.ts';

/** How a protected account is named in a refusal. */
function protectedName(u: UserRecord): string {
  return u.role === 'admin' ? 'the bootstrap admin' : 'the guest account';
}

/**
 * @example
 * const admin = new UserAdmin(options, tokens, accounts);
 * await admin.createUser({ username: 'grace', role: 'admin' }); // { user_id, username, role, temporary_password }
 */
export class UserAdmin {
  constructor(
    private readonly o: IdentityOptions,
    private readonly tokens: Tokens,
    private readonly accounts: Accounts,
  ) {}

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
    // Their API keys (never a secret): what a forced reset would revoke.
    const api_keys = (await this.o.users.apiKeysOf(u.user_id)).map((k) => ({ api_key_id: k.api_key_id, name: k.name, created_at: k.created_at, expires_at: k.expires_at, walkers: k.walkers }));
    return { ...publicUser(u), protected: u.protected, must_change_password: u.must_change_password, root_id: u.root_id, api_keys };
  }

  /** A user who must change the password at the first login; without a password, a temporary one is made (and returned). */
  async createUser(raw: Record<string, unknown>): Promise<Record<string, unknown>> {
    const body = IDENTITY_BODIES.createUser.parse(raw);
    const username = identityValue('username', body.username, 'username.value');
    const ids = [newIdentity('username', username)];
    if (body.email) ids.push(newIdentity('email', identityValue('email', body.email, 'email.value')));
    const role = body.role ?? 'user';
    const generated = !body.password;
    const password = body.password ? checkPassword(body.password, ids.map((i) => i.value_raw)) : randomBytes(12).toString('base64url');
    const user = await this.accounts.create({ identities: ids, role, profile: checkProfile(body.profile), password, mustChangePassword: true });
    return { user_id: user.user_id, username, role, ...(generated ? { temporary_password: password } : {}) };
  }

  async updateUser(name: string, raw: Record<string, unknown>, actorId: string): Promise<Record<string, unknown>> {
    const u = await this.byName(name);
    const body = IDENTITY_BODIES.updateUser.parse(raw);
    const patch: UserPatch = {};
    if (body.role !== undefined) {
      if (u.protected && body.role !== u.role) throw identityError('PROTECTED_ACCOUNT');
      if (u.user_id === actorId && body.role !== u.role) throw invalid('role', 'an admin cannot change their own role');
      if (body.role !== u.role) patch.role = body.role;
    }
    if (body.status !== undefined) {
      if (u.protected && body.status !== 'active') throw identityError('PROTECTED_ACCOUNT');
      if (u.user_id === actorId && body.status !== 'active') throw invalid('status', 'an admin cannot disable their own account');
      if (body.status !== u.status) patch.status = body.status;
    }
    if (body.profile !== undefined) {
      const profile = { ...checkProfile(body.profile), ...(u.profile.sso ? { sso: u.profile.sso } : {}) };
      if (u.protected && u.user_id !== actorId && !isDeepStrictEqual(profile, u.profile)) {
        throw identityError('PROTECTED_ACCOUNT', `${protectedName(u)} is a protected account: its profile is not edited by ${u.role === 'admin' ? 'another admin' : 'anyone'}`);
      }
      if (!isDeepStrictEqual(profile, u.profile)) patch.profile = profile;
    }
    // Only what changes is written: resending the account as it is changes nothing (`updated_at` included).
    // A new role or status: tokens minted from the old state are void (in the same write).
    if (patch.role !== undefined || patch.status !== undefined) await this.tokens.revoke(u.user_id, patch);
    else if (patch.profile !== undefined) await this.o.users.update(u.user_id, patch);
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

  /**
   * The account may be in other hands: every token void, the password must
   * change, and every API key revoked (a key made with a stolen token would
   * outlive the token otherwise). Keys go first: the token revocation then
   * tells every thread to read its keys again, and finds none.
   */
  async forcePasswordReset(name: string): Promise<{ status: string; api_keys_revoked: number }> {
    const u = await this.byName(name);
    if (u.protected) {
      throw identityError('PROTECTED_ACCOUNT', u.password_hash ? `${protectedName(u)} is a protected account: no password reset is forced on it (its owner changes the password with PUT /user/password)` : `${protectedName(u)} is a protected account without a password: there is none to reset`);
    }
    let revoked = 0;
    for (const k of await this.o.users.apiKeysOf(u.user_id)) if (await this.o.users.deleteApiKey(u.user_id, k.api_key_id)) revoked++;
    await this.tokens.revoke(u.user_id, { must_change_password: true });
    return { status: 'password_change_required', api_keys_revoked: revoked };
  }
}
