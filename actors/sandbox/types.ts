/**
 * What a sandbox is: its record (kept in the shared store, so any member
 * answers for it), its settings (`[scale.sandbox]`), and the seam a provider
 * fills — how a sandbox's dev server is started, watched, stopped and reached.
 */

/**
 * `pending` → `starting` → `running` → `stopping` → `stopped`; any of the first
 * three → `error` (README *Sandboxes* has the transitions).
 */
export type SandboxState = 'pending' | 'starting' | 'running' | 'stopping' | 'stopped' | 'error';

export type SandboxType = 'local' | 'container' | 'orchestrator';

/** What `create` and `get` answer (the fields an app reads), and what the supervisor records. */
export interface SandboxRecord {
  sandbox_id: string;
  user: string;
  project: string;
  state: SandboxState;
  /** The preview URL (`http://localhost:{port}` for local sandboxes; loopback for container ones). */
  url: string;
  type: SandboxType;
  /** ISO times. The TTL counts from `created_at`. */
  created_at: string;
  updated_at: string;
  /** Why it is `error` (or why it stopped), in words. */
  error?: string;
  /** Dev-server restarts by its supervisor so far. */
  restarts: number;
  /** The host it runs on (files, processes and containers are there). */
  host: string;
  /** The sandbox's folder on that host (its project files). */
  dir: string;
  /** The port its dev server listens on (the host's port for local sandboxes, the container's own for container ones). */
  port: number;
  /** Local: the dev server's process id (and process group). */
  pid?: number;
  /** Local: the inode of the mount namespace its start made (a command joins that one only; none recorded: a fresh one). */
  mnt_ns?: number;
  /** Container: its name, its network and its address on that network. */
  container?: string;
  network?: string;
  address?: string;
  /** Container: the loopback port of the relay that serves the preview. */
  relay_port?: number;
  /** Its create prepared it (files, port, pod): a supervisor starts only a prepared sandbox. */
  prepared?: boolean;
  /** Orchestrator: its pod's name, and whether that pod came from the warm pool. */
  pod?: string;
  warm?: boolean;
}

/** The public part of a record: what `create`, `get` and `list` answer. */
export type SandboxInfo = Pick<SandboxRecord, 'sandbox_id' | 'user' | 'project' | 'state' | 'url' | 'type' | 'created_at' | 'updated_at' | 'error' | 'restarts'>;

/** `[scale.sandbox]`, environment applied. */
export interface SandboxSettings {
  enabled: boolean;
  type: SandboxType | 'orchestrator';
  base_image: string;
  memory_limit: string;
  cpu_limit: string;
  network_isolation: boolean;
  ttl_seconds: number;
  max_per_user: number;
  security_context: boolean;
  storage_limit: string;
  container_cli: string;
  readiness_timeout_seconds: number;
  port_base: number;
  port_count: number;
  port_stride: number;
  check_interval_ms: number;
  cleanup_interval_seconds: number;
  max_restarts: number;
  pids_limit: number;
  /** Where sandbox folders live ('' = `<data folder>/sandboxes`). */
  root: string;
  /** Orchestrator provider (README *Sandboxes on Kubernetes*). */
  namespace: string;
  proxy_mode: boolean;
  ingress_class: string;
  domain_template: string;
  tls_enabled: boolean;
  tls_issuer: string;
  ingress_annotations: Record<string, string>;
  warm_pool_size: number;
  allow_egress: boolean;
  /** Signs preview tokens (private previews through the proxy); '' = public previews. */
  preview_secret: string;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exit_code: number;
}

export interface ExecOptions {
  /** Seconds (default 30); the command and its processes are killed past it. */
  timeoutMs: number;
  signal?: AbortSignal;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
}

/** What a started dev server left to record (pid, container, network, address, relay port). */
export type Started = Partial<Pick<SandboxRecord, 'pid' | 'mnt_ns' | 'container' | 'network' | 'address' | 'relay_port' | 'url' | 'port' | 'pod' | 'warm'>>;

/** Where svc keeps its own files on the sandboxes' host, which a sandbox must not see: its data folder, its project folder. */
export interface SandboxPaths {
  dataDir: string;
  projectRoot: string;
}

/**
 * A provider's seam: what differs between a child process and a container.
 * The supervisor calls `start`, `ready`, `alive` and `stop`; `exec` and
 * `logs` are called by whoever answers (on the sandbox's host). Files live in
 * `record.dir` on the host for every provider (a container sees them at `/app`).
 */
export interface Runner {
  readonly type: SandboxType;
  /** Where its sandboxes live when that is not this machine (a Kubernetes namespace): every member reaches them, and files go through {@link Runner.files}. */
  readonly host?: string;
  /** A project's files where they are not `record.dir` on this host (in a pod). */
  readonly files?: RemoteFiles;
  /** Who owns a sandbox's project files (the unprivileged user its code runs as, which may be its own), when not svc's own user. Called once it is prepared. */
  ownerOf?(record: SandboxRecord): { uid: number; gid: number } | undefined;
  /** Before the first start: what the record needs (a port, a URL). Throws SANDBOX_NO_PORT and the like. */
  prepare(record: SandboxRecord): Promise<Started>;
  /** Start the dev server (not waiting for it to be ready); the log goes to `logPath(record)`. */
  start(record: SandboxRecord): Promise<Started>;
  /** Ready: it said `Server ready` and its port answers. */
  ready(record: SandboxRecord): Promise<boolean>;
  /** Its process or container still runs. */
  alive(record: SandboxRecord): Promise<boolean>;
  /** Stop it and everything it started; nothing of it is left running (its files stay). Idempotent. */
  stop(record: SandboxRecord): Promise<void>;
  /** After `stop`: give back what `prepare` took (port, network, relay). Idempotent. */
  release(record: SandboxRecord): Promise<void>;
  /** `sh -c command` in the project folder. Resolves with the exit code; output goes to the callbacks. */
  exec(record: SandboxRecord, command: string, options: ExecOptions): Promise<number>;
  /** The dev server's output from byte `offset`. */
  logs(record: SandboxRecord, offset: number): Promise<{ content: string; offset: number }>;
  /** A supervisor takes over a sandbox another process started (an earlier run, a member that died): rebuild what lived only in that process (a relay); what changed is recorded. */
  adopt?(record: SandboxRecord): Promise<Started | void>;
  /** How its dev server ended, when known: its exit code, or the signal that killed it; `removed`: its container was removed from outside. */
  exitOf?(record: SandboxRecord): Promise<{ code?: number; signal?: string; removed?: boolean; reason?: string } | undefined>;
  /** Sandboxes of this provider running on this host that no record names (for reconciliation): their ids. */
  orphans?(known: ReadonlySet<string>): Promise<string[]>;
  /** Remove one such orphan. */
  removeOrphan?(id: string): Promise<void>;
  /** The provider's own periodic cleanup (run by one member per window): what it removed, by sandbox id or object name. */
  sweep?(known: ReadonlySet<string>, now: number): Promise<string[]>;
  /** How often a starting sandbox is looked at (default 20 ms: each look costs this provider a request or more). */
  readonly readyPollMs?: number;
  /** Started with the runtime (a warm pool filled); the returned function stops it. */
  open?(): Promise<() => void>;
}

/** A project's files kept elsewhere than this host (each path checked by the caller). */
export interface RemoteFiles {
  list(record: SandboxRecord): Promise<string[]>;
  read(record: SandboxRecord, path: string): Promise<string>;
  write(record: SandboxRecord, path: string, content: string | Uint8Array): Promise<void>;
  remove(record: SandboxRecord, path: string): Promise<void>;
}
