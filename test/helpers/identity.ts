// Users against a real server, and a real SMTP listener that keeps what arrives.
import { SMTPServer } from 'smtp-server';
import { post } from './server.ts';

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

export interface Mail {
  from: string;
  to: string[];
  raw: string;
  subject: string;
  /** The body with quoted-printable soft breaks undone. */
  text: string;
}

/** A real SMTP server on a free port; mails arrive in `mails`, `next()` waits for the next one. */
export async function startSmtp(): Promise<{ port: number; mails: Mail[]; next(): Promise<Mail>; close(): Promise<void> }> {
  const mails: Mail[] = [];
  const waiting: ((m: Mail) => void)[] = [];
  let taken = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const [head = '', ...body] = raw.split(/\r?\n\r?\n/);
        const mail: Mail = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          subject: /^Subject: (.*)$/im.exec(head)?.[1] ?? '',
          text: body.join('\n\n').replace(/=\r?\n/g, '').replace(/=3D/g, '='),
        };
        mails.push(mail);
        waiting.shift()?.(mail);
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    mails,
    next() {
      const ready = mails[taken];
      if (ready) {
        taken++;
        return Promise.resolve(ready);
      }
      return new Promise((resolve) =>
        waiting.push((m) => {
          taken++;
          resolve(m);
        }),
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The env that points `svc start` at a test SMTP listener. */
export function smtpEnv(port: number): Record<string, string> {
  return { EMAILER_PROVIDER: 'smtp', EMAILER_SMTP_HOST: '127.0.0.1', EMAILER_SMTP_PORT: String(port), EMAILER_SMTP_USE_TLS: 'false', EMAILER_FROM_ADDRESS: 'svc@test.local' };
}

/** The 43-character token in a mail (32 random bytes, base64url). */
export function tokenIn(mail: Mail): string {
  const m = /(?:token=|\n)([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/.exec(mail.text);
  if (!m) throw new Error(`no token in mail:\n${mail.text}`);
  return m[1] as string;
}
