/**
 * The `exec` subresource of the fake: the WebSocket channel protocol (`v5.channel.k8s.io`, `v4.channel.k8s.io`)
 * and the command's run.
 *
 * Decisions:
 * - The command runs for real on this machine, in a folder standing for the pod's filesystem (`root`, made on
 *   first use with `app/` and `tmp/`, gone when the pod is deleted). Each argument's absolute `/app` and `/tmp`
 *   (at a path boundary: `/app`, `/app/x`, `'/tmp'` inside an `sh -c` string; not `/usr/app` or `/apps`) become
 *   `<root>/app` and `<root>/tmp`; so do the container's plain env values. The cwd is `<root>`, HOME `<root>`
 *   unless the container sets it, PATH this machine's. No isolation: it is a test's stand-in for a container.
 * - Each command leads its own process group: the client leaving, the pod stopping or deleted, or the fake
 *   closing kills the group of every command still running. Background processes of a command that has exited
 *   are not tracked (a PID may be reused by then).
 * - Frames as the API server sends them: stdout on 1, stderr on 2, the final Status on 3 (`Success`, or
 *   `NonZeroExitCode` with the code as the `ExitCode` cause; 128 + the signal for a killed command; a command
 *   that cannot start is an `InternalError` 500), then a normal close. v5's `[255, 0]` ends the command's stdin.
 * - Backpressure both ways: stdin pauses the socket while the command's stdin is full (for 2 s at most at a
 *   time: a paused socket would not see the client leave); output pauses the command's pipes while more than
 *   1 MiB waits on the socket.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { Duplex, Readable, Writable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { isObj, type ExecIo, type FakeKubeOptions, type Obj } from './types.ts';

/** The channel protocols served, the preferred first. */
export const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

const HIGH_WATER = 1024 * 1024;

/** `/app` and `/tmp` at a path boundary in one argument, made the pod folder's. */
export function rewritePaths(arg: string, root: string): string {
  return arg.replace(/(?<![\w.~/-])\/(app|tmp)(?![\w.-])/g, (_m, dir: string) => join(root, dir));
}

/** A command running: how to end it. */
interface Running {
  kill(): void;
}

/** Pods' folders and the commands running in them. */
export class PodExec {
  private readonly server = new WebSocketServer({ noServer: true, handleProtocols: (offered) => CHANNEL_PROTOCOLS.find((p) => offered.has(p)) ?? false });
  private readonly running = new Map<string, Set<Running>>();
  private readonly sockets = new Set<WebSocket>();
  private trash = 0;

  constructor(
    /** The kit's temp folder: pods' folders go under `pods/`. */
    private readonly dir: string,
    private readonly script?: FakeKubeOptions['exec'],
  ) {}

  /** The folder standing for a pod's filesystem (made on first use, with `app/` and `tmp/`). */
  root(namespace: string, name: string): string {
    const root = join(this.dir, 'pods', namespace, name);
    mkdirSync(join(root, 'app'), { recursive: true });
    mkdirSync(join(root, 'tmp'), { recursive: true });
    return root;
  }

  /** Kill the commands running in a pod (it stopped). */
  stop(namespace: string, name: string): void {
    const set = this.running.get(`${namespace}/${name}`);
    for (const r of set ?? []) r.kill();
  }

