/** What the identity service is built from: its stores, its limits and its settings. */
import type { ActorSystem } from '../../kernel/index.ts';
import type { Emailer } from './emailer.ts';
import type { Passwords } from './passwords.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { RevocationTable } from './revocations.ts';
import type { UsersRepository } from './users-repository.ts';

/**
 * @example
 * new IdentityService({ users, passwords, system, revocations, limiter, createRoot, dropRoot, emailer: undefined, emailDisabledReason: 'no [mail]', jwt, auth, adminSessionHours: 24, log });
 */
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
