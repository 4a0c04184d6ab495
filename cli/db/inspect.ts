/**
 * What `svc db inspect` and `svc db recover-all` do with an app: load its
 * entry module into a {@link Registry} (with the store's class-rename
 * aliases), then decode stored documents against it exactly as a partition
 * does when it loads them ({@link decode}) — so `inspect` tells which
 * documents would go to quarantine and why, and `recover-all` moves back
 * those of the quarantine that decode now.
 */
import { existsSync } from 'node:fs';
import { basename, extname, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decode, type AnchorStore } from '../../actors/graph/index.ts';
import { prepare, Registry, type ArchetypeClass } from '../../actors/walker/index.ts';
import type { Progress } from '../progress.ts';
import { DbError } from './stores.ts';

/**
 * The app's classes, as a registry. The module is imported in this process
 * (TypeScript through tsx, as the `svc` command runs); `svc start` bundles the
 * same module for its worker threads, and both see the same classes.
 *
 * @example
 * const registry = await loadApp('app.ts');
 */
export async function loadApp(entry: string): Promise<Registry> {
  const path = resolve(entry);
  if (!existsSync(path)) throw new DbError(`entry file not found: ${entry}`);
  if (!['.ts', '.mts', '.js', '.mjs'].includes(extname(path))) throw new DbError(`the entry file must be a .ts, .mts, .js or .mjs module: ${entry}`);
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw new DbError(`cannot load ${entry}: ${((error as Error).message ?? String(error)).split('\n')[0]}`);
  }
  const moduleName = relative(process.cwd(), path).replace(/\.[mc]?[jt]s$/, '') || basename(path);
  try {
    return Registry.fromModule(exports, moduleName);
  } catch (error) {
    throw new DbError(`${entry}: ${(error as Error).message}`);
  }
}

/** Merge the store's aliases into the registry (as `Graph.open` does); resolves to them. */
export async function withAliases(registry: Registry, store: AnchorStore): Promise<[string, string][]> {
  const aliases = await store.aliases();
  for (const [from, to] of aliases) registry.alias(from, to);
  return aliases;
}

/** A reason, and how many documents have it (with a few of their ids). */
export interface ReasonCount {
  reason: string;
  count: number;
  ids: string[];
}

export interface TypeReport {
  /** The stored `arch_type`. */
  type: string;
  kind: string;
  documents: number;
  /** Documents per stored schema fingerprint. */
  fingerprints: Record<string, number>;
  /** With an app: the class the type resolves to (after aliases), its fingerprint; null when none. */
  resolves_to?: { class: string; fingerprint: string } | null;
  /** With an app: how many decode (they load). */
  decodable?: number;
  /** With an app: those that would go to quarantine, by reason. */
  failing?: ReasonCount[];
}

export interface InspectReport {
  store: string;
  /** The app decoded against (null: none given, decoding not checked). */
  app: string | null;
  documents: number;
  types: TypeReport[];
  /** With an app: how many documents would go to quarantine on load. */
  would_quarantine: number | null;
  aliases: [from: string, to: string][];
  quarantined: number;
  /** The quarantine by reason. */
  quarantine_reasons: ReasonCount[];
}

/** Ids kept per reason. */
const SAMPLE = 5;

function count(list: Map<string, ReasonCount>, reason: string, id: string): void {
  let entry = list.get(reason);
  if (!entry) list.set(reason, (entry = { reason, count: 0, ids: [] }));
  entry.count++;
  if (entry.ids.length < SAMPLE) entry.ids.push(id);
}

function byCount(list: Map<string, ReasonCount>): ReasonCount[] {
  return [...list.values()].sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/**
 * Every document of the store by type, decoded against the app when one is given.
 *
 * @example
 * const report = await inspectStore(store, { label, registry, app: 'app.ts', progress });
 */
export async function inspectStore(
  store: AnchorStore,
  options: { label: string; registry?: Registry; app?: string; aliases: [string, string][]; progress: (label: string, total: number | undefined) => Progress; batch?: number },
): Promise<InspectReport> {
  if (typeof store.scan !== 'function') throw new DbError(`the ${store.kind} store at ${options.label} cannot list its documents (this backend lacks scan)`);
  const registry = options.registry;
  const types = new Map<string, TypeReport & { reasons: Map<string, ReasonCount> }>();
  const progress = options.progress('inspect documents', await store.count());
  let documents = 0;
  let failing = 0;
  for (let next = 0; ; ) {
    const page = await store.scan(next, options.batch ?? 1000);
    if (page.docs.length === 0) break;
    next = page.next;
    for (const doc of page.docs) {
      documents++;
      let t = types.get(doc.arch_type);
      if (!t) {
        t = { type: doc.arch_type, kind: doc.kind, documents: 0, fingerprints: {}, reasons: new Map() };
        if (registry) {
          const cls: ArchetypeClass | undefined = registry.resolve(doc.arch_type);
          t.resolves_to = cls ? { class: cls.name, fingerprint: prepare(cls).fingerprint } : null;
          t.decodable = 0;
        }
        types.set(doc.arch_type, t);
      }
      t.documents++;
      t.fingerprints[doc.fingerprint] = (t.fingerprints[doc.fingerprint] ?? 0) + 1;
      if (registry) {
        const decoded = decode(doc, registry);
        if ('anchor' in decoded) t.decodable = (t.decodable ?? 0) + 1;
        else {
          failing++;
          count(t.reasons, decoded.quarantine, doc.id);
        }
      }
    }
    progress.add(page.docs.length);
  }
  progress.done();
  const quarantine = await store.quarantined();
  const reasons = new Map<string, ReasonCount>();
  for (const q of quarantine) count(reasons, q.reason, q.id);
  return {
    store: options.label,
    app: options.app ?? null,
    documents,
    types: [...types.values()]
      .sort((a, b) => b.documents - a.documents || a.type.localeCompare(b.type))
      .map(({ reasons: r, ...t }) => (registry ? { ...t, failing: byCount(r) } : t)),
    would_quarantine: registry ? failing : null,
    aliases: options.aliases,
    quarantined: quarantine.length,
    quarantine_reasons: byCount(reasons),
  };
}

export interface RecoverReport {
  store: string;
  app: string;
  recovered: { id: string; type: string }[];
  remaining: { id: string; type: string; reason: string }[];
}

/**
 * Move back every quarantined document that decodes against the app now
 * (after an alias or a fix of its class), as `Graph.recoverAll` does.
 *
 * @example
 * const { recovered, remaining } = await recoverAll(store, registry, { label, app, progress });
 */
export async function recoverAll(store: AnchorStore, registry: Registry, options: { label: string; app: string; progress: (label: string, total: number | undefined) => Progress }): Promise<RecoverReport> {
  const entries = await store.quarantined();
  const progress = options.progress('recover quarantined documents', entries.length);
  const recovered: RecoverReport['recovered'] = [];
  const remaining: RecoverReport['remaining'] = [];
  for (const entry of entries) {
    const decoded = decode(entry, registry);
    if ('anchor' in decoded && (await store.restore(entry.id))) recovered.push({ id: entry.id, type: entry.arch_type });
    else remaining.push({ id: entry.id, type: entry.arch_type, reason: 'quarantine' in decoded ? decoded.quarantine : entry.reason });
    progress.add(1);
  }
  progress.done();
  return { store: options.label, app: options.app, recovered, remaining };
}
