/**
 * The app's configuration files as the image carries them: `svc.toml` and its
 * profiles (`svc.<profile>.toml`) without what belongs to the deployment
 * (`[scale.orchestrator]`, `[scale.monitoring]`, `[scale.secrets]`: a change
 * there changes no image) and without any credential — an image is pushed to a
 * registry, so a secret in it is a secret published. The pods get those
 * through Secrets (`[scale.secrets]`, the generated credentials).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { SCHEMA } from '../../runtime/index.ts';
import { ImageError } from './errors.ts';

/** A project's configuration file (at its root). */
export const CONFIG_FILE = /^svc(\.[\w-]+)?\.toml$/;

/** Sections that configure the deployment, not the app. */
const DEPLOY_SECTIONS = ['scale.orchestrator', 'scale.monitoring', 'scale.secrets'];

/** Keys that hold credentials (a URI with a password in it counts). */
const CREDENTIALS: readonly string[] = [
  'scale.jwt.secret',
  'scale.metrics.scrape_token',
  'scale.webhook.secret',
  'scale.admin.default_password',
  'scale.database.docdb_uri',
  'scale.database.kv_url',
  'scale.events.url',
  'storage.secret_access_key',
  'scale.storage.secret_access_key',
  'scale.emailer.smtp.password',
  'mcp.token',
  ...Object.keys(SCHEMA).filter((s) => s.startsWith('scale.sso.')).map((s) => `${s}.client_secret`),
];

export interface ImageConfigFile {
  name: string;
  /** The file as the image holds it. */
  content: string;
  /** What was left out of it: `[section] key`, with the environment name the pods can take it from. */
  removed: string[];
}

function envOf(section: string, key: string): string | undefined {
  return ((SCHEMA as Record<string, Record<string, { env?: readonly string[] }>>)[section]?.[key]?.env ?? [])[0];
}

/**
 * The configuration files of a project, cleaned for its image.
 *
 * @example
 * imageConfigFiles('/srv/shop') // [{ name: 'svc.toml', content: '[scale.server]\nport = 8000\n', removed: ['[scale.jwt] secret (JWT_SECRET)'] }]
 */
export function imageConfigFiles(projectRoot: string): ImageConfigFile[] {
  const out: ImageConfigFile[] = [];
  for (const name of readdirSync(projectRoot).filter((n) => CONFIG_FILE.test(n)).sort()) {
    let doc: Record<string, unknown>;
    try {
      doc = parse(readFileSync(join(projectRoot, name), 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `${name}: ${(error as Error).message}`);
    }
    const removed: string[] = [];
    const table = (path: string): Record<string, unknown> | undefined => {
      let at: unknown = doc;
      for (const part of path.split('.')) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[part] : undefined;
      return at && typeof at === 'object' && !Array.isArray(at) ? (at as Record<string, unknown>) : undefined;
    };
    for (const section of DEPLOY_SECTIONS) {
      const i = section.lastIndexOf('.');
      const parent = i < 0 ? doc : table(section.slice(0, i));
      const key = section.slice(i + 1);
      if (parent && key in parent) delete parent[key];
    }
    for (const path of CREDENTIALS) {
      const i = path.lastIndexOf('.');
      const section = path.slice(0, i);
      const key = path.slice(i + 1);
      const parent = table(section);
      if (parent && key in parent) {
        if (parent[key] !== '') {
          const env = envOf(section, key);
          removed.push(`[${section}] ${key}${env ? ` (give it as [scale.secrets] ${env})` : ''}`);
        }
        delete parent[key];
      }
    }
    out.push({ name, content: `# ${name} as the image holds it: svc left out the deployment's sections and every credential.\n${stringify(doc)}\n`, removed });
  }
  return out;
}
