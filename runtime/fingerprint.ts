/**
 * The app's fingerprint: its classes and their schemas as one short hash.
 * Members of a cluster whose fingerprints differ run different apps: they
 * share no partitions (a worker answers it to the `fingerprint` order).
 */
import { createHash } from 'node:crypto';
import { PARTITION_PROTOCOL } from '../actors/graph/index.ts';
import type { Registry } from '../actors/walker/index.ts';

/** The app's classes and their schemas (and svc's partition protocol), as one short hash: members whose apps differ share no partitions. */
export function appFingerprint(registry: Registry): string {
  // The form of the messages partitions take, too: a member that would read them otherwise (an older svc during a
  // rolling upgrade, which would run a walker without the hooks that travel with it) shares no partition with this one.
  const parts: string[] = [`protocol ${PARTITION_PROTOCOL}`];
  for (const [name, cls] of [...registry.archetypes].sort(([a], [b]) => a.localeCompare(b))) parts.push(`a ${name} ${JSON.stringify((cls as { has?: unknown }).has ?? null)}`);
  for (const [name, cls] of [...registry.walkers].sort(([a], [b]) => a.localeCompare(b))) parts.push(`w ${name} ${JSON.stringify((cls as { has?: unknown }).has ?? null)}`);
  for (const [name, def] of [...registry.functions].sort(([a], [b]) => a.localeCompare(b))) parts.push(`f ${name} ${JSON.stringify((def as { params?: unknown }).params ?? null)}`);
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 16);
}
