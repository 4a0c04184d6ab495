// A real SMTP server on a free loopback port that keeps what arrives, and the env that points `svc start` at it.

/** A mail as it arrived. */
export interface Mail {
  from: string;
  to: string[];
  raw: string;
  subject: string;
  /** The body with quoted-printable soft breaks undone. */
  text: string;
}

/** An SMTP listener of the test: what arrived, and the next mail to come. */
export interface SmtpServer {
  port: number;
  /** Every mail so far, in the order they arrived. */
  mails: Mail[];
  /** The next mail not yet taken (already arrived, or still to come). */
  next(): Promise<Mail>;
  close(): Promise<void>;
}

/**
 * A real SMTP server on a free port; mails arrive in `mails`, `next()` waits for the next one.
 *
 * @example
 * const smtp = await startSmtp();
 * const server = await startServer({ entry, env: smtpEnv(smtp.port) });
 * const mail = await smtp.next();
 */
export async function startSmtp(): Promise<SmtpServer> {
  const mails: Mail[] = [];
  const waiting: ((m: Mail) => void)[] = [];
  let taken = 0;
  const { SMTPServer } = await import('smtp-server'); // loaded here: importing the kit does not load it
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
