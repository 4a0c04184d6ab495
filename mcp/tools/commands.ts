/**
 * `list_commands`, `get_command` and `execute_command`: the `svc` command
 * line as tools. The first two read the command table (`cli/table.ts`) — the
 * same cac instance `svc` itself parses — so they never drift from it;
 * `execute_command` runs `svc <command> …` as a child process.
 *
 * The tool server imports nothing of cli/ (test/meta/rooms.test.ts), so the
 * CLI hands the table over when it starts the server, before the first call:
 * `useCommandTable(commandTable())` in cli/commands/mcp.ts gives the cac
 * builder, the help of positional arguments and the file the table is
 * written in (read as text for the `source` lines). The tools run the
 * package's program, bin/svc.mjs, as a child process: no import.
 *
 * Argument kinds in `get_command`:
 * - `POSITIONAL`: a positional argument (`[entry]`, `<name>`); `required` when written `<…>`.
 * - `REMAINDER`: a variadic positional (`[...args]`): every operand after the
 *   positionals before it, handed to the command as a list (always last).
 * - `OPTION`: a flag (`--port <port>` takes a value, type `string`; `--dev` is
 *   a `boolean`). Options are never required; a `<value>` must follow the flag
 *   when it is given.
 * - `MULTI`: an option declared to collect repeated values into a list (cac's
 *   `{ type: [...] }`); the table has none today.
 */
import type { CAC, Command } from 'cac';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ToolBusyError, ToolInputError, type ToolResult } from '../types.ts';
import { judgeCommand } from './command-policy.ts';

const BIN = fileURLToPath(new URL('../../bin/svc.mjs', import.meta.url));

/**
 * The groups `list_commands` sorts commands into: `serve` runs an app;
 * `deploy` acts on an app deployed to Kubernetes (scale, and the older status
 * and destroy); `data` reads and changes what an app stored (its stores, its
 * users' tokens); `tooling` helps build, measure and assist (bench, init, mcp). A
 * command added to the table without a group here is listed under `other`.
 *
 * @example
 * COMMAND_GROUPS.find((g) => g.commands.includes('db'))?.name // 'data'
 */
export const COMMAND_GROUPS: readonly { readonly name: string; readonly commands: readonly string[] }[] = [
  { name: 'serve', commands: ['start', 'sandbox', 'docs'] },
  { name: 'deploy', commands: ['scale', 'status', 'destroy'] },
  { name: 'data', commands: ['db', 'token'] },
  { name: 'tooling', commands: ['bench', 'init', 'mcp'] },
];

/**
 * The `svc` command table as the tools need it: a builder of a fresh, unparsed
 * cac instance (cli/table.ts's `buildCli`), the help of positional arguments
 * by command and argument name (its `ARGUMENT_HELP`), and the file the table
 * is written in — `name` as `source` shows it, `path` to read its lines.
 *
 * @example
 * const table: CommandTable = { build: buildCli, argumentHelp: ARGUMENT_HELP, source: { name: 'cli/table.ts', path: fileURLToPath(import.meta.url) } };
 */
export interface CommandTable {
  build: () => CAC;
  argumentHelp?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Where the table is written: the `source` of every command and argument (`cli/table.ts:<line>`). */
  source: { name: string; path: string };
}

let table: CommandTable | undefined;
/** The lines of the table's file, read at the first `source` asked for. */
let tableLines: string[] | undefined;

/**
 * Give the command tools the `svc` command table (once, before serving).
 *
 * @example
 * useCommandTable(commandTable()); // in cli/commands/mcp.ts, commandTable from cli/table.ts
 */
export function useCommandTable(commands: CommandTable): void {
  table = commands;
  tableLines = undefined;
}

function commandTable(): CommandTable {
  if (!table) throw new Error('the svc command table was not given to the tool server (useCommandTable)');
  return table;
}

