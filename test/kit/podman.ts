/**
 * Real containers through Debian's podman, on machines without a Docker
 * engine. Where cgroups are mounted in "hybrid" mode (v1 controllers and an
 * empty v2 hierarchy at /sys/fs/cgroup/unified) crun refuses to start a
 * container, and the v2 hierarchy cannot be unmounted for the whole machine;
 * so every podman command runs in one persistent private mount namespace
 * without it (`nsenter --mount=/run/svc-podman/mnt`), with the cgroupfs
 * manager and a containers.conf that leaves rlimits alone. One namespace for
 * every call matters: a container's network namespace is bound under
 * /run/netns inside it, and `logs`, `stop`, `rm` run from another one cannot
 * join it.
 *
 * The namespace is set up once per machine (until a reboot), under a lock, so
 * test files running at once share it; it needs root. No registry can be
 * pulled from here: {@link Podman.ensureNodeBaseImage} makes a base image from
 * this machine's Node binary and the libraries it loads.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The folder of the shared setup: the mount namespace (`mnt`), containers.conf, the wrapper script, the locks. */
export const PODMAN_DIR = '/run/svc-podman';
const NAMESPACE = join(PODMAN_DIR, 'mnt');
const CONF = join(PODMAN_DIR, 'containers.conf');
const WRAPPER = join(PODMAN_DIR, 'docker');
const LOCK = `${PODMAN_DIR}.lock`;

/** Idempotent: the namespace made when `nsenter` cannot enter it (first use, or after a reboot). Run under {@link LOCK}. */
const SETUP = `set -e
D=${PODMAN_DIR}
mkdir -p "$D"
if ! nsenter --mount="$D/mnt" true 2>/dev/null; then
  mountpoint -q "$D" || mount --bind "$D" "$D"
  mount --make-private "$D"
  umount "$D/mnt" 2>/dev/null || true
  touch "$D/mnt"
  unshare --mount="$D/mnt" sh -c 'if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified; fi'
  nsenter --mount="$D/mnt" true
fi
printf '[containers]\\ndefault_ulimits = []\\n' > "$D/containers.conf.tmp" && mv "$D/containers.conf.tmp" "$D/containers.conf"
`;

/** What a podman command ended with. */
export interface PodmanResult {
  code: number;
  stdout: string;
  stderr: string;
}

let setupDone: Promise<string | undefined> | undefined;

/** Set the namespace up (once per process; idempotent across processes): undefined, or why it failed. */
function setup(): Promise<string | undefined> {
  setupDone ??= (async () => {
    if (process.platform !== 'linux') return `not Linux (${process.platform})`;
    if (process.getuid?.() !== 0) return 'not root: the podman recipe needs a mount namespace of its own (run the tests as root, as CI does)';
    const version = spawnSync('podman', ['--version'], { encoding: 'utf8' });
    if (version.status !== 0) return 'no podman on this machine (apt-get install podman; .ci/run installs it)';
    for (const tool of ['nsenter', 'unshare', 'flock', 'mountpoint']) {
      if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `no ${tool} on this machine (util-linux)`;
    }
    const made = spawnSync('flock', [LOCK, 'sh', '-c', SETUP], { encoding: 'utf8' });
    if (made.status !== 0) return `the podman recipe failed: ${(made.stderr || made.stdout).trim()}`;
    return undefined;
  })();
  return setupDone;
}

let availability: Promise<string | undefined> | undefined;

/**
 * Whether real containers can run here: undefined when they can, else the reason (not root, no podman, the recipe
 * fails). Asked once per process.
 *
 * @example
 * const why = await podmanAvailable();
 * if (why) { t.comment(`SKIPPED: ${why}`); t.skip(why); return; }
 */
export function podmanAvailable(): Promise<string | undefined> {
  availability ??= (async () => {
    const failed = await setup();
    if (failed) return failed;
    const info = await new Podman().run(['info', '--format', '{{.Host.OCIRuntime.Name}}']);
    if (info.code !== 0) return `podman info failed: ${info.stderr.trim()}`;
    return undefined;
  })();
  return availability;
}

