/**
 * The emailer: SMTP through nodemailer, a registered short
 * name, or `pkg/module:Class` imported and checked. A configuration that
 * does not work disables email with a logged error; the server keeps running
 * and endpoints that need mail answer `EMAIL_DISABLED` (503).
 */
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type nodemailer from 'nodemailer';

// nodemailer is loaded when an SMTP emailer is made (email configured), never at start otherwise.
const requireHere = createRequire(import.meta.url);

export interface Emailer {
  sendEmail(to: string, subject: string, text: string, html?: string, from?: string): Promise<boolean>;
  isReady(): boolean;
}

export interface EmailerConfig {
  provider: string;
  from_address: string;
  enabled: boolean;
  smtp: { host: string; port: number; username: string; password: string; use_tls: boolean; timeout: number };
}

type EmailerFactory = (config: EmailerConfig) => Emailer;
const registered = new Map<string, EmailerFactory>();

/**
 * Make a provider available by a short name (`[scale.emailer] provider = "name"`).
 *
 * @example
 * registerEmailer('console', () => ({ isReady: () => true, sendEmail: async (to, s) => (console.log(to, s), true) }));
 */
export function registerEmailer(name: string, factory: EmailerFactory): void {
  registered.set(name, factory);
}

class SmtpEmailer implements Emailer {
  private readonly transport: ReturnType<typeof nodemailer.createTransport>;
  constructor(private readonly config: EmailerConfig) {
    const smtp = config.smtp;
    this.transport = (requireHere('nodemailer') as typeof nodemailer).createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: false,
      requireTLS: smtp.use_tls,
      ignoreTLS: !smtp.use_tls,
      auth: smtp.username ? { user: smtp.username, pass: smtp.password } : undefined,
      connectionTimeout: smtp.timeout * 1000,
      greetingTimeout: smtp.timeout * 1000,
      socketTimeout: smtp.timeout * 1000,
    });
  }
  isReady(): boolean {
    return true;
  }
  async sendEmail(to: string, subject: string, text: string, html?: string, from?: string): Promise<boolean> {
    await this.transport.sendMail({ from: from || this.config.from_address || `svc@${this.config.smtp.host}`, to, subject, text, html });
    return true;
  }
}

function isEmailer(x: unknown): x is Emailer {
  return typeof x === 'object' && x !== null && typeof (x as Emailer).sendEmail === 'function' && typeof (x as Emailer).isReady === 'function';
}

/** `pkg/module` or `./file.ts` as seen from the project, as an importable URL. */
function moduleUrl(spec: string, baseDir: string): string {
  if (spec.startsWith('.') || isAbsolute(spec)) return pathToFileURL(resolve(baseDir, spec)).href;
  return pathToFileURL(createRequire(join(baseDir, 'package.json')).resolve(spec)).href;
}

/** The configured emailer, or why there is none. Never throws. `baseDir`: where module specs resolve from. */
export async function createEmailer(config: EmailerConfig, baseDir = process.cwd()): Promise<{ emailer: Emailer } | { disabled: string }> {
  if (!config.enabled) return { disabled: 'email is disabled ([scale.emailer] enabled = false)' };
  const provider = config.provider.trim();
  if (!provider) return { disabled: 'no emailer configured ([scale.emailer] provider)' };
  try {
    if (provider === 'smtp') return { emailer: new SmtpEmailer(config) };
    const factory = registered.get(provider);
    if (factory) return { emailer: factory(config) };
    const m = /^(.+):([A-Za-z_$][\w$]*)$/.exec(provider);
    if (!m) return { disabled: `unknown emailer provider ${JSON.stringify(provider)}: use smtp, a registered name or pkg/module:Class` };
    const mod = (await import(moduleUrl(m[1] as string, baseDir))) as Record<string, unknown>;
    const Cls = mod[m[2] as string];
    if (typeof Cls !== 'function') return { disabled: `${m[1]} exports no class ${m[2]}` };
    const instance = new (Cls as new (c: EmailerConfig) => unknown)(config);
    if (!isEmailer(instance)) return { disabled: `${provider} has no sendEmail(to, subject, text, html?, from?) and isReady()` };
    return { emailer: instance };
  } catch (error) {
    return { disabled: `emailer ${provider} failed to load: ${(error as Error).message}` };
  }
}
