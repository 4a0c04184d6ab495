/**
 * `sandboxes()`: the provider an app codes against (README *Sandboxes*).
 * `svc start` binds each serving thread's (its supervisors placed across
 * the process's workers, or the cluster's members); outside a runtime — a
 * script, a test — one is made from the current folder's `svc.toml` and the
 * environment, its supervisors in this process.
 */
import { randomBytes } from 'node:crypto';
import { cp, lstat, mkdir, realpath, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { ActorSystem, type ActorRef } from '../../kernel/index.ts';
import { kvstore } from '../data/index.ts';
import { sandboxError } from './errors.ts';
import { chownTree } from './isolation.ts';
import { disabledRunner } from './settings.ts';
import { appDir } from './project.ts';
import { checkPath, deleteProjectFile, listProjectFiles, MAX_FILE_BYTES, readProjectFile, writeProjectFile } from './paths.ts';
import { signPreviewToken } from './preview-token.ts';
import { isActive, publicInfo, SandboxRecords } from './records.ts';
import { SANDBOX_KIND, type SandboxEnv, supervisorProps, type SupervisorMsg } from './supervisor.ts';
import type { ExecResult, Runner, SandboxInfo, SandboxPaths, SandboxRecord, SandboxSettings } from './types.ts';

/** A thread's sandboxes: its actor system (where supervisors are activated from) and their shared environment. */
export interface SandboxBinding {
  system: ActorSystem;
  env: SandboxEnv;
  /** Where sandbox folders are made. */
  root: string;
}

/** What `create` takes. `files`: relative path → content, or a folder to copy. */
export interface CreateSandbox {
  user: string;
  project: string;
  files?: Record<string, string | Uint8Array> | string;
}

export interface ExecCommandOptions {
  /** Seconds (default 30): past it the command and what it started are killed, and the call fails with SANDBOX_TIMEOUT. */
  timeout?: number;
  /** Cancel: the command is killed. */
  signal?: AbortSignal;
}

/** What the streaming form yields: output as it comes, then the exit code. */
export type CommandChunk = { type: 'stdout' | 'stderr'; data: string } | { type: 'exit'; exit_code: number };

/** The longest a stop, destroy or check may take (a container engine can be slow). */
const ASK_MS = 120_000;
/** The longest a command may run (a day). */
const MAX_TIMEOUT_S = 86_400;
/** Most bytes of stdout and of stderr kept by `execCommand` (the streaming form has no cap). */
const OUTPUT_CAP = 8 * 1024 * 1024;

const bindings: SandboxBinding[] = [];
let fallback: SandboxBinding | undefined;
let loadFallback: (() => { settings: SandboxSettings; dataDir: string; projectRoot: string }) | undefined;
let makeRunner: ((settings: SandboxSettings, records: SandboxRecords, host: string, paths: SandboxPaths | undefined) => Runner) | undefined;

/** How a runner is made for the settings (the room's index registers it: it knows the providers); `paths`: svc's folders, hidden from sandboxes. */
export function setRunnerFactory(factory: (settings: SandboxSettings, records: SandboxRecords, host: string, paths: SandboxPaths | undefined) => Runner): void {
  makeRunner = factory;
}

/** How the settings and svc's folders are read outside a runtime (the runtime room registers it: it owns the config loader). */
export function setSandboxFallback(load: () => { settings: SandboxSettings; dataDir: string; projectRoot: string }): void {
  loadFallback = load;
}

/** Where sandbox folders live for these settings. */
export function sandboxRoot(settings: SandboxSettings, dataDir: string): string {
  return settings.root ? resolve(settings.root) : join(dataDir, 'sandboxes');
}

/** Define the supervisors' kind on `system` (placement and lease as the caller's runtime places actors). */
export function defineSandboxKind(system: ActorSystem, env: SandboxEnv, spec: { placement?: Parameters<ActorSystem['defineKind']>[1]['placement']; lease?: Parameters<ActorSystem['defineKind']>[1]['lease'] } = {}): void {
  system.defineKind(SANDBOX_KIND, {
    props: (id) => supervisorProps(id, env),
    // An inactive sandbox's supervisor goes away; an active one ticks, so it stays.
    idleAfterMs: 60_000,
    ...(spec.placement ? { placement: spec.placement } : {}),
    ...(spec.lease ? { lease: spec.lease } : {}),
  });
}

/** The environment of this process's sandboxes: records in the runtime's document store, the provider's runner; `paths`: svc's folders (hidden from sandboxes). */
export function sandboxEnv(settings: SandboxSettings, log?: SandboxEnv['log'], paths?: SandboxPaths): SandboxEnv {
  if (!makeRunner) throw new Error('no sandbox runner factory registered');
  const records = new SandboxRecords(kvstore('svc', 'docdb', undefined, { runtimeCollections: true }));
  const runner = makeRunner(settings, records, hostname(), paths);
  // Sandboxes that live off this machine (pods) are every member's to reach: one host name for all.
  return { settings, records, runner, host: runner.host ?? hostname(), ...(log ? { log } : {}) };
}

/** The environment of sandboxes turned off (`[scale.sandbox] enabled = false`): every call answers SANDBOX_DISABLED. */
export function disabledEnv(settings: SandboxSettings): SandboxEnv {
  return { settings, records: new SandboxRecords(kvstore('svc', 'docdb', undefined, { runtimeCollections: true })), runner: disabledRunner(settings), host: hostname() };
}

/** Bind this thread's sandboxes; returns the unbinding. */
export function bindSandboxes(binding: SandboxBinding): () => void {
  bindings.push(binding);
  return () => {
    const i = bindings.lastIndexOf(binding);
    if (i >= 0) bindings.splice(i, 1);
  };
}

/** The binding in force on this thread (the runtime's, else the current folder's). */
export function currentSandboxes(): SandboxBinding {
  return current();
}

function current(): SandboxBinding {
  const bound = bindings[bindings.length - 1];
  if (bound) return bound;
  if (!fallback) {
    if (!loadFallback) throw sandboxError('SANDBOX_UNAVAILABLE', 'sandboxes() outside svc start needs the svc package entry (import from "svc")');
    const { settings, dataDir, projectRoot } = loadFallback();
    const system = new ActorSystem({ askTimeoutMs: ASK_MS });
    const env = sandboxEnv(settings, undefined, { dataDir, projectRoot });
    defineSandboxKind(system, env);
    fallback = { system, env, root: sandboxRoot(settings, dataDir) };
  }
  return fallback;
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 128 || /[\0-\x1f\x7f]/.test(value)) {
    throw sandboxError('SANDBOX_INVALID', `${what} is a non-empty string of at most 128 characters without control characters, got ${shown(value)}`);
  }
  return value;
}

