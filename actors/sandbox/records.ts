/**
 * Sandbox records in the shared document store (the runtime's own
 * collections: SQLite on one node, PostgreSQL or MongoDB in a cluster), so
 * every member answers for every sandbox. Three things are claimed there by
 * inserting a document whose `_id` is the thing — an insert either wins or
 * meets the one that did, on every backend, whatever the races:
 * - a user's slots (`max_per_user` of them: `<n>:<user>`), held while a sandbox is active;
 * - a host's ports (`<host>:<port>`), held by the local sandbox that listens on it;
 * - a cleanup window (`<n>`: the n-th `cleanup_interval_seconds` since the epoch), taken by the one member that runs it.
 */
import type { DocDbStore, Document } from '../data/index.ts';
import type { SandboxInfo, SandboxRecord, SandboxState } from './types.ts';

const RECORDS = '_sandboxes';
const SLOTS = '_sandbox_slots';
const PORTS = '_sandbox_ports';
const WINDOWS = '_sandbox_cleanups';

/** States a sandbox is still alive in (it holds a slot and, local, a port). */
export const ACTIVE_STATES: readonly SandboxState[] = ['pending', 'starting', 'running', 'stopping'];

export function isActive(state: SandboxState): boolean {
  return ACTIVE_STATES.includes(state);
}

function duplicate(error: unknown): boolean {
  return (error as { code?: string }).code === 'DUPLICATE_KEY';
}

function toRecord(doc: Document | null): SandboxRecord | undefined {
  if (!doc) return undefined;
  const { _id, ...rest } = doc as Document & { _id: string };
  return { ...(rest as unknown as SandboxRecord), sandbox_id: _id };
}

/** What an app is answered: the record without where it runs. */
export function publicInfo(record: SandboxRecord): SandboxInfo {
  const { sandbox_id, user, project, state, url, type, created_at, updated_at, error, restarts } = record;
  return { sandbox_id, user, project, state, url, type, created_at, updated_at, ...(error !== undefined ? { error } : {}), restarts };
}

/**
 * @example
 * const records = new SandboxRecords(kvstore('svc', 'docdb', undefined, { runtimeCollections: true }));
 * await records.insert(record);
 */
export class SandboxRecords {
  constructor(private readonly db: DocDbStore) {}

  async get(id: string): Promise<SandboxRecord | undefined> {
    return toRecord(await this.db.findById(RECORDS, id));
  }

  /** Every record (a user's when `user` is given), oldest first. */
  async list(user?: string): Promise<SandboxRecord[]> {
    const docs = await this.db.find(RECORDS, user === undefined ? {} : { user });
    return docs
      .map((d) => toRecord(d) as SandboxRecord)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.sandbox_id.localeCompare(b.sandbox_id));
  }

  async insert(record: SandboxRecord): Promise<void> {
    const { sandbox_id, ...rest } = record;
    await this.db.insertOne(RECORDS, { _id: sandbox_id, ...rest } as unknown as Document);
  }

  /**
   * Set `fields` (and `updated_at`); with `ifState`, only while the record is
   * in one of those states (a compare-and-set: a stop that came first is not
   * overwritten by a late `running`). Answers the record as it is now, or
   * undefined when it is gone or was not in those states.
   */
  async update(id: string, fields: Partial<SandboxRecord>, ifState?: readonly SandboxState[]): Promise<SandboxRecord | undefined> {
    const set: Record<string, unknown> = { updated_at: new Date().toISOString() };
    const unset: Record<string, ''> = {};
    for (const [k, v] of Object.entries(fields)) {
      if (k === 'sandbox_id') continue;
      if (v === undefined) unset[k] = '';
      else set[k] = v;
    }
    const filter = ifState ? { _id: id, state: { $in: [...ifState] } } : { _id: id };
    const n = await this.db.updateOne(RECORDS, filter, Object.keys(unset).length > 0 ? { $set: set, $unset: unset } : { $set: set });
    if (n === 0) return undefined;
    return this.get(id);
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteById(RECORDS, id);
    await this.db.deleteMany(SLOTS, { sandbox_id: id });
    await this.db.deleteMany(PORTS, { sandbox_id: id });
  }

  /**
   * Take one of `user`'s `max` slots for `id`; false when all are held. A
   * slot whose sandbox is gone or no longer active is taken back first.
   */
  async claimSlot(user: string, id: string, max: number): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      for (let n = 0; n < max; n++) {
        try {
          await this.db.insertOne(SLOTS, { _id: `${n}:${user}`, sandbox_id: id, user });
          return true;
        } catch (error) {
          if (!duplicate(error)) throw error;
        }
      }
      if (!(await this.reclaimSlots(user))) return false;
    }
    return false;
  }

  /** Slots of `user` held by sandboxes that are gone or inactive, given back; whether any was. */
  private async reclaimSlots(user: string): Promise<boolean> {
    let freed = false;
    for (const slot of await this.db.find(SLOTS, { user })) {
      const holder = await this.get(String(slot.sandbox_id));
      if (holder && isActive(holder.state)) continue;
      if ((await this.db.deleteOne(SLOTS, { _id: slot._id as string, sandbox_id: slot.sandbox_id as string })) > 0) freed = true;
    }
    return freed;
  }

  async releaseSlot(id: string): Promise<void> {
    await this.db.deleteMany(SLOTS, { sandbox_id: id });
  }

  /** Hold `port` on `host` for `id`; false when another active sandbox holds it. */
  async claimPort(host: string, port: number, id: string): Promise<boolean> {
    const _id = `${host}:${port}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.db.insertOne(PORTS, { _id, sandbox_id: id });
        return true;
      } catch (error) {
        if (!duplicate(error)) throw error;
      }
      const held = await this.db.findById(PORTS, _id);
      if (!held) continue;
      const holder = await this.get(String(held.sandbox_id));
      if (holder && isActive(holder.state)) return false;
      await this.db.deleteOne(PORTS, { _id, sandbox_id: held.sandbox_id as string });
    }
    return false;
  }

  async releasePort(host: string, port: number, id: string): Promise<void> {
    await this.db.deleteOne(PORTS, { _id: `${host}:${port}`, sandbox_id: id });
  }

  /** Take cleanup window `n` (one member per window runs the cleanup); old windows are forgotten. */
  async claimWindow(n: number): Promise<boolean> {
    try {
      await this.db.insertOne(WINDOWS, { _id: String(n), n });
    } catch (error) {
      if (duplicate(error)) return false;
      throw error;
    }
    await this.db.deleteMany(WINDOWS, { n: { $lt: n - 10 } });
    return true;
  }
}
