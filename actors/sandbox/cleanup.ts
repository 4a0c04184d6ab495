/**
 * Cleanup and reconciliation. Every `cleanup_interval_seconds` one member of
 * the cluster (the one that takes the window in the shared store) removes the
 * sandboxes older than `ttl_seconds` (counted from creation) and those that
 * failed, the provider's orphans (containers no record names) and folders no
 * record names. Every member, more often and at start, wakes the supervisor
 * of every active sandbox: one whose member died or whose process restarted
 * is activated again (somewhere) and adopts or removes what runs.
 */
import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxBinding } from './api.ts';
import { isActive } from './records.ts';
import { SANDBOX_KIND, type SupervisorMsg } from './supervisor.ts';

/** A folder without a record is left this long (a create in progress makes its folder after its record). */
const STRAY_FOLDER_MS = 5 * 60_000;

/** Wake the supervisor of every active sandbox; how many. */
export async function reconcileSandboxes(b: SandboxBinding): Promise<number> {
  let n = 0;
  for (const record of await b.env.records.list()) {
    if (!isActive(record.state)) continue;
    b.system.activate<SupervisorMsg, unknown>(SANDBOX_KIND, record.sandbox_id).tell({ t: 'check' } satisfies SupervisorMsg);
    n++;
  }
  return n;
}

export interface CleanupReport {
  /** Sandboxes removed: expired or failed. */
  removed: string[];
  /** Containers (or processes) of sandboxes no record names, removed. */
  orphans: string[];
  /** Folders no record names, removed. */
  folders: string[];
}

/** Remove what has expired, failed or is left over (see the module's comment); `now` for tests. */
export async function cleanupSandboxes(b: SandboxBinding, now = Date.now()): Promise<CleanupReport> {
  const { records, settings, runner } = b.env;
  const report: CleanupReport = { removed: [], orphans: [], folders: [] };
  const all = await records.list();
  const due = all.filter((r) => r.state === 'error' || now - Date.parse(r.created_at) >= settings.ttl_seconds * 1000);
  // A few at a time: a container engine is slow to remove many at once.
  for (let i = 0; i < due.length; i += 8) {
    await Promise.all(
      due.slice(i, i + 8).map(async (r) => {
        try {
          if (await b.system.activate<SupervisorMsg, unknown>(SANDBOX_KIND, r.sandbox_id).ask({ t: 'destroy' } satisfies SupervisorMsg, 120_000)) report.removed.push(r.sandbox_id);
        } catch (error) {
          b.env.log?.warn({ err: error, sandbox_id: r.sandbox_id }, 'an expired sandbox could not be removed (the next cleanup tries again)');
        }
      }),
    );
  }
  const known = new Set((await records.list()).map((r) => r.sandbox_id));
  if (runner.orphans && runner.removeOrphan) {
    // Only sandboxes whose folder is under this store's root: another svc on this host (another data folder) has its own.
    for (const id of (await runner.orphans(known)).filter((id) => existsSync(join(b.root, id)))) {
      await runner.removeOrphan(id).then(
        () => report.orphans.push(id),
        (error: unknown) => b.env.log?.warn({ err: error, sandbox_id: id }, 'an orphaned sandbox could not be removed'),
      );
    }
  }
  if (runner.sweep) {
    await runner.sweep(known, now).then(
      (removed) => report.orphans.push(...removed),
      (error: unknown) => b.env.log?.warn({ err: error }, "the provider's cleanup failed (the next window tries again)"),
    );
  }
  const names = await readdir(b.root).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith('sbx-') || known.has(name)) continue;
    const path = join(b.root, name);
    const s = await stat(path).catch(() => undefined);
    if (!s || now - s.mtimeMs < STRAY_FOLDER_MS) continue;
    await rm(path, { recursive: true, force: true }).then(() => report.folders.push(name), () => undefined);
  }
  if (report.removed.length + report.orphans.length + report.folders.length > 0) b.env.log?.info({ ...report }, 'sandbox cleanup');
  return report;
}

/**
 * Run the cleanup every `cleanup_interval_seconds` (when this member takes
 * the window) and the reconciliation every few checks; returns the stop.
 */
export function startSandboxCleanup(b: SandboxBinding): () => void {
  const { settings } = b.env;
  const intervalMs = settings.cleanup_interval_seconds * 1000;
  const reconcileMs = Math.min(intervalMs, Math.max(settings.check_interval_ms * 5, 1000));
  let stopped = false;
  const warn = (error: unknown, what: string) => b.env.log?.warn({ err: error }, what);
  void reconcileSandboxes(b).catch((error: unknown) => warn(error, 'the sandboxes of a previous run could not be reconciled (tried again shortly)'));
  const reconcile = setInterval(() => void reconcileSandboxes(b).catch((error: unknown) => warn(error, 'sandbox reconciliation failed')), reconcileMs);
  let running = false;
  const sweep = setInterval(() => {
    if (running || stopped) return;
    running = true;
    void (async () => {
      if (await b.env.records.claimWindow(Math.floor(Date.now() / intervalMs))) await cleanupSandboxes(b);
    })()
      .catch((error: unknown) => warn(error, 'the sandbox cleanup failed (the next window tries again)'))
      .finally(() => (running = false));
  }, intervalMs);
  reconcile.unref();
  sweep.unref();
  return () => {
    stopped = true;
    clearInterval(reconcile);
    clearInterval(sweep);
  };
}