/**
 * Most bytes kept of each of stdout and stderr; past it a marker says how much was left out.
 * @example '…\n[svc mcp: stdout truncated: 52311 more bytes not shown]\n'
 */
export const MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * Commands `execute_command` runs at once in this process (every session of
 * the server shares them); more wait their turn in a short queue.
 * @example MAX_RUNNING_COMMANDS // 2
 */
export const MAX_RUNNING_COMMANDS = 2;

/**
 * Commands that may wait for a turn; past them a call is refused at once
 * with `ToolBusyError` (an error result "execute_command is busy …").
 * @example MAX_WAITING_COMMANDS // 4
 */
export const MAX_WAITING_COMMANDS = 4;

let runningCommands = 0;
const waitingCommands: (() => void)[] = [];

/** A turn to run a command (its release hands the turn to the next one waiting), or ToolBusyError when the queue is full. */
async function commandTurn(): Promise<() => void> {
  const release = (): void => {
    const next = waitingCommands.shift();
    if (next) next();
    else runningCommands--;
  };
  if (runningCommands < MAX_RUNNING_COMMANDS) {
    runningCommands++;
    return release;
  }
  if (waitingCommands.length >= MAX_WAITING_COMMANDS) {
    throw new ToolBusyError(`execute_command is busy: ${MAX_RUNNING_COMMANDS} commands are running and ${MAX_WAITING_COMMANDS} waiting; try again when one has finished`);
  }
  await new Promise<void>((go) => waitingCommands.push(go));
  return release;
}

/**
 * One row of `list_commands`.
 * @example { name: 'start', description: 'Serve every walker…', group: 'serve', usage: 'svc start [entry] [options]' }
 */
export type CommandSummary = { name: string; description: string; group: string; usage: string };

/**
 * What `list_commands` answers.
 * @example { commands: [{ name: 'start', … }, …], groups: [{ name: 'serve', commands: ['start'] }, …], total: 6 }
 */
export type CommandList = ToolResult & {
  commands: CommandSummary[];
  groups: { name: string; commands: string[] }[];
  total: number;
};

/**
 * One argument or option of a command, as `get_command` reports it (kinds: see the file's comment).
 * @example { name: '--port', kind: 'OPTION', type: 'string', required: false, default: '8000', help: 'Port, default 8000 …', source: 'cli/table.ts:53', short: '-p' }
 */
export type CommandArgument = {
  name: string;
  kind: 'POSITIONAL' | 'OPTION' | 'MULTI' | 'REMAINDER';
  type: string;
  required: boolean;
  /** cac's default when it has one, else the default the help text states (as text), else null. */
  default: unknown;
  help: string;
  /** `cli/table.ts:<line>` where it is declared. */
  source: string;
  /** The one-letter form (`-p`), or null. */
  short: string | null;
};

/**
 * What `get_command` answers for a known command.
 * @example { name: 'init', help: 'svc/0.1.0\n\nUsage:\n  $ svc init [dir]…', group: 'tooling', source: 'cli/table.ts:129', args: [{ name: 'dir', kind: 'POSITIONAL', … }, …] }
 */
export type CommandDetail = ToolResult & { name: string; help: string; group: string; source: string; args: CommandArgument[] };

/**
 * What `execute_command` answers.
 * @example { success: false, exit_code: 2, stdout: '', stderr: 'svc: Unknown option `--nope`\n', command: 'svc start --nope' }
 */
export type CommandRun = ToolResult & { success: boolean; exit_code: 0 | 1 | 2; stdout: string; stderr: string; command: string };

/**
 * Every `svc` command of the table, with its group and usage line, and the
 * groups with their commands.
 *
 * @example
 * const { total, groups } = await listCommands();
 * // total 6; groups[0] → { name: 'serve', commands: ['start'] }
 */
