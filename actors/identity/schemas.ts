/**
 * What the identity routes take: one TypeBox schema per JSON body, which
 * both documents the route (`/openapi.json`) and validates the body (compiled
 * once, here), with the field limits. What JSON Schema cannot say runs after
 * it, in this file too: identities are Unicode-normalised and trimmed before
 * their format is checked, a profile is bounded in bytes and its keys named
 * by rule, and the password policy (`passwords.ts`) knows the account's identities.
 */
import Type, { type TString } from 'typebox';
import { bodyCheck } from './body-check.ts';
import { invalid } from './errors.ts';

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

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{2,63}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;
const PROFILE_KEY = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

/** A non-empty string of at most `max` characters. */
const text = (max: number, description?: string) => Type.String({ minLength: 1, maxLength: max, ...(description ? { description } : {}) });

/** A password being set: its policy (length, common ones, identities) is checked after the schema. */
const NEW_PASSWORD = Type.String({ minLength: 1, description: '8–256 characters, not a common password, not containing a username or email of the account' });
const CURRENT_PASSWORD = text(FIELD_MAX.password);

const identity = <K extends 'username' | 'email'>(types: readonly K[]) =>
  Type.Object({ type: Type.Enum(types), value: text(FIELD_MAX.identity, 'a username is 3–64 letters, digits, _ . - (starting with a letter or digit); an email is checked after Unicode normalisation (NFKC) and trimming') });
const ANY_IDENTITY = identity(['username', 'email']);
const EMAIL_IDENTITY = identity(['email']);

const credential = (password: TString) => Type.Object({ type: Type.Literal('password'), password });

/** A user's profile (README *Users, tokens and the admin*); null is taken as none. Key names and the size in bytes are checked after the schema. */
const PROFILE = Type.Union([Type.Record(Type.String({ pattern: PROFILE_KEY.source }), Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()]), { maxProperties: 20 }), Type.Null()], {
  description: 'display_name, avatar_url, bio, …: at most 20 keys (not sso), at most 8192 bytes as JSON',
});
const PROFILE_CHECK = bodyCheck(PROFILE, 'profile');

const ROLE = Type.Enum(['user', 'admin']);

/**
 * The JSON body of each identity route: its schema (`.schema`, `.doc` for
 * the docs) and its check (`.parse`).
 *
 * @example
 * const body = IDENTITY_BODIES.login.parse(raw); // VALIDATION_ERROR unless the schema accepts it
 * route.doc = { summary: 'Log in', body: IDENTITY_BODIES.login.doc };
 */
export const IDENTITY_BODIES = {
  register: bodyCheck(Type.Object({ identities: Type.Array(ANY_IDENTITY, { minItems: 1, maxItems: 2, description: 'one username, one email or both' }), credential: credential(NEW_PASSWORD), profile: Type.Optional(PROFILE) })),
  login: bodyCheck(Type.Object({ identity: ANY_IDENTITY, credential: credential(CURRENT_PASSWORD) })),
  adminLogin: bodyCheck(Type.Object({ username: text(FIELD_MAX.identity), password: CURRENT_PASSWORD }, { description: 'or the body of /user/login' })),
  refreshToken: bodyCheck(Type.Object({ token: text(FIELD_MAX.jwt, 'a token, with or without its Bearer scheme') })),
  changePassword: bodyCheck(Type.Object({ current_password: CURRENT_PASSWORD, new_password: NEW_PASSWORD })),
  addIdentity: bodyCheck(Type.Object({ identity: ANY_IDENTITY, is_recovery: Type.Optional(Type.Boolean()) })),
  sendVerification: bodyCheck(Type.Object({ identity: EMAIL_IDENTITY })),
  verifyIdentity: bodyCheck(Type.Object({ token: text(FIELD_MAX.oneTimeToken) })),
  forgotPassword: bodyCheck(Type.Object({ identity: EMAIL_IDENTITY })),
  resetPassword: bodyCheck(Type.Object({ token: text(FIELD_MAX.oneTimeToken), new_password: NEW_PASSWORD })),
  createUser: bodyCheck(
    Type.Object({
      username: text(FIELD_MAX.identity),
      email: Type.Optional(Type.String({ maxLength: FIELD_MAX.identity, description: 'empty: none' })),
      role: Type.Optional(ROLE),
      password: Type.Optional(Type.String({ description: 'empty or absent: a temporary password is generated (and returned); otherwise the password policy' })),
      profile: Type.Optional(PROFILE),
    }),
  ),
  updateUser: bodyCheck(Type.Object({ role: Type.Optional(ROLE), status: Type.Optional(Type.Enum(['active', 'disabled'])), profile: Type.Optional(PROFILE) })),
} as const;

/** An identity as the user typed it, Unicode-normalised (NFKC) and trimmed — case kept for display. */
export function normalizeRaw(value: string): string {
  return value.normalize('NFKC').trim();
}

/**
 * The value of a username or email identity, normalised, then checked: what
 * is stored and looked up is what was validated.
 */
export function identityValue(type: 'username' | 'email', raw: string, field: string): string {
  const value = normalizeRaw(raw);
  if (value.length > 254) throw invalid(field, 'must be at most 254 characters');
  if (type === 'username' && !USERNAME.test(value)) throw invalid(field, 'a username is 3–64 letters, digits, _ . - (starting with a letter or digit)');
  if (type === 'email' && !EMAIL.test(value)) throw invalid(field, 'is not an email address');
  return value;
}

/**
 * The profile rules: the profile schema, then what it
 * cannot say (key names, `sso`, the size in bytes). Absent or null: `{}`.
 *
 * @example
 * checkProfile({ display_name: 'Ada' }); // { display_name: 'Ada' }
 * checkProfile({ sso: 'x' }); // throws VALIDATION_ERROR for profile.sso
 */
export function checkProfile(x: unknown): Record<string, unknown> {
  if (x === undefined) return {};
  const profile = PROFILE_CHECK.parse(x);
  if (profile === null) return {};
  for (const k of Object.keys(profile)) {
    if (k === 'sso') throw invalid('profile.sso', 'is set by single sign-on only');
    if (!PROFILE_KEY.test(k)) throw invalid(`profile.${k}`, 'keys start with a letter, then letters, digits or _, at most 64');
  }
  if (Buffer.byteLength(JSON.stringify(profile)) > 8192) throw invalid('profile', 'at most 8192 bytes as JSON');
  return profile;
}