/** Copy a folder's files in (its links are copied as links: the path checks refuse any that points out). */
async function copyFolder(from: string, to: string, root: string): Promise<void> {
  const stat = await lstat(from).catch(() => undefined);
  if (!stat?.isDirectory()) throw sandboxError('SANDBOX_INVALID', `files: ${shown(from)} is not a folder`);
  // Copied as svc's own user: never a folder holding the sandboxes (nor svc's data beside them), nor one inside them.
  const real = await realpath(from);
  const sandboxes = await realpath(root).catch(() => resolve(root));
  // The default layout keeps the sandboxes in the data folder (`<data>/sandboxes`): that folder is svc's too.
  const data = basename(sandboxes) === 'sandboxes' ? dirname(sandboxes) : sandboxes;
  const inside = (path: string, folder: string) => path === folder || path.startsWith(folder + sep);
  if (inside(sandboxes, real) || inside(data, real) || inside(real, data)) {
    throw sandboxError('SANDBOX_INVALID', 'files: this folder holds (or is inside) svc\'s data folder or its sandboxes: copy a project folder instead');
  }
  await cp(from, to, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.split(/[\\/]/).includes('.git') });
}


/**
 * The sandboxes of this runtime's provider (`[scale.sandbox] type`).
 *
 * @example
 * const box = await sandboxes().create({ user: 'ada', project: 'blog', files: { 'package.json': pkg, 'server.js': code } });
 * // poll get(box.sandbox_id) until state is 'running', then send the user to box.url
 * const { stdout } = await sandboxes().execCommand(box.sandbox_id, 'ls');
 */
export class Sandboxes {
  private get b(): SandboxBinding {
    return current();
  }

  /** The provider in use: `local` or `container`. */
  get type(): string {
    return this.b.env.runner.type;
  }

  private supervisor(id: string): ActorRef<SupervisorMsg, unknown> {
    return this.b.system.activate<SupervisorMsg, unknown>(SANDBOX_KIND, id);
  }

  private enabled(): SandboxBinding {
    const b = this.b;
    if (!b.env.settings.enabled) throw sandboxError('SANDBOX_DISABLED');
    return b;
  }