export async function listCommands(_args: Record<string, never> = {}): Promise<CommandList> {
  const commands = tableCommands().map(
    (c): CommandSummary => ({ name: c.name, description: c.description, group: groupOf(c.name), usage: usage(c) }),
  );
  const groups = [...COMMAND_GROUPS.map((g) => g.name), 'other']
    .map((name) => ({ name, commands: commands.filter((c) => c.group === name).map((c) => c.name) }))
    .filter((g) => g.commands.length > 0);
  return { commands, groups, total: commands.length };
}

/**
 * One command: its `--help` text as `svc <name> --help` prints it, its group,
 * where it is declared, and each positional argument and option.
 *
 * @example
 * const start = await getCommand({ name: 'start' });
 * // start.args → [{ name: 'entry', kind: 'POSITIONAL', … }, { name: '--port', kind: 'OPTION', short: '-p', … }, …]
 * await getCommand({ name: 'deploy' }); // { error: 'no svc command named "deploy"; the commands: start, token, …' }
 */
export async function getCommand({ name }: { name: string }): Promise<CommandDetail | { error: string }> {
  if (typeof name !== 'string') throw new ToolInputError('name must be a string');
  const command = tableCommands().find((c) => c.name === name);
  if (!command) return { error: `no svc command named ${JSON.stringify(name)}; the commands: ${commandNames().join(', ')}` };
  const line = tableLine(`.command('${command.rawName}'`, 0);
  const file = commandTable().source.name;
  const at = line === undefined ? file : `${file}:${line}`;
  const positionals = command.args.map(
    (arg): CommandArgument => ({
      name: arg.value,
      kind: arg.variadic ? 'REMAINDER' : 'POSITIONAL',
      type: arg.variadic ? 'string[]' : 'string',
      required: arg.required,
      default: null,
      help: commandTable().argumentHelp?.[command.name]?.[arg.value] ?? '',
      source: at,
      short: null,
    }),
  );
  const options = command.options.map((option): CommandArgument => {
    const flags = option.rawName.split(/[\s,]+/).filter((f) => f.startsWith('-'));
    const takesValue = /[<[]/.test(option.rawName);
    const multi = Array.isArray(option.config.type);
    return {
      name: flags.find((f) => f.startsWith('--')) ?? flags[0] ?? option.name,
      kind: multi ? 'MULTI' : 'OPTION',
      type: multi ? 'string[]' : takesValue ? 'string' : 'boolean',
      required: false,
      default: option.config.default ?? statedDefault(option.description),
      help: option.description,
      source: sourceAfter(`.option('${option.rawName}'`, line, at),
      short: flags.find((f) => /^-[^-]$/.test(f)) ?? null,
    };
  });
  return { name: command.name, help: helpText(command.name), group: groupOf(command.name), source: at, args: [...positionals, ...options] };
}

/**
 * The `execute_command` tool: judge `svc <command> ...args` against the
 * policy (tools/command-policy.ts: parsed with the CLI's own table; `--`
 * refused; help is pure help; `start --faux`, `init` without `--force`, the
 * reading `db` commands and `bench compare` only; every path inside the
 * project), then run what was judged with {@link runCommand}, in the real
 * project folder (`projectRoot`, default the current folder), with an
 * environment holding no secret of the server. A refusal is a usage error
 * (exit 2) and starts nothing. At most {@link MAX_RUNNING_COMMANDS} run at
 * once in the process and {@link MAX_WAITING_COMMANDS} wait (their `timeout`
 * counts from their start); past that, `ToolBusyError` at once. Throws
 * `ToolInputError` for malformed arguments. `onSpawn` and `maxOutputBytes` are for tests; `env` is the
 * environment the allowlisted variables are taken from (default the server's).
 *
 * @example
 * await executeCommand({ command: 'init', args: ['--help'] });
 * // { success: true, exit_code: 0, stdout: 'svc/0.1.0\n\nUsage:\n  $ svc init [dir]…', stderr: '', command: 'svc init --help' }
 * await executeCommand({ command: 'init', args: ['x', '--force=true'] }); // exit_code 2, stderr 'svc init --force replaces files: …'
 */
export async function executeCommand({
  command,
  args = [],
  timeout = 30,
  projectRoot = process.cwd(),
  env = process.env,
  onSpawn,
  maxOutputBytes = MAX_OUTPUT_BYTES,
}: {
  command: string;
  args?: string[];
  timeout?: number;
  projectRoot?: string;
  env?: NodeJS.ProcessEnv;
  onSpawn?: (pid: number) => void;
  maxOutputBytes?: number;
}): Promise<CommandRun> {
  if (typeof command !== 'string') throw new ToolInputError('command must be a string');
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new ToolInputError('args must be a list of strings');
  checkTimeout(timeout);
  const line = `svc ${[command, ...args].map(quote).join(' ')}`;
  const verdict = judgeCommand(commandTable().build(), command, args, projectRoot, env);
  if (!verdict.ok) return { success: false, exit_code: 2, stdout: '', stderr: `${verdict.reason}\n`, command: line };
  // Each command is a process (a server's worth of memory for start --faux): a client sending many at once would
  // start them all, so they take turns.
  const release = await commandTurn();
  let run: CommandRun;
  try {
    run = await runCommand({ argv: verdict.argv, timeout, cwd: verdict.cwd, env: verdict.env, onSpawn, maxOutputBytes });
  } finally {
    release();
  }
  // Help runs as `svc <command> --help` alone: the line shown is what ran.
  return verdict.help ? run : { ...run, command: line };
}

function checkTimeout(timeout: unknown): void {
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 1 || timeout > 600) {
    throw new ToolInputError(`timeout must be a number of seconds from 1 to 600, got ${JSON.stringify(timeout)}`);
  }
}

