/**
 * Anchors to stored documents and back. Decoding never throws: a document
 * whose class cannot be resolved, whose body is corrupt or whose fields no
 * longer fit the schema comes back as a reason to quarantine it.
 */
import { Value } from 'typebox/value';
import {
  Anchor,
  type Access,
  FORMAT_VERSION,
  isAccessLevel,
  prepare,
  type Registry,
} from '../walker/index.ts';
import type { BodyForm, StoredDoc } from './store.ts';

interface Body {
  access: Access;
  context: Record<string, unknown>;
}

/**
 * The stored form of an anchor at its next version, its body as the store
 * takes it: JSON text, or (`object`) a copy of its own — the anchor's memory
 * changes in place after this, while the store may still hold the body.
 *
 * @example
 * const doc = encode(anchor, registry.module, store.bodyForm);
 */
export function encode(anchor: Anchor, module: string, form: BodyForm = 'text'): StoredDoc {
  const info = prepare(anchor.cls);
  const body: Body = { access: anchor.access, context: anchor.data };
  const doc: StoredDoc = {
    id: anchor.id,
    root: anchor.root,
    kind: anchor.kind,
    arch_module: module,
    arch_type: info.name,
    fingerprint: info.fingerprint,
    format_version: FORMAT_VERSION,
    version: anchor.version + 1,
    body: form === 'object' ? structuredClone(body) : JSON.stringify(body),
  };
  if (anchor.kind === 'edge') {
    doc.source = anchor.source ?? null;
    doc.target = anchor.target ?? null;
  }
  return doc;
}

export type Decoded = { anchor: Anchor } | { quarantine: string };

function validAccess(x: unknown): x is Access {
  if (typeof x !== 'object' || x === null) return false;
  const a = x as Access;
  return isAccessLevel(a.anyone) && typeof a.roots === 'object' && a.roots !== null && Object.values(a.roots).every(isAccessLevel);
}

export function decode(doc: StoredDoc, registry: Registry): Decoded {
  const cls = registry.resolve(doc.arch_type);
  if (!cls) return { quarantine: `unresolvable archetype ${doc.arch_module}.${doc.arch_type}` };
  if (doc.format_version > FORMAT_VERSION) return { quarantine: `format_version ${doc.format_version} is newer than this runtime (${FORMAT_VERSION})` };
  let body: Body;
  try {
    body = (typeof doc.body === 'string' ? JSON.parse(doc.body) : doc.body) as Body;
  } catch (error) {
    return { quarantine: `corrupt body: ${(error as Error).message}` };
  }
  if (typeof body !== 'object' || body === null || typeof body.context !== 'object' || body.context === null || !validAccess(body.access)) {
    return { quarantine: 'corrupt body: missing context or access' };
  }
  const info = prepare(cls);
  const isNode = doc.kind === 'node';
  if (info.kind !== doc.kind) return { quarantine: `${doc.arch_type} is now a ${info.kind}, the document is a ${doc.kind}` };
  let context = body.context;
  if (doc.fingerprint !== info.fingerprint) {
    // The schema changed since the document was written: fill new defaults, then it must fit.
    context = Value.Default(info.schema, context) as Record<string, unknown>;
  }
  if (!info.check(context)) return { quarantine: `context does not fit ${info.name}'s schema` };
  if (!isNode && (typeof doc.source !== 'string' || typeof doc.target !== 'string')) return { quarantine: 'corrupt edge: missing source or target' };
  return {
    anchor: new Anchor(doc.id, doc.kind, cls, doc.root, doc.version, body.access, context, [], doc.source ?? undefined, doc.target ?? undefined),
  };
}
