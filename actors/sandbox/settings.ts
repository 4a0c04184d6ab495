/**
 * `[scale.sandbox]` checked at start (the config loader checked the types):
 * quantities that parse, a port pool that fits, a provider that can run here.
 */
import { sandboxError } from './errors.ts';
import { parseCpu, parseQuantity } from './isolation.ts';
import type { Runner, SandboxSettings } from './types.ts';

/** Bytes of a Kubernetes quantity (`512Mi`, `2Gi`, `500M`); NaN when it is not one. */
export function bytesOf(quantity: string): number {
  try {
    return parseQuantity(quantity);
  } catch {
    return Number.NaN;
  }
}

/** Cores of a Kubernetes CPU quantity (`500m` = 0.5, `2` = 2); NaN when it is not one. */
export function coresOf(quantity: string): number {
  try {
    return parseCpu(quantity);
  } catch {
    return Number.NaN;
  }
}

/** Every problem of `settings`, in words (empty: none). */
export function sandboxSettingsProblems(settings: SandboxSettings): string[] {
  const problems: string[] = [];
  if (settings.type === 'orchestrator') problems.push(...orchestratorProblems(settings));
  for (const key of ['memory_limit', 'storage_limit'] as const) {
    const bytes = bytesOf(settings[key]);
    if (!(bytes >= 1024 * 1024)) problems.push(`[scale.sandbox] ${key} must be a quantity of at least 1Mi (like 512Mi or 2Gi), got ${JSON.stringify(settings[key])}`);
  }
  const cores = coresOf(settings.cpu_limit);
  if (!(cores > 0)) problems.push(`[scale.sandbox] cpu_limit must be a CPU quantity above 0 (like 500m or 2), got ${JSON.stringify(settings.cpu_limit)}`);
  const last = settings.port_base + (settings.port_count - 1) * settings.port_stride;
  if (last > 65535) problems.push(`[scale.sandbox] the port pool ends past 65535 (port_base ${settings.port_base} + (port_count ${settings.port_count} - 1) × port_stride ${settings.port_stride} = ${last})`);
  return problems;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The orchestrator keys: a namespace Kubernetes takes, a preview host per sandbox when previews need one. */
function orchestratorProblems(settings: SandboxSettings): string[] {
  const problems: string[] = [];
  if (!DNS_LABEL.test(settings.namespace)) problems.push(`[scale.sandbox] namespace must be a DNS label (lowercase letters, digits, dashes; at most 63), got ${JSON.stringify(settings.namespace)}`);
  const template = settings.domain_template;
  if (template && !template.includes('{sandbox_id}')) problems.push(`[scale.sandbox] domain_template must hold {sandbox_id} (like "{sandbox_id}.preview.example.com"), got ${JSON.stringify(template)}`);
  if (template && !/^[a-z0-9.{}_-]+$/.test(template)) problems.push(`[scale.sandbox] domain_template is a host name with {sandbox_id} in it (lowercase, no scheme or path), got ${JSON.stringify(template)}`);
  if (!template && (settings.proxy_mode || settings.tls_enabled)) problems.push(`[scale.sandbox] ${settings.proxy_mode ? 'proxy_mode' : 'tls_enabled'} needs domain_template (the host of each preview, like "{sandbox_id}.preview.example.com")`);
  if (settings.tls_enabled && !settings.tls_issuer) problems.push('[scale.sandbox] tls_enabled needs tls_issuer (the cert-manager ClusterIssuer)');
  for (const [key, value] of Object.entries(settings.ingress_annotations ?? {})) {
    if (typeof value !== 'string') problems.push(`[scale.sandbox.ingress_annotations] ${key} must be a string, got ${JSON.stringify(value)}`);
  }
  if (settings.preview_secret && Buffer.byteLength(settings.preview_secret) < 32) problems.push('[scale.sandbox] preview_secret must be at least 32 bytes (it signs preview tokens)');
  return problems;
}

/** Throws the problems of `settings` as one error (`svc start` stops with it). */
export function assertSandboxSettings(settings: SandboxSettings): void {
  const problems = sandboxSettingsProblems(settings);
  if (problems.length > 0) throw new Error(problems.join('\n'));
}

/** A runner for sandboxes turned off: every call says so. */
export function disabledRunner(settings: SandboxSettings): Runner {
  const off = async (): Promise<never> => {
    throw sandboxError('SANDBOX_DISABLED');
  };
  return { type: settings.type === 'container' ? 'container' : 'local', prepare: off, start: off, ready: off, alive: off, stop: off, release: off, exec: off, logs: off };
}