  private async record(id: unknown): Promise<SandboxRecord> {
    if (typeof id !== 'string' || id === '') throw sandboxError('SANDBOX_INVALID', `a sandbox id is a non-empty string, got ${shown(id)}`);
    const record = await this.enabled().env.records.get(id);
    if (!record) throw sandboxError('SANDBOX_NOT_FOUND', `no sandbox ${shown(id)}`);
    return record;
  }

  /** The record, on this host (its files and processes are here). */
  private async here(id: unknown): Promise<SandboxRecord> {
    const record = await this.record(id);
    if (record.host !== this.b.env.host) throw sandboxError('SANDBOX_UNAVAILABLE', `sandbox ${record.sandbox_id} runs on host ${record.host}: its files, commands and logs are reached from a member on that host`);
    return record;
  }

  /**
   * A new sandbox for `user`'s `project`, with `files`. Answers at once
   * (`pending`); follow it with `get` until `running` (or `error`).
   */
  async create(request: CreateSandbox): Promise<SandboxInfo> {
    const b = this.enabled();
    if (!request || typeof request !== 'object') throw sandboxError('SANDBOX_INVALID', 'create({ user, project, files })');
    const user = checkName(request.user, 'user');
    const project = checkName(request.project, 'project');
    const files = request.files ?? {};
    if (typeof files !== 'string' && (typeof files !== 'object' || Array.isArray(files))) throw sandboxError('SANDBOX_INVALID', 'files is a record of relative path to content, or a folder');
    if (typeof files !== 'string') {
      for (const [path, content] of Object.entries(files)) {
        checkPath(path);
        if (typeof content !== 'string' && !(content instanceof Uint8Array)) throw sandboxError('SANDBOX_INVALID', `files[${shown(path)}] is a string or bytes`);
      }
    }
    const { env } = b;
    const id = `sbx-${randomBytes(8).toString('hex')}`;
    if (!(await env.records.claimSlot(user, id, env.settings.max_per_user))) {
      throw sandboxError('SANDBOX_LIMIT', `user ${shown(user)} already has ${env.settings.max_per_user} active sandboxes (max_per_user): stop or destroy one first`);
    }
    const dir = join(b.root, id);
    const now = new Date().toISOString();
    let record: SandboxRecord = { sandbox_id: id, user, project, state: 'pending', url: '', type: env.runner.type, created_at: now, updated_at: now, restarts: 0, host: env.host, dir, port: 0 };
    let inserted = false;
    try {
      await env.records.insert(record);
      inserted = true;
      const app = appDir(record);
      await mkdir(app, { recursive: true });
      if (typeof files === 'string') await copyFolder(resolve(files), app, b.root);
      else for (const [path, content] of Object.entries(files)) await writeProjectFile(app, path, content);
      const prepared = await env.runner.prepare(record);
      const updated = await env.records.update(id, { ...prepared, prepared: true }, ['pending']);
      if (!updated && !(await env.records.get(id))) {
        // Destroyed while it was made: what its provider made goes too.
        await env.runner.stop({ ...record, ...prepared }).catch(() => undefined);
        throw sandboxError('SANDBOX_NOT_FOUND', `sandbox ${id} was destroyed while it was being created`);
      }
      record = updated ?? { ...record, ...prepared, prepared: true };
      // Once prepared: a local sandbox's user is made of its port.
      const owner = env.runner.ownerOf?.(record);
      if (owner) await chownTree(app, owner);
      // The project went to the pod: nothing of it stays here.
      if (env.runner.files) await rm(dir, { recursive: true, force: true });
    } catch (error) {
      await env.runner.release(record).catch(() => undefined);
      if (inserted) await env.records.remove(id).catch(() => undefined);
      else await env.records.releaseSlot(id).catch(() => undefined);
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      throw error;
    }
    this.supervisor(id).tell({ t: 'check' } satisfies SupervisorMsg);
    return publicInfo(record);
  }

  /** The sandbox as it is now: an active one is checked by its supervisor first (a dev server that is gone is never `running`). */
  async get(id: string): Promise<SandboxInfo> {
    const record = await this.record(id);
    if (!isActive(record.state)) return publicInfo(record);
    const info = (await this.supervisor(record.sandbox_id).ask({ t: 'check' } satisfies SupervisorMsg, ASK_MS)) as SandboxInfo | null;
    if (!info) throw sandboxError('SANDBOX_NOT_FOUND', `no sandbox ${shown(id)}`);
    return info;
  }

