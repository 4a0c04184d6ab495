/**
 * Passwords: argon2id at OWASP parameters (m = 19 MiB, t = 2, p = 1), hashed
 * on libuv's thread pool (never on the event loop) with at most
 * `concurrency` at once, so request handling keeps a core. bcrypt and legacy
 * SHA-256 hashes still verify and report that they need a rehash.
 */
import argon2 from 'argon2';
import bcrypt from 'bcryptjs';
import { createHash, timingSafeEqual } from 'node:crypto';
import { invalid } from './errors.ts';

export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** A small gate: at most `limit` hash computations at once. */
class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await work();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export class Passwords {
  private readonly gate: Gate;
  private dummy: Promise<string> | undefined;

  constructor(concurrency: number) {
    this.gate = new Gate(Math.max(1, concurrency));
  }

  hash(password: string): Promise<string> {
    return this.gate.run(() => argon2.hash(password, ARGON2_OPTIONS));
  }

  /** Whether `password` matches `stored`, and whether `stored` should be replaced by an argon2id hash. */
  async verify(stored: string, password: string): Promise<{ ok: boolean; rehash: boolean }> {
    if (stored.startsWith('$argon2')) {
      const ok = await this.gate.run(() => argon2.verify(stored, password));
      return { ok, rehash: ok && argon2.needsRehash(stored, ARGON2_OPTIONS) };
    }
    if (/^\$2[aby]\$/.test(stored)) {
      const ok = await bcrypt.compare(password, stored);
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
    this.dummy ??= argon2.hash('svc-dummy-password-for-timing', ARGON2_OPTIONS);
    await this.gate.run(async () => argon2.verify(await (this.dummy as Promise<string>), password));
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
