/**
 * A sandbox's supervisor: a virtual actor (kind {@link SANDBOX_KIND}, keyed
 * by sandbox id) — one per sandbox in a cluster, placed and leased like any
 * virtual actor. It starts the dev server, follows it to `running`, checks
 * every `check_interval_ms` that it still runs, restarts one that crashed
 * after it was ready (up to `max_restarts`, then `error`), and stops it.
 *
 * Every step reads the record first: the store, not the actor, is the truth
 * (a stop through another member or `svc sandbox stop` is seen at the next
 * step). A supervisor that moves (its member or thread went away) adopts what
 * runs: a dev server still alive is watched again, not started twice. A
 * supervisor deactivated (idle, moved, the process stopping) leaves the dev
 * server running: the next one adopts it, and the TTL bounds its life.
 */
import { rm } from 'node:fs/promises';
import type { ActorContext, ActorLogic, Props } from '../../kernel/index.ts';
import { isActive, publicInfo, type SandboxRecords } from './records.ts';
import type { Runner, SandboxInfo, SandboxRecord, SandboxSettings } from './types.ts';

export const SANDBOX_KIND = 'sandbox';

/** What a thread's supervisors (and its facade) share. */
export interface SandboxEnv {
  settings: SandboxSettings;
  records: SandboxRecords;
  runner: Runner;
  /** This host's name (a sandbox's files and processes are on the host that started it). */
  host: string;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void };
}

export type SupervisorMsg = { t: 'tick' } | { t: 'check' } | { t: 'stop'; reason?: string } | { t: 'destroy' };

/** How often a starting sandbox is checked for readiness (unless its provider asks for less). */
const READY_POLL_MS = 20;
/** The longest a create takes to prepare its sandbox (a large project streamed into a pod). */
const PREPARE_MS = 5 * 60_000;

class Supervisor implements ActorLogic<SupervisorMsg, unknown> {
  /** The dev server this activation started or adopted runs (as far as it knows). */
  private launched = false;
  /** When the current start began (the readiness timeout counts from it). */
  private startedAt = 0;

  constructor(
    private readonly id: string,
    private readonly env: SandboxEnv,
  ) {}

  preStart(ctx: ActorContext<SupervisorMsg>): void {
    ctx.timers.startSingle('tick', { t: 'tick' }, 0);
  }

  async receive(msg: SupervisorMsg, ctx: ActorContext<SupervisorMsg>): Promise<SandboxInfo | null | boolean> {
    switch (msg.t) {
      case 'tick':
      case 'check': {
        const record = await this.step(ctx);
        return record ? publicInfo(record) : null;
      }
      case 'stop': {
        const record = await this.env.records.get(this.id);
        if (!record) return null;
        return publicInfo(await this.stop(ctx, record, 'stopped', msg.reason));
      }
      case 'destroy': {
        const record = await this.env.records.get(this.id);
        if (record) {
          if (isActive(record.state) || record.state === 'error') await this.halt(record);
          await rm(record.dir, { recursive: true, force: true }).catch(() => undefined);
          await this.env.records.remove(this.id);
        }
        ctx.timers.cancel('tick');
        void ctx.stop();
        return record !== undefined;
      }
    }
  }

  private schedule(ctx: ActorContext<SupervisorMsg>, ms: number): void {
    ctx.timers.startSingle('tick', { t: 'tick' }, ms);
  }

  /** One look at the sandbox, and what follows from it; the record as it is after. */
  private async step(ctx: ActorContext<SupervisorMsg>): Promise<SandboxRecord | undefined> {
    const { records, runner, settings } = this.env;
    const record = await records.get(this.id);
    if (!record) {
      ctx.timers.cancel('tick');
      void ctx.stop();
      return undefined;
    }
    if (!isActive(record.state)) {
      ctx.timers.cancel('tick');
      return record;
    }
    if (record.host !== this.env.host) {
      // Its processes and files are on another host: nothing here can reach them.
      if (record.state === 'pending') return this.fail(ctx, record, `it was prepared on host ${record.host}, not on this one (${this.env.host})`);
      ctx.timers.cancel('tick');
      return record;
    }
    switch (record.state) {
      case 'pending':
        if (!record.prepared) {
          // Its create has not finished preparing it (files, port, pod): started by the create's own check, or given up once the create is surely dead.
          if (Date.now() - Date.parse(record.created_at) < PREPARE_MS) {
            this.schedule(ctx, 1000);
            return record;
          }
          return this.fail(ctx, record, 'its create did not finish (the member making it stopped)');
        }
        return this.start(ctx, record);
      case 'stopping':
        return this.stop(ctx, record, 'stopped', record.error);
      case 'starting':
      case 'running': {
        const alive = await runner.alive(record);
        if (!this.launched) {
          if (!alive) {
            // A previous supervisor started it and it is gone since: what was starting starts again, what ran counts as a crash.
            if (record.state === 'starting') return this.start(ctx, record);
            return this.crashed(ctx, record);
          }
          this.launched = true;
          this.startedAt = Date.now();
          const moved = await runner.adopt?.(record);
          // The relay had to move (its port was taken meanwhile): the record says where the preview is now.
          if (moved && (moved.url !== record.url || moved.relay_port !== record.relay_port)) await records.update(this.id, moved);
        }
        if (!alive) return record.state === 'starting' ? this.fail(ctx, record, await this.why(record, 'the dev server exited before it was ready')) : this.crashed(ctx, record);
        if (record.state === 'starting') {
          if (await runner.ready(record)) {
            const now = await records.update(this.id, { state: 'running', error: undefined }, ['starting']);
            this.schedule(ctx, settings.check_interval_ms);
            return now ?? (await records.get(this.id));
          }
          if (Date.now() - this.startedAt > settings.readiness_timeout_seconds * 1000) {
            return this.fail(ctx, record, `the dev server was not ready within ${settings.readiness_timeout_seconds} s (it prints "Server ready" and answers on its port)`);
          }
          this.schedule(ctx, this.env.runner.readyPollMs ?? READY_POLL_MS);
          return record;
        }
        this.schedule(ctx, settings.check_interval_ms);
        return record;
      }
    }
    return record;
  }

