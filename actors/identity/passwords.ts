/**
 * Passwords: argon2id at OWASP parameters (m = 19 MiB, t = 2, p = 1),
 * computed by the process's hashing threads (never on an event loop; see
 * `hasher.ts`). bcrypt and legacy SHA-256 hashes still verify and report that
 * they need a rehash.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { invalid } from './errors.ts';
import { ARGON2_OPTIONS, type Hasher, ThreadHasher } from './hasher.ts';

/** Whether an argon2 hash was made with weaker parameters (or another variant) than today's. */
export function argon2NeedsRehash(stored: string): boolean {
  const m = /^\$(argon2(?:id|i|d))\$v=(\d+)\$([^$]+)\$/.exec(stored);
  if (!m) return true;
  const params = Object.fromEntries((m[3] as string).split(',').map((kv) => kv.split('=') as [string, string]));
  return m[1] !== 'argon2id' || Number(m[2]) !== 19 || Number(params.m) < ARGON2_OPTIONS.memoryCost || Number(params.t) < ARGON2_OPTIONS.timeCost || Number(params.p) < ARGON2_OPTIONS.parallelism;
}

export class Passwords {
  private dummy: Promise<string> | undefined;

  constructor(private readonly hasher: Hasher) {}

  /** Make the dummy hash now, so that the first login of an unknown identity takes no longer than the others. */
  warm(): void {
    this.dummy ??= this.hash('svc-dummy-password-for-timing');
    this.dummy.catch(() => (this.dummy = undefined));
  }

  /** Passwords with a pool of its own (tools, tests): `threads` hashing threads in this thread's process. */
  static local(threads = 1): Passwords & { close(): Promise<void> } {
    const pool = new ThreadHasher({ threads });
    return Object.assign(new Passwords(pool), { close: () => pool.close() });
  }

  async hash(password: string): Promise<string> {
    return (await this.hasher.run({ op: 'hash', password })) as string;
  }

  /** Whether `password` matches `stored`, and whether `stored` should be replaced by an argon2id hash. */
  async verify(stored: string, password: string): Promise<{ ok: boolean; rehash: boolean }> {
    if (stored.startsWith('$argon2')) {
      const ok = (await this.hasher.run({ op: 'verify-argon2', stored, password })) === true;
      return { ok, rehash: ok && argon2NeedsRehash(stored) };
    }
    if (/^\$2[aby]\$\d\d\$/.test(stored)) {
      const ok = (await this.hasher.run({ op: 'verify-bcrypt', stored, password })) === true;
      return { ok, rehash: ok };
    }
    const legacy = /^(?:sha256\$([^$]*)\$)?([0-9a-f]{64})$/i.exec(stored);
    if (legacy) {
      const expected = Buffer.from((legacy[2] as string).toLowerCase(), 'hex');
      const given = createHash('sha256')
        .update((legacy[1] ?? '') + password)
        .digest();
      const ok = timingSafeEqual(expected, given);
      return { ok, rehash: ok };
    }
    return { ok: false, rehash: false };
  }

  /**
   * The same work as a real verification, for an identity that does not
   * exist: a login answers in the same time either way.
   */
  async verifyNothing(password: string): Promise<void> {
    this.dummy ??= this.hash('svc-dummy-password-for-timing');
    await this.hasher.run({ op: 'verify-argon2', stored: await this.dummy, password });
  }
}

/** Passwords people pick first; refused whatever the case. */
const COMMON = new Set(
  `password password1 password12 password123 passw0rd p@ssw0rd 12345678 123456789 1234567890 qwerty123 qwertyuiop
  iloveyou1 letmein1 welcome1 welcome123 admin123 administrator changeme changeme123 abc12345 abcd1234 11111111
  00000000 87654321 princess1 sunshine1 football1 baseball1 superman1 trustno1 dragon123 monkey123 master123
  qazwsx123 1q2w3e4r 1qaz2wsx zaq12wsx secret123 default123 letmein123 starwars1 whatever1 computer1 internet1`
    .split(/\s+/)
    .filter(Boolean),
);

/**
 * The password policy: 8 to 256 characters, not one of the common ones, not
 * equal to (or containing) one of the account's identities.
 */
export function checkPassword(password: unknown, identities: string[] = [], field = 'password'): string {
  if (typeof password !== 'string' || password.length === 0) throw invalid(field, 'must be a non-empty string');
  if (password.length < 8) throw invalid(field, 'must be at least 8 characters');
  if (password.length > 256) throw invalid(field, 'must be at most 256 characters');
  const lower = password.toLowerCase();
  if (COMMON.has(lower)) throw invalid(field, 'is one of the most common passwords');
  for (const id of identities) {
    const name = id.toLowerCase().split('@')[0] ?? '';
    if (lower === id.toLowerCase() || (name.length >= 4 && lower.includes(name))) throw invalid(field, 'must not contain your username or email');
  }
  return password;
}