/**
 * Run `svc ...argv` (this checkout's `bin/svc.mjs` under the same Node) in
 * `cwd`, with exactly `env`, as the leader of its own process group, stdin
 * closed — unjudged: {@link executeCommand} is the tool, this is its
 * mechanism. At `timeout` seconds (1–600) the whole group is killed with
 * SIGKILL and stderr says so; once the command exits, anything it left
 * running in its group is killed too. Each of stdout and stderr keeps at
 * most `maxOutputBytes` ({@link MAX_OUTPUT_BYTES}), then a marker.
 *
 * `exit_code`: 0 success; 2 a usage error (cac's errors, which `svc` itself
 * exits 1 on, or the command's own exit code 2); 1 anything else (a failure,
 * a signal, the timeout). `onSpawn` gets the child's pid (its group's id).
 *
 * @example
 * await runCommand({ argv: ['start', '--nope'], cwd: '/proj', env: { PATH: process.env.PATH } });
 * // { success: false, exit_code: 2, stdout: '', stderr: 'svc: Unknown option `--nope`\n', command: 'svc start --nope' }
 */
export async function runCommand({
  argv,
  timeout = 30,
  cwd,
  env,
  onSpawn,
  maxOutputBytes = MAX_OUTPUT_BYTES,
}: {
  argv: readonly string[];
  timeout?: number;
  cwd: string;
  env: NodeJS.ProcessEnv;
  onSpawn?: ((pid: number) => void) | undefined;
  maxOutputBytes?: number;
}): Promise<CommandRun> {
  checkTimeout(timeout);
  const line = `svc ${argv.map(quote).join(' ')}`;
  return new Promise<CommandRun>((done) => {
    const child = spawn(process.execPath, [BIN, ...argv], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout = new Capped('stdout', maxOutputBytes);
    const stderr = new Capped('stderr', maxOutputBytes);
    child.stdout.on('data', (chunk: Buffer) => stdout.add(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.add(chunk));
    let timedOut = false;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let spawnError: Error | undefined;
    let straggler: NodeJS.Timeout | undefined;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(straggler);
      let err = stderr.text();
      if (spawnError) err += `svc mcp: could not run the command: ${spawnError.message}\n`;
      if (timedOut) err += `${err === '' || err.endsWith('\n') ? '' : '\n'}svc mcp: timed out after ${timeout} s; the command and its process group were killed (SIGKILL)\n`;
      const exitCode = timedOut || spawnError ? 1 : normalise(exit?.code ?? null, err);
      done({ success: exitCode === 0, exit_code: exitCode, stdout: stdout.text(), stderr: err, command: line });
    };

    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
      // A process that left the group (setsid) could hold the pipes open: answer anyway.
      straggler = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, 5_000);
    }, timeout * 1000);

    if (child.pid !== undefined) onSpawn?.(child.pid);
    child.on('error', (error) => {
      spawnError = error;
      finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // The command is done: whatever it started in its group goes with it (no stray servers).
      killGroup();
    });
    // 'close' comes after 'exit' once both pipes have ended: all of the output is in.
    child.on('close', finish);
  });
}