  private async start(ctx: ActorContext<SupervisorMsg>, record: SandboxRecord): Promise<SandboxRecord | undefined> {
    const { records, runner } = this.env;
    const starting = await records.update(this.id, { state: 'starting' }, ['pending', 'starting', 'running']);
    if (!starting) return records.get(this.id);
    try {
      const started = await runner.start(starting);
      const now = await records.update(this.id, started, ['starting']);
      this.launched = true;
      this.startedAt = Date.now();
      if (!now) {
        // Stopped while it started: take it down again.
        await this.halt({ ...starting, ...started });
        return records.get(this.id);
      }
      this.schedule(ctx, this.env.runner.readyPollMs ?? READY_POLL_MS);
      return now;
    } catch (error) {
      return this.fail(ctx, record, `the dev server could not be started: ${(error as Error).message}`);
    }
  }

  /** It ran and is gone: restarted while the policy allows; killed from outside, or too often: `error`. */
  private async crashed(ctx: ActorContext<SupervisorMsg>, record: SandboxRecord): Promise<SandboxRecord | undefined> {
    const exit = await this.env.runner.exitOf?.(record);
    if (exit?.signal && exit.signal !== 'SIGSEGV' && exit.signal !== 'SIGABRT') return this.fail(ctx, record, `the dev server was killed (${exit.signal}) from outside`);
    if (exit?.removed) return this.fail(ctx, record, 'its container was removed from outside');
    if (exit?.reason) return this.fail(ctx, record, exit.reason);
    if (record.restarts >= this.env.settings.max_restarts) return this.fail(ctx, record, `the dev server exited ${record.restarts + 1} times (max_restarts = ${this.env.settings.max_restarts})`);
    this.env.log?.warn({ sandbox_id: this.id, restarts: record.restarts + 1, ...(exit?.code !== undefined ? { exit_code: exit.code } : {}) }, 'sandbox dev server exited: restarting it');
    await this.env.runner.stop(record).catch(() => undefined);
    this.launched = false;
    const next = await this.env.records.update(this.id, { restarts: record.restarts + 1, error: `restarted after the dev server exited${exit?.code !== undefined ? ` (exit code ${exit.code})` : ''}` }, ['running', 'starting']);
    if (!next) return this.env.records.get(this.id);
    return this.start(ctx, next);
  }

  private async why(record: SandboxRecord, fallback: string): Promise<string> {
    const exit = await this.env.runner.exitOf?.(record);
    if (exit?.signal) return `${fallback} (killed by ${exit.signal})`;
    if (exit?.code !== undefined) return `${fallback} (exit code ${exit.code})`;
    return fallback;
  }

  /** Given up: `error`, nothing left running, its slot and port given back. */
  private async fail(ctx: ActorContext<SupervisorMsg>, record: SandboxRecord, reason: string): Promise<SandboxRecord | undefined> {
    this.env.log?.warn({ sandbox_id: this.id, reason }, 'sandbox failed');
    ctx.timers.cancel('tick');
    await this.halt(record);
    return (await this.env.records.update(this.id, { state: 'error', error: reason }, ['pending', 'starting', 'running', 'stopping'])) ?? this.env.records.get(this.id);
  }

  private async stop(ctx: ActorContext<SupervisorMsg>, record: SandboxRecord, state: 'stopped', reason: string | undefined): Promise<SandboxRecord> {
    ctx.timers.cancel('tick');
    if (!isActive(record.state)) return record;
    await this.env.records.update(this.id, { state: 'stopping' }, ['pending', 'starting', 'running', 'stopping']);
    await this.halt(record);
    return (await this.env.records.update(this.id, { state, ...(reason !== undefined ? { error: reason } : {}) }, ['stopping'])) ?? ((await this.env.records.get(this.id)) as SandboxRecord);
  }

  /** Nothing of it runs after this; its slot and its port are given back. */
  private async halt(record: SandboxRecord): Promise<void> {
    this.launched = false;
    if (record.host === this.env.host) {
      await this.env.runner.stop(record);
      await this.env.runner.release(record);
    }
    await this.env.records.releaseSlot(this.id);
    await this.env.records.releasePort(record.host, record.port, this.id);
  }
}

/** The props of the supervisor of sandbox `id`. */
export function supervisorProps(id: string, env: SandboxEnv): Props<SupervisorMsg, unknown> {
  // Transient: a supervisor that stops itself (its sandbox is gone) is done; one that crashed (a store outage) starts again.
  return { logic: () => new Supervisor(id, env), capacity: 1000, restart: 'transient' };
}
