/**
 * An anchor is the persistent identity of a node or edge: its id, owner root,
 * access, version, fields and (for nodes) incident edges. Archetype instances
 * (`Todo`, `Likes`) are thin views over an anchor; their fields read and write
 * `anchor.data` through accessors, so every write is seen.
 */
import type { Access } from './access.ts';
import type { ArchetypeClass } from './archetype.ts';
import type { Archetype } from './archetype.ts';

export type AnchorKind = 'node' | 'edge';

/** The stored form of an anchor (what a store keeps; see `actors/graph`). */
export interface AnchorDoc {
  id: string;
  root: string;
  kind: AnchorKind;
  arch_module: string;
  arch_type: string;
  fingerprint: string;
  format_version: number;
  version: number;
  access: Access;
  context: Record<string, unknown>;
  /** Edges: endpoint node ids (a node's edges are found through them, not kept in the node). */
  source?: string;
  target?: string;
}

export const FORMAT_VERSION = 1;

/** Where an anchor lives: the partition (or a run's view of a foreign partition) that owns its copy. */
export interface AnchorHome {
  /** The walker run under way there, if any: writes are allowed only inside one. */
  readonly currentRun: AnchorRun | null;
}

/** What an anchor needs from the run that touches it (implemented by `WalkerRun`). */
export interface AnchorRun {
  /** Before the first change in this run: check the caller may write, and keep an undo copy. */
  beforeWrite(anchor: Anchor, level: 'write' | 'connect'): void;
  /** A field holding an object or array was read: it may be changed in place. */
  touchedObject(anchor: Anchor): void;
}

export class Anchor {
  /** The archetype view, created on first use. */
  obj: Archetype | undefined = undefined;
  home: AnchorHome | null = null;
  /** Never persisted yet. */
  isNew: boolean;
  deleted = false;
  /** Owned by another partition than the one whose run holds this copy. */
  foreign = false;
  /**
   * Nodes: whether `edges` holds every incident edge. Stored nodes load their
   * edges on first traversal (edges are their own documents); new nodes have none.
   */
  edgesLoaded: boolean;

  constructor(
    public id: string,
    public kind: AnchorKind,
    public cls: ArchetypeClass,
    public root: string,
    public version: number,
    public access: Access,
    public data: Record<string, unknown>,
    public edges: string[],
    public source: string | undefined,
    public target: string | undefined,
  ) {
    this.isNew = version === 0;
    this.edgesLoaded = this.isNew || kind === 'edge';
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
let pool = new Uint8Array(0);
let poolAt = 0;
let lastMs = 0;
let counter = 0;

/**
 * A 32-hex-char id: 48 bits of milliseconds, a 16-bit counter, 64 random
 * bits. Ids made later sort later, so stores append to their indexes
 * instead of splitting pages at random (3-4x faster inserts in SQLite).
 */
export function newId(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    counter = 0;
  } else {
    counter = (counter + 1) & 0xffff;
  }
  if (poolAt + 8 > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(4096));
    poolAt = 0;
  }
  let random = '';
  for (let i = 0; i < 8; i++) random += HEX[pool[poolAt++] as number];
  return ms.toString(16).padStart(12, '0') + counter.toString(16).padStart(4, '0') + random;
}

const ID_RE = /^[0-9a-f]{32}$/;

export function isAnchorId(x: unknown): x is string {
  return typeof x === 'string' && ID_RE.test(x);
}