  /** The sandboxes of `user` (every user's without one), oldest first, each checked like `get`. */
  async list(user?: string): Promise<SandboxInfo[]> {
    const b = this.enabled();
    if (user !== undefined) checkName(user, 'user');
    const records = await b.env.records.list(user);
    const infos = await Promise.all(
      records.map(async (r) => {
        if (!isActive(r.state)) return publicInfo(r);
        try {
          return ((await this.supervisor(r.sandbox_id).ask({ t: 'check' } satisfies SupervisorMsg, ASK_MS)) as SandboxInfo | null) ?? undefined;
        } catch {
          return publicInfo(r);
        }
      }),
    );
    return infos.filter((i): i is SandboxInfo => i !== undefined);
  }

  /** Stop its dev server (nothing of it keeps running); its files stay until `destroy`. */
  async stop(id: string): Promise<SandboxInfo> {
    const record = await this.record(id);
    const info = (await this.supervisor(record.sandbox_id).ask({ t: 'stop' } satisfies SupervisorMsg, ASK_MS)) as SandboxInfo | null;
    if (!info) throw sandboxError('SANDBOX_NOT_FOUND', `no sandbox ${shown(id)}`);
    return info;
  }

  /** Stop it and remove everything of it: processes or container, network, files, record. */
  async destroy(id: string): Promise<{ destroyed: boolean }> {
    const record = await this.record(id);
    const destroyed = (await this.supervisor(record.sandbox_id).ask({ t: 'destroy' } satisfies SupervisorMsg, ASK_MS)) as boolean;
    return { destroyed };
  }

  /** Its project's files, relative and sorted (never under `.svc/`, `node_modules/`, `__pycache__/`, `dist/`, `.git/`). */
  async listFiles(id: string): Promise<{ files: string[] }> {
    const remote = this.b.env.runner.files;
    if (remote) return { files: await remote.list(await this.runnable(id)) };
    const record = await this.here(id);
    return { files: await listProjectFiles(appDir(record)) };
  }

  async readFile(id: string, path: string): Promise<string> {
    const remote = this.b.env.runner.files;
    if (remote) {
      return remote.read(await this.runnable(id), checkPath(path).join('/'));
    }
    const record = await this.here(id);
    return readProjectFile(appDir(record), path);
  }

  async writeFile(id: string, path: string, content: string | Uint8Array): Promise<void> {
    const remote = this.b.env.runner.files;
    if (remote) {
      const clean = checkPath(path).join('/');
      if (typeof content !== 'string' && !(content instanceof Uint8Array)) throw sandboxError('SANDBOX_INVALID', 'a file content is a string or bytes');
      const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
      if (bytes > MAX_FILE_BYTES) throw sandboxError('SANDBOX_INVALID', `${shown(path)}: ${bytes} bytes is more than a sandbox file may hold (${MAX_FILE_BYTES})`);
      return remote.write(await this.runnable(id), clean, content);
    }
    const record = await this.here(id);
    await writeProjectFile(appDir(record), path, content, this.b.env.runner.ownerOf?.(record));
  }

  async deleteFile(id: string, path: string): Promise<void> {
    const remote = this.b.env.runner.files;
    if (remote) {
      return remote.remove(await this.runnable(id), checkPath(path).join('/'));
    }
    const record = await this.here(id);
    await deleteProjectFile(appDir(record), path);
  }

  private async runnable(id: string): Promise<SandboxRecord> {
    const record = await this.here(id);
    if (record.state !== 'running' && record.state !== 'starting') throw sandboxError('SANDBOX_NOT_RUNNING', `sandbox ${record.sandbox_id} is ${record.state}: it runs no command`);
    return record;
  }

