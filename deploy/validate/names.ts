/**
 * The names Kubernetes accepts, as its API server checks them: DNS-1123
 * labels and subdomains, label keys and values, port names, configuration
 * keys. Each check answers undefined when the name is fine, else why not.
 */

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

/**
 * Whether `name` is a DNS-1123 label: at most 63 lower-case alphanumerics or
 * `-`, starting and ending alphanumeric (a Namespace's, a Service's name).
 *
 * @example
 * isDnsLabel('my-app'); // true
 * isDnsLabel('My_App'); // false
 */
export function isDnsLabel(name: string): boolean {
  return name.length <= 63 && LABEL.test(name);
}

/**
 * Whether `name` is a DNS-1123 subdomain: at most 253 characters, dot-separated
 * DNS-1123 labels (most objects' names).
 *
 * @example
 * isDnsSubdomain('my-app.v1'); // true
 * isDnsSubdomain('my-app.'); // false
 */
export function isDnsSubdomain(name: string): boolean {
  return name.length <= 253 && SUBDOMAIN.test(name);
}

/** Why `name` is not a DNS-1123 label. */
export function dnsLabelProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be a string (got ${JSON.stringify(name)})`;
  if (isDnsLabel(name)) return undefined;
  if (name.length > 63) return `${JSON.stringify(name)} is ${name.length} characters: a DNS-1123 label has at most 63`;
  return `${JSON.stringify(name)} is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit${name.includes('.') ? ', no dots' : ''})`;
}

/** Why `name` is not a DNS-1123 subdomain. */
export function dnsSubdomainProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be a string (got ${JSON.stringify(name)})`;
  if (isDnsSubdomain(name)) return undefined;
  if (name.length > 253) return `${JSON.stringify(name.slice(0, 40))}... is ${name.length} characters: a DNS-1123 subdomain has at most 253`;
  return `${JSON.stringify(name)} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)`;
}

/** Why `name` is not a valid name for an object addressed by path segment (RBAC roles and bindings: anything but `.`, `..`, `/` and `%`). */
export function pathSegmentProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return `must be a non-empty string (got ${JSON.stringify(name)})`;
  if (name === '.' || name === '..') return `${JSON.stringify(name)} may not be a name`;
  if (/[/%]/.test(name)) return `${JSON.stringify(name)} may not contain '/' or '%'`;
  return undefined;
}

/** Why `key` is not a label (or annotation) key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return `key ${JSON.stringify(key)}: the prefix ${JSON.stringify(prefix)} is not a DNS-1123 subdomain`;
  if (name.length === 0 || name.length > 63 || !LABEL_VALUE.test(name)) {
    return `key ${JSON.stringify(key)} is not a qualified name (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, after an optional DNS prefix and '/')`;
  }
  return undefined;
}

/** Why `value` is not a label value: at most 63 letters, digits, `-`, `_` or `.`, starting and ending alphanumeric, or empty. */
export function labelValueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `a label value must be a string (got ${JSON.stringify(value)})`;
  if (value.length > 63) return `value ${JSON.stringify(value.slice(0, 40))}... is ${value.length} characters: a label value has at most 63`;
  if (!LABEL_VALUE.test(value)) return `value ${JSON.stringify(value)} is not a label value (letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty)`;
  return undefined;
}

/** Why `name` is not a container port name (IANA_SVC_NAME: at most 15 lower-case letters, digits and `-`, at least one letter, no `--`). */
export function portNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be a string (got ${JSON.stringify(name)})`;
  if (name.length > 15) return `${JSON.stringify(name)} is ${name.length} characters: a port name has at most 15`;
  if (!IANA_SVC_NAME.test(name) || name.includes('--') || !/[a-z]/.test(name)) {
    return `${JSON.stringify(name)} is not a port name (lower-case letters, digits and '-', at least one letter, no '--', starting and ending with a letter or digit)`;
  }
  return undefined;
}

/** Why `key` is not a ConfigMap or Secret key. */
export function configKeyProblem(key: string): string | undefined {
  if (key.length > 253 || !CONFIG_KEY.test(key) || key === '.' || key === '..') return `key ${JSON.stringify(key)} is not a valid ConfigMap/Secret key (letters, digits, '-', '_' and '.', at most 253)`;
  return undefined;
}
