/**
 * What travels by mail: email verification and password
 * reset, each with a one-time token — only its hash is stored, one pending
 * per user and kind, spent once.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Attempts } from './attempts.ts';
import { identityError, notFound } from './errors.ts';
import type { IdentityOptions } from './options.ts';
import { checkPassword } from './passwords.ts';
import { addressKey } from './rate-limit.ts';
import { IDENTITY_BODIES, identityValue, normalizeRaw } from './schemas.ts';
import type { Tokens } from './tokens.ts';
import { normalize, type UserRecord } from './users-repository.ts';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * @example
 * const recovery = new Recovery(options, tokens, attempts);
 * await recovery.forgotPassword({ identity: { type: 'email', value: 'ada@example.com' } }, clientAddress);
 */
export class Recovery {
  constructor(
    private readonly o: IdentityOptions,
    private readonly tokens: Tokens,
    private readonly attempts: Attempts,
  ) {}

  /** A fresh one-time token of a kind for a user (voiding the one pending); only its hash is kept. */
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

  async sendVerification(userId: string, raw: Record<string, unknown>): Promise<{ status: number; data: Record<string, unknown> }> {
    const value = normalizeRaw(IDENTITY_BODIES.sendVerification.parse(raw).identity.value);
    const user = await this.o.users.byId(userId);
    if (!user) throw notFound('no such user');
    await this.attempts.count(`verify:user:${userId}`, this.o.auth.forgot_attempts_per_identity);
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

  async verifyIdentity(raw: Record<string, unknown>): Promise<{ status: string; identity: string }> {
    const { token } = IDENTITY_BODIES.verifyIdentity.parse(raw);
    const row = await this.o.users.takeOneTimeToken(sha256(token), 'verify');
    if (!row) throw identityError('INVALID_TOKEN');
    await this.o.users.setVerified(row.user_id, row.identity);
    return { status: 'verified', identity: row.identity };
  }

  /** Always the same answer; mail only when the account exists with a verified recovery email. */
  async forgotPassword(raw: Record<string, unknown>, address: string): Promise<{ status: string; message: string }> {
    const normalized = normalize(identityValue('email', IDENTITY_BODIES.forgotPassword.parse(raw).identity.value, 'identity.value'));
    // The address first: an attempt it refuses records nothing for the identity.
    if (address) await this.attempts.count(`forgot:addr:${addressKey(address)}`, this.o.auth.login_attempts_per_address);
    await this.attempts.count(`forgot:id:${normalized}`, this.o.auth.forgot_attempts_per_identity);
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

  async resetPassword(raw: Record<string, unknown>): Promise<{ status: string; message: string }> {
    const { token, new_password: password } = IDENTITY_BODIES.resetPassword.parse(raw);
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
    await this.tokens.revoke(user.user_id, { password_hash: hash, must_change_password: false });
    return { status: 'password_reset', message: 'password reset; log in with the new password' };
  }
}
