/**
 * What `svc start --scale --dry-run` prints: the plan by component (what an
 * apply would send, the image, the URL, the warnings) and, with
 * `--show-yaml`, the exact multi-document YAML — Secret values redacted
 * unless `--show-secrets`. Rendering is pure: the same objects give the same
 * bytes.
 */
import { stringify } from 'yaml';
import { componentOf, type DeploySpec, type K8sObject } from './spec.ts';

/** What stands in for a Secret's value in the plan and the YAML. */
export const REDACTED = '<redacted>';

/**
 * The objects with every Secret value replaced by {@link REDACTED} (the keys stay).
 *
 * @example
 * redactSecrets(objects).find((o) => o.kind === 'Secret')?.stringData // { password: '<redacted>' }
 */
export function redactSecrets(objects: K8sObject[]): K8sObject[] {
  return objects.map((o) => {
    if (o.kind !== 'Secret') return o;
    const copy: K8sObject = { ...o };
    for (const field of ['stringData', 'data'] as const) {
      const values = o[field] as Record<string, string> | undefined;
      if (values) copy[field] = Object.fromEntries(Object.keys(values).map((k) => [k, REDACTED]));
    }
    return copy;
  });
}

/**
 * The multi-document YAML an apply would send, byte-stable for the same objects.
 *
 * @example
 * process.stdout.write(renderYaml(objects, { showSecrets: false }));
 */
export function renderYaml(objects: K8sObject[], options: { showSecrets: boolean }): string {
  const docs = options.showSecrets ? objects : redactSecrets(objects);
  // YAML 1.1 rules, as kubectl reads it: strings such as `no`, `on`, `y` or `1_000` are quoted, so they stay strings.
  return docs.map((o) => `---\n${stringify(o, { version: '1.1', lineWidth: 0, sortMapEntries: false, aliasDuplicateObjects: false })}`).join('');
}

/** The URL the app will be served at once deployed. */
export function servedUrl(spec: DeploySpec): string {
  if (spec.ingress.className !== '') return `http://${spec.ingress.domain || '<the address of the cluster\'s ingress controller>'}/ (through the ${spec.ingress.className} controller the cluster runs)`;
  return spec.ingress.domain !== '' ? `http://${spec.ingress.domain}:${spec.nodePort}/ (or http://${spec.ingress.domain}/ through a load balancer in front of node port ${spec.nodePort})` : `http://<node address>:${spec.nodePort}/`;
}

export interface PlanSummary {
  spec: DeploySpec;
  objects: K8sObject[];
  warnings: string[];
  /** How the image comes to be: built by this run, configured, or expected in the registry. */
  imageNote: string;
}

/**
 * The per-component plan, as printed.
 *
 * @example
 * process.stdout.write(planText({ spec, objects, warnings, imageNote: 'built and pushed by --build' }));
 */
export function planText(plan: PlanSummary): string {
  const { spec, objects } = plan;
  const lines: string[] = [];
  lines.push(`Plan for ${spec.app} in namespace ${spec.namespace} (dry run: nothing sent, nothing written)`);
  lines.push(`  image: ${spec.images.app} (${plan.imageNote})`);
  lines.push(`  url:   ${servedUrl(spec)}`);
  lines.push(`  docdb: ${spec.docdb.provision ? `${spec.docdb.engine === 'mongo' ? 'MongoDB' : 'PostgreSQL'}, provisioned on the first deploy (${spec.docdb.pvcSize} claim)` : spec.docdb.uri !== '' ? 'external ([scale.database] docdb_uri)' : 'none'}`);
  lines.push(`  kv:    ${spec.kv.provision ? `Redis, provisioned on the first deploy (${spec.kv.pvcSize} claim, append-only)` : spec.kv.url !== '' ? 'external ([scale.database] kv_url)' : 'none'}`);
  const groups = new Map<string, K8sObject[]>();
  for (const o of objects) {
    const c = componentOf(o);
    groups.set(c, [...(groups.get(c) ?? []), o]);
  }
  for (const [component, members] of groups) {
    lines.push(`  ${component}:`);
    for (const o of members) lines.push(`    ${`${o.kind}`.padEnd(26)} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}${describe(o, spec)}`);
  }
  // Every credential svc generates, by the Secret that keeps it (the manifests' own names).
  const secretsHolding = (value: string): string[] =>
    objects.filter((o) => o.kind === 'Secret' && Object.values((o.stringData ?? {}) as Record<string, string>).includes(value)).map((o) => o.metadata.name);
  const generated = [spec.docdb.password, spec.kv.password, spec.jwtSecret, spec.adminPassword, spec.monitoring.adminPassword, spec.monitoring.scrapeToken, spec.kv.dashboard.password, spec.docdb.dashboard.password]
    .filter((c) => c.generated)
    .flatMap((c) => secretsHolding(c.value));
  const names = [...new Set(generated)];
  if (names.length > 0) {
    lines.push(`  credentials generated once (random; kept in Secrets, read back on later deploys, never regenerated): ${names.join(', ')}`);
    lines.push(`    read one: kubectl -n ${spec.namespace} get secret ${names[0]} -o jsonpath='{.data}' (each value base64)`);
  }
  lines.push(`  ${objects.length} objects; --show-yaml prints them${objects.some((o) => o.kind === 'Secret') ? ' (Secret values redacted; --show-secrets shows them)' : ''}`);
  if (plan.warnings.length > 0) {
    lines.push('warnings:');
    for (const w of plan.warnings) lines.push(`  - ${w}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A few words on what an object does, where its kind alone does not say. */
function describe(o: K8sObject, spec: DeploySpec): string {
  const s = o.spec as Record<string, unknown> | undefined;
  if (o.kind === 'Deployment' || o.kind === 'StatefulSet') {
    const containers = ((s?.template as { spec?: { containers?: { image?: string }[] } })?.spec?.containers ?? []).map((c) => c.image).join(', ');
    return ` (${String(s?.replicas ?? 1)} × ${containers})`;
  }
  if (o.kind === 'HorizontalPodAutoscaler') return ` (${spec.replicas.min}–${spec.replicas.max} replicas at ${spec.replicas.cpuTarget}% CPU)`;
  if (o.kind === 'Service' && s?.type === 'NodePort') return ` (node port ${spec.nodePort})`;
  if (o.kind === 'Secret') return ` (keys: ${Object.keys((o.stringData ?? o.data ?? {}) as object).join(', ')})`;
  return '';
}