  private static timeoutMs(options: ExecCommandOptions): number {
    const timeout = options.timeout ?? 30;
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_S) {
      throw sandboxError('SANDBOX_INVALID', `timeout is a number of seconds above 0 and at most ${MAX_TIMEOUT_S} (a day), got ${shown(timeout)}`);
    }
    return Math.max(1, Math.round(timeout * 1000));
  }

  /** `sh -c command` in the project folder: its output and exit code. Past `timeout` seconds (30) it is killed: SANDBOX_TIMEOUT. */
  async execCommand(id: string, command: string, options: ExecCommandOptions = {}): Promise<ExecResult> {
    if (typeof command !== 'string' || command === '') throw sandboxError('SANDBOX_INVALID', 'command is a non-empty string');
    const timeoutMs = Sandboxes.timeoutMs(options);
    const record = await this.runnable(id);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    const exit_code = await this.b.env.runner.exec(record, command, {
      timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      onStdout: (c) => {
        if (outBytes < OUTPUT_CAP) out.push(c);
        outBytes += c.length;
      },
      onStderr: (c) => {
        if (errBytes < OUTPUT_CAP) err.push(c);
        errBytes += c.length;
      },
    });
    return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), exit_code };
  }

  /**
   * The streaming form: output as it comes, then `{ type: 'exit', exit_code }`.
   * Leaving the loop early (or aborting `signal`) kills the command.
   *
   * @example
   * for await (const chunk of sandboxes().streamCommand(id, 'npm install')) if (chunk.type !== 'exit') send(chunk.data);
   */
  async *streamCommand(id: string, command: string, options: ExecCommandOptions = {}): AsyncGenerator<CommandChunk, void, undefined> {
    if (typeof command !== 'string' || command === '') throw sandboxError('SANDBOX_INVALID', 'command is a non-empty string');
    const timeoutMs = Sandboxes.timeoutMs(options);
    const record = await this.runnable(id);
    const abort = new AbortController();
    const outer = options.signal;
    const onOuter = () => abort.abort(outer?.reason);
    if (outer?.aborted) onOuter();
    else outer?.addEventListener('abort', onOuter, { once: true });
    const queue: CommandChunk[] = [];
    let wake: (() => void) | undefined;
    let failed: { error: unknown } | undefined;
    let done = false;
    const push = (chunk: CommandChunk) => {
      queue.push(chunk);
      wake?.();
    };
    const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const running = this.b.env.runner
      .exec(record, command, {
        timeoutMs,
        signal: abort.signal,
        onStdout: (c) => push({ type: 'stdout', data: decoders.stdout.decode(c, { stream: true }) }),
        onStderr: (c) => push({ type: 'stderr', data: decoders.stderr.decode(c, { stream: true }) }),
      })
      .then(
        (exit_code) => push({ type: 'exit', exit_code }),
        (error: unknown) => {
          failed = { error };
          wake?.();
        },
      )
      .finally(() => {
        done = true;
        wake?.();
      });
    try {
      for (;;) {
        const next = queue.shift();
        if (next) {
          if (next.type === 'exit') return void (yield next);
          if (next.data !== '') yield next;
          continue;
        }
        if (failed) throw failed.error;
        if (done) return;
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    } finally {
      outer?.removeEventListener('abort', onOuter);
      if (!done) {
        abort.abort(new Error('the stream was closed'));
        await running;
      }
    }
  }

  /**
   * A preview token for the sandbox's owner (private previews: `[scale.sandbox] preview_secret`, the proxy's
   * `PREVIEW_SECRET`): `{ token, url, expires_at }`, `url` the preview URL carrying it (the proxy swaps it for a cookie).
   * Valid `ttlSeconds` (3600, at most a day). Give it to the sandbox's owner only.
   *
   * @example
   * const { url } = await sandboxes().previewToken(id); // redirect the owner's browser there
   */
  async previewToken(id: string, options: { ttlSeconds?: number } = {}): Promise<{ token: string; url: string; expires_at: string }> {
    const ttl = options.ttlSeconds ?? 3600;
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl <= 0 || ttl > MAX_TIMEOUT_S) throw sandboxError('SANDBOX_INVALID', `ttlSeconds is a whole number of seconds above 0 and at most ${MAX_TIMEOUT_S}, got ${shown(ttl)}`);
    const record = await this.record(id);
    const secret = this.b.env.settings.preview_secret;
    if (!secret) throw sandboxError('SANDBOX_UNAVAILABLE', 'previews are public: set [scale.sandbox] preview_secret (SVC_SANDBOX_PREVIEW_SECRET, the proxy\'s PREVIEW_SECRET) for private previews');
    const token = await signPreviewToken(secret, { sandbox_id: record.sandbox_id, user: record.user, ttlSeconds: ttl });
    const url = new URL(record.url);
    url.searchParams.set('svc_preview_token', token);
    return { token, url: url.toString(), expires_at: new Date(Date.now() + ttl * 1000).toISOString() };
  }

  /** The dev server's output from byte `offset` (0): `{ content, offset }`, the offset of the next read. */
  async logs(id: string, offset = 0): Promise<{ content: string; offset: number }> {
    if (!Number.isSafeInteger(offset) || offset < 0) throw sandboxError('SANDBOX_INVALID', `offset is a whole number of bytes ≥ 0, got ${shown(offset)}`);
    const record = await this.here(id);
    return this.b.env.runner.logs(record, offset);
  }
}

const provider = new Sandboxes();

/**
 * The sandbox provider of this runtime.
 *
 * @example
 * const { sandbox_id, url } = await sandboxes().create({ user: 'ada', project: 'blog', files: './template' });
 */
export function sandboxes(): Sandboxes {
  return provider;
}
