// Sandboxes a test started through a server it killed keep running (by design: a later svc adopts them); a test that
// fails midway would leave them. Teardowns call this: every process of a sandbox of `dataDir` is killed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA } from '../../runtime/config.ts';
import type { SandboxSettings } from '../../actors/sandbox/index.ts';

/** Kill (SIGKILL) every process whose environment names a sandbox with a folder in `<dataDir>/sandboxes`. */
export function killSandboxesOf(dataDir: string): void {
  let ids: Set<string>;
  try {
    ids = new Set(readdirSync(join(dataDir, 'sandboxes')));
  } catch {
    return;
  }
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const id = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').find((e) => e.startsWith('SVC_SANDBOX_ID='))?.slice('SVC_SANDBOX_ID='.length);
      if (id && ids.has(id)) process.kill(Number(name), 'SIGKILL');
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
}

/** The orchestrator keys of `[scale.sandbox]` at their defaults (tests of the other providers spread them into hand-made settings). */
export const ORCHESTRATOR_DEFAULTS = {
  namespace: 'svc-sandboxes',
  proxy_mode: false,
  ingress_class: '',
  domain_template: '',
  tls_enabled: false,
  tls_issuer: 'letsencrypt',
  ingress_annotations: {} as Record<string, string>,
  warm_pool_size: 0,
  allow_egress: false,
  preview_secret: '',
};

/** `[scale.sandbox]` at its defaults with the orchestrator provider and a preview domain, `over` applied. */
export function orchestratorSettings(over: Partial<SandboxSettings> = {}): SandboxSettings {
  const defaults = Object.fromEntries(Object.entries(SCHEMA['scale.sandbox']).map(([k, v]) => [k, v.default])) as unknown as SandboxSettings;
  return { ...defaults, type: 'orchestrator', domain_template: '{sandbox_id}.preview.example.com', ...over };
}
