// Users against a real server, and the tokens svc mails (the SMTP listener that keeps what arrives is in the test kit).
import { post, type Mail } from '../kit/index.ts';

export const GOOD_PASSWORD = 'correct horse battery staple';

export async function register(url: string, username: string, options: { email?: string; password?: string; profile?: unknown } = {}): Promise<string> {
  const identities: unknown[] = [{ type: 'username', value: username }];
  if (options.email) identities.push({ type: 'email', value: options.email });
  const res = await post(`${url}/user/register`, { identities, credential: { type: 'password', password: options.password ?? GOOD_PASSWORD }, profile: options.profile });
  if (res.status !== 201) throw new Error(`register ${username}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.user_id as string;
}

export async function login(url: string, value: string, password = GOOD_PASSWORD, type: 'username' | 'email' = value.includes('@') ? 'email' : 'username') {
  return post(`${url}/user/login`, { identity: { type, value }, credential: { type: 'password', password } });
}

/** Log in and return the token (throws on anything but 200). */
export async function tokenOf(url: string, value: string, password = GOOD_PASSWORD): Promise<string> {
  const res = await login(url, value, password);
  if (res.status !== 200) throw new Error(`login ${value}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.token as string;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The claims of a JWT, unchecked (for asserting what the server put in). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
}

/** The 43-character token in a mail (32 random bytes, base64url). */
export function tokenIn(mail: Mail): string {
  const m = /(?:token=|\n)([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/.exec(mail.text);
  if (!m) throw new Error(`no token in mail:\n${mail.text}`);
  return m[1] as string;
}