/** The table's commands (a fresh table: nothing parsed into it). */
function tableCommands(): Command[] {
  return commandTable().build().commands;
}

function commandNames(): string[] {
  return tableCommands().map((c) => c.name);
}

function groupOf(name: string): string {
  return COMMAND_GROUPS.find((g) => g.commands.includes(name))?.name ?? 'other';
}

function usage(command: Command): string {
  return `svc ${command.rawName}${command.options.length > 0 ? ' [options]' : ''}`;
}

/** What `svc <name> --help` prints, taken from cac itself (it writes help with console.info). */
function helpText(name: string): string {
  const cli = commandTable().build();
  const lines: string[] = [];
  const info = console.info;
  console.info = (...parts: unknown[]) => void lines.push(parts.map(String).join(' '));
  try {
    cli.parse(['node', 'svc', name, '--help'], { run: false });
  } finally {
    console.info = info;
  }
  return lines.join('\n').replace(/[ \t]+$/gm, '');
}

/** The default a help text states: `(default 0.0.0.0)`, `default 8000 (…)`; null when it states none. */
function statedDefault(help: string): string | null {
  const parenthesised = /\(default:? ([^)]*)\)/.exec(help);
  if (parenthesised?.[1]) return parenthesised[1].trim();
  const inline = /\bdefault:? ([^,;()]+)/.exec(help);
  return inline?.[1]?.trim() || null;
}

/** The 1-based line of the table's file at or after `from` that contains `needle`, or undefined. */
function tableLine(needle: string, from: number): number | undefined {
  try {
    tableLines ??= readFileSync(commandTable().source.path, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const index = tableLines.findIndex((l, i) => i >= from && l.includes(needle));
  return index === -1 ? undefined : index + 1;
}

/** `cli/table.ts:<line>` of an option, searched from its command's line (`--host` is an option of several). */
function sourceAfter(needle: string, commandLine: number | undefined, fallback: string): string {
  if (commandLine === undefined) return fallback;
  const line = tableLine(needle, commandLine - 1);
  return line === undefined ? fallback : `${commandTable().source.name}:${line}`;
}

/** cac's usage errors, which `svc` reports on stderr and exits 1 on. */
const USAGE_ERROR = /^svc: (Unknown option `|option `[^`]*` value is missing|missing required args for command|Unused args: |unknown command )/m;

function normalise(code: number | null, stderr: string): 0 | 1 | 2 {
  if (code === 0) return 0;
  if (code === 2) return 2;
  if (code === 1 && USAGE_ERROR.test(stderr)) return 2;
  return 1;
}

/** A word as a shell would need it written (for the `command` line shown back). */
function quote(word: string): string {
  return /^[\w./:=@%+,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** An output stream kept up to `limit` bytes; what is left out is counted for the marker. */
class Capped {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  constructor(
    private readonly name: string,
    private readonly limit: number,
  ) {}

  add(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }

  text(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    if (this.dropped === 0) return text;
    return `${text}${text.endsWith('\n') ? '' : '\n'}[svc mcp: ${this.name} truncated: ${this.dropped} more bytes not shown]\n`;
  }
}