/**
 * podman commands in the shared namespace.
 *
 * @example
 * const podman = await Podman.open();
 * const base = await podman.ensureNodeBaseImage();
 * const id = (await podman.ok(['run', '-d', base, 'node', '-e', 'setInterval(() => {}, 1000)'])).trim();
 * t.teardown(() => podman.run(['rm', '-f', id]));
 */
export class Podman {
  /** The podman setup, made ready (throws with the reason when podman cannot run here). */
  static async open(): Promise<Podman> {
    const why = await podmanAvailable();
    if (why) throw new Error(why);
    return new Podman();
  }

  /** The command line every call runs (a docker-compatible prefix: append podman's arguments). */
  readonly argv: readonly string[] = ['nsenter', `--mount=${NAMESPACE}`, 'podman', '--cgroup-manager=cgroupfs'];

  /** Run `podman <args>`; never throws for an exit code. */
  run(args: readonly string[], options: { stdin?: string; timeoutMs?: number } = {}): Promise<PodmanResult> {
    return new Promise((resolve) => {
      const [command, ...rest] = [...this.argv, ...args] as [string, ...string[]];
      const child = spawn(command, rest, { env: { ...process.env, CONTAINERS_CONF: CONF }, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.stdin ?? '');
      const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
      child.on('error', (error) => resolve({ code: -1, stdout, stderr: `${stderr}${error.message}` }));
      child.on('close', (code) => {
        if (timer) clearTimeout(timer);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  }

  /** Run `podman <args>`; its stdout, or an error with its stderr. */
  async ok(args: readonly string[], options: { stdin?: string; timeoutMs?: number } = {}): Promise<string> {
    const r = await this.run(args, options);
    if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited with ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  }

  /**
   * A docker-compatible command for code that takes one (`cli: [podman.wrapper()]`): a script that runs podman in the
   * shared namespace with `"$@"`.
   */
  wrapper(): string {
    const script = `#!/bin/sh\n# podman in the shared mount namespace (test/kit/podman.ts)\nCONTAINERS_CONF=${CONF} exec ${this.argv.join(' ')} "$@"\n`;
    const tmp = `${WRAPPER}.${process.pid}`;
    writeFileSync(tmp, script);
    chmodSync(tmp, 0o755);
    renameSync(tmp, WRAPPER);
    return WRAPPER;
  }

  /** Whether an image of that name is in the local store. */
  async imageExists(name: string): Promise<boolean> {
    return (await this.run(['image', 'exists', name])).code === 0;
  }

  /**
   * The local Node base ({@link ensureNodeBaseImage}) with a POSIX shell and `sleep` — this machine's dash and
   * coreutils' sleep, which need only the libc the base holds — and any `extra` commands of this machine (`id`, `cat`…)
   * with the libraries `ldd` names for them: code that runs `/bin/sh -c …` in a container (a preStop hook, a sandbox's
   * dev server and commands) then runs as it does on a Debian-based image. Made once and kept, as the base is; the
   * extra commands are in its tag.
   *
   * @example
   * const image = await podman.ensureNodeShellImage(['id']); // 'localhost/svc-node-base-sh:20.20.2-id'
   */
  async ensureNodeShellImage(extra: readonly string[] = []): Promise<string> {
    const base = await this.ensureNodeBaseImage();
    const name = `${base.replace(/^localhost\/svc-node-base:/, 'localhost/svc-node-base-sh:')}${extra.map((c) => `-${c}`).join('')}`;
    if (await this.imageExists(name)) return name;
    const dir = mkdtempSync(join(tmpdir(), 'svc-base-sh-'));
    try {
      const put = (from: string, to: string): void => {
        mkdirSync(dirname(join(dir, 'root', to)), { recursive: true });
        copyFileSync(realpathSync(from), join(dir, 'root', to));
      };
      put('/bin/sh', 'bin/sh');
      put('/bin/sleep', 'bin/sleep');
      for (const command of extra) {
        const path = spawnSync('sh', ['-c', `command -v '${command}'`], { encoding: 'utf8' }).stdout.trim();
        if (!path.startsWith('/')) throw new Error(`no ${command} on this machine to put in ${name}`);
        put(path, `usr/bin/${command}`);
        const ldd = spawnSync('ldd', [realpathSync(path)], { encoding: 'utf8' });
        for (const line of ldd.status === 0 ? ldd.stdout.split('\n') : []) {
          const lib = /=>\s*(\/\S+)/.exec(line)?.[1];
          if (lib) put(lib, lib.slice(1));
        }
      }
      writeFileSync(join(dir, 'Dockerfile'), `FROM ${base}\nCOPY root/ /\n`);
      await this.ok(['build', '-q', '-t', name, dir], { timeoutMs: 60_000 });
      return name;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * A Node base image made on this machine (no registry can be pulled from): this process's Node binary at
   * /usr/local/bin/node, the libraries `ldd` names for it and the rest of glibc's (Debian's libc6: native addons need
   * librt and others), the CA certificates, /etc/passwd and /etc/group with root
   * and `node` (1000, as in the official Node images), and /tmp (1777). No shell: the app's image starts node itself.
   * Made once (under a lock: test files share it) and kept; its name carries the Node version.
   *
   * @example
   * const base = await podman.ensureNodeBaseImage(); // 'localhost/svc-node-base:20.20.2'
   */
  async ensureNodeBaseImage(name = `localhost/svc-node-base:${process.versions.node}`): Promise<string> {
    if (await this.imageExists(name)) return name;
    const root = mkdtempSync(join(tmpdir(), 'svc-node-base-'));
    try {
      const node = realpathSync(process.execPath);
      const put = (from: string, to: string): void => {
        mkdirSync(dirname(join(root, to)), { recursive: true });
        copyFileSync(realpathSync(from), join(root, to));
      };
      put(node, 'usr/local/bin/node');
      chmodSync(join(root, 'usr/local/bin/node'), 0o755);
      const ldd = spawnSync('ldd', [node], { encoding: 'utf8' });
      if (ldd.status !== 0) throw new Error(`ldd ${node} failed: ${ldd.stderr}`);
      for (const line of ldd.stdout.split('\n')) {
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`
        const lib = /=>\s*(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)/.exec(line)?.[1];
        if (lib) put(lib, lib.slice(1));
      }
      // The rest of glibc (librt, libresolv, the NSS modules…): native addons load what a Debian image has (4 MB).
      const libc6 = spawnSync('dpkg', ['-L', 'libc6'], { encoding: 'utf8' });
      for (const lib of libc6.status === 0 ? libc6.stdout.split('\n') : []) {
        if (/^\/(usr\/)?lib(64|\/[^/]+-linux-gnu)?\/[^/]+\.so(\.\d+)*$/.test(lib) && existsSync(lib)) put(lib, lib.slice(1));
      }
      if (existsSync('/etc/ssl/certs/ca-certificates.crt')) put('/etc/ssl/certs/ca-certificates.crt', 'etc/ssl/certs/ca-certificates.crt');
      writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000::/home/node:/sbin/nologin\n');
      writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnode:x:1000:\n');
      mkdirSync(join(root, 'tmp'));
      chmodSync(join(root, 'tmp'), 0o1777);
      // Under the lock: another test file may be making it right now.
      const script = `set -e
if ${this.argv.join(' ')} image exists '${name}'; then exit 0; fi
tar -C '${root}' --numeric-owner --owner=0 --group=0 -cf - . | ${this.argv.join(' ')} import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["node"]' - '${name}' >/dev/null`;
      const made = spawnSync('flock', [`${PODMAN_DIR}/base-image.lock`, 'sh', '-c', script], { encoding: 'utf8', env: { ...process.env, CONTAINERS_CONF: CONF } });
      if (made.status !== 0) throw new Error(`making the base image ${name} failed: ${made.stderr.trim()}`);
      return name;
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
}