  /** A pod deleted: its commands killed, its folder gone (moved aside at once, removed in the background). */
  forget(namespace: string, name: string): void {
    this.stop(namespace, name);
    const root = join(this.dir, 'pods', namespace, name);
    const aside = join(this.dir, `deleted-${++this.trash}`);
    try {
      renameSync(root, aside);
    } catch {
      return;
    }
    void rm(aside, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }

  /** Kill every command, close every exec connection (the fake closing). */
  close(): void {
    for (const set of this.running.values()) for (const r of set) r.kill();
    for (const ws of this.sockets) ws.terminate();
    this.server.close();
  }

  /** The protocol the handshake will choose among those offered, or undefined. */
  static choose(req: IncomingMessage): string | undefined {
    const offered = new Set(
      String(req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    );
    return CHANNEL_PROTOCOLS.find((p) => offered.has(p));
  }

  /** Finish the handshake and run `command` in the pod's `container` (checked by the caller). */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer, pod: Obj, container: string, command: string[], withStdin: boolean): void {
    this.server.handleUpgrade(req, socket, head, (ws) => {
      this.sockets.add(ws);
      ws.on('close', () => this.sockets.delete(ws));
      this.run(ws, pod, container, command, withStdin);
    });
  }

  private run(ws: WebSocket, pod: Obj, container: string, command: string[], withStdin: boolean): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const root = this.root(pod.metadata.namespace, pod.metadata.name);
    const v5 = ws.protocol === CHANNEL_PROTOCOLS[0];
    const abort = new AbortController();
    let finished = false;
    let kill = (): void => abort.abort();
    const running = {
      kill: () => kill(),
      done: () => {
        set.delete(running);
        if (!set.size && this.running.get(key) === set) this.running.delete(key);
      },
    };
    const set = this.running.get(key) ?? new Set<Running>();
    this.running.set(key, set);
    set.add(running);
    const send = (channel: number, data: Buffer | string, done?: () => void): void => {
      if (ws.readyState !== ws.OPEN) return;
      const payload = typeof data === 'string' ? Buffer.from(data) : data;
      ws.send(Buffer.concat([Buffer.from([channel]), payload]), { binary: true }, () => done?.());
    };
    const end = (status: Obj): void => {
      if (finished) return;
      finished = true;
      running.done();
      // Read again (stdin may have paused the socket for a command that no longer reads): the client's close frame must get through.
      resume();
      send(3, JSON.stringify({ metadata: {}, ...status }), () => ws.close(1000));
    };
    const exited = (code: number): void => {
      const argv = `[${command.join(' ')}]`;
      end(
        code === 0 ?
          { status: 'Success' }
        : {
            status: 'Failure',
            message: `command terminated with non-zero exit code: error executing command ${argv}, exit code ${code}`,
            reason: 'NonZeroExitCode',
            details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
          },
      );
    };
    const failed = (message: string): void => end({ status: 'Failure', message, reason: 'InternalError', details: { causes: [{ message }] }, code: 500 });
    // Stdin frames feed `sink`; a full sink pauses the socket until it drains. A paused socket does not see the
    // client leave: a sink that has not drained in 2 s belongs to a command that stopped reading, so the socket
    // reads on without pausing again (the sink buffers what the client still sends) and a leaving client is seen.
    let sink: Writable | undefined;
    let draining = false;
    let stuck = false;
    let unpause: NodeJS.Timeout | undefined;
    const resume = (): void => {
      clearTimeout(unpause);
      ws.resume();
    };
    ws.on('message', (data: Buffer) => {
      const channel = data[0];
      if (channel === 0 && sink && !sink.writableEnded && !finished) {
        if (!sink.write(data.subarray(1)) && !ws.isPaused && !stuck) {
          ws.pause();
          unpause = setTimeout(() => {
            stuck = true;
            resume();
          }, 2000);
          if (!draining) {
            draining = true;
            sink.once('drain', () => {
              draining = false;
              stuck = false;
              resume();
            });
          }
        }
      } else if (channel === 255 && data[1] === 0 && v5) sink?.end();
    });
    ws.on('close', () => {
      clearTimeout(unpause);
      sink?.end();
      if (!finished) {
        finished = true;
        running.done();
        kill();
      }
    });
    // Output waits while the socket is backed up: the command's pipe pauses.
    const pump = (channel: number, stream: Readable): void => {
      stream.on('data', (chunk: Buffer) => {
        send(channel, chunk, () => {
          if (stream.isPaused() && ws.bufferedAmount < HIGH_WATER) stream.resume();
        });
        if (ws.bufferedAmount > HIGH_WATER) stream.pause();
      });
    };
    const scripted = this.script ? this.scripted(pod, container, command, root, abort.signal, send) : undefined;
    if (scripted) {
      sink = scripted.stdin;
      if (!withStdin) sink.end();
      scripted.done.then(exited, (error: unknown) => failed(error instanceof Error ? error.message : String(error)));
      return;
    }
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root };
    const spec = ((pod.spec?.containers ?? []) as Obj[]).find((c) => c.name === container);
    for (const e of (spec?.env ?? []) as Obj[]) if (isObj(e) && typeof e.name === 'string' && typeof e.value === 'string') env[e.name] = rewritePaths(e.value, root);
    env.PATH = process.env.PATH ?? '/usr/bin:/bin';
    const [file, ...args] = command.map((a) => rewritePaths(a, root));
    const child = spawn(file as string, args, { cwd: root, env, detached: true, stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    kill = () => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
    if (child.stdin) {
      sink = child.stdin;
      // A command that exits without reading all of its stdin: EPIPE is not the exec's failure.
      child.stdin.on('error', () => undefined);
    }
    pump(1, child.stdout as Readable);
    pump(2, child.stderr as Readable);
    child.on('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'ENOENT' ? `exec: "${command[0]}": executable file not found in $PATH` : error.message;
      failed(`failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: ${why}: unknown`);
    });
    child.on('close', (code, signal) => {
      if (code === null && signal === null) return;
      exited(code ?? 128 + (constants.signals[signal as NodeJS.Signals] ?? 9));
    });
  }

  /** The scripted exec's run, or undefined when the script lets the command run for real. */
  private scripted(
    pod: Obj,
    container: string,
    command: string[],
    root: string,
    signal: AbortSignal,
    send: (channel: number, data: Buffer | string) => void,
  ): { stdin: PassThrough; done: Promise<number> } | undefined {
    const stdin = new PassThrough();
    const io: ExecIo = { stdin, stdout: (c) => send(1, c), stderr: (c) => send(2, c), signal, root };
    let done: Promise<number> | undefined;
    try {
      done = this.script?.(pod, container, command, io);
    } catch (error) {
      done = Promise.reject(error);
    }
    return done ? { stdin, done } : undefined;
  }
}
