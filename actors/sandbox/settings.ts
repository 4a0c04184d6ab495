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
  if (settings.type === 'orchestrator') problems.push('[scale.sandbox] type = "orchestrator" (sandboxes as Kubernetes pods) is not available yet: use "local" or "container"');
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
