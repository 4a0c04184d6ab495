/**
 * What `execute_command` lets a tool client run, judged on the command as
 * `svc` itself will read it — never on how its arguments are spelt.
 *
 * Decisions:
 * - The requested command line is parsed with the same cac table the CLI
 *   uses (`parse(argv, { run: false })`), and the verdict is taken on what
 *   the parse yields: the matched command, each option's value (`--x=true`,
 *   `--no-x`, a repeated flag, an alias and a dotted `--x.y` all counted as
 *   what they parse to), and the operands. The child process is handed the
 *   very argv that was judged and parses it the same way.
 * - `--` is refused outright: cac hands what follows it to the action out of
 *   sight of the option checks.
 * - Help is pure help: when the parse asks for help, the child runs
 *   `svc <command> --help` and nothing else — none of the client's other
 *   arguments reach it.
 * - What may run: `start --faux` (loads the project's entry to list its
 *   endpoints; microservice mode forced off, so no gateway starts), `init`
 *   without `--force`, `db stats|inspect|quarantine list|show <id>` on the
 *   project's configured store, `bench compare a.json b.json`. Every other
 *   option, command and sub-command is refused, without starting anything.
 * - Every path (an entry, a folder, a result file, `--app`, and the default
 *   entry a command would pick) must resolve inside the project folder, with
 *   symlinks and `/proc/<pid>/…` links followed (`realpath`; for a path that
 *   does not exist yet, its nearest existing ancestor), no `..` segment, no
 *   URL, not into the project's `.svc/` (its generated secrets) nor into a
 *   `run_svc` folder.
 * - A module the command loads (`start`'s entry, `db --app`, the entry a
 *   command picks by itself) is the project's own source: where it really is
 *   (symlinks followed), not under `node_modules` (a package's code: a build
 *   tool, a server), not in a dot-folder (`.svc`, `.git`, …), and a `.ts`,
 *   `.mts`, `.js` or `.mjs` file.
 * - `init`'s folder is a new one of the project's: not under `node_modules`
 *   nor a dot-folder (it would write a package.json into an installed
 *   package), not named like a module or data file (`init main.ts` made a
 *   folder that hid the default entry). `svc init` itself refuses a folder
 *   that exists and holds anything (cli/commands/init.ts).
 * - The child's environment is built from an allowlist (PATH, HOME, locale,
 *   time zone, temp folder, terminal and Node's CA file), never the server's
 *   environment minus a denylist: no secret of the server reaches it.
 */
import type { CAC, Command } from 'cac';
import { lstatSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** The prefix of a `run_svc` folder in the temporary folder (tools/run.ts makes them). */
export const RUN_FOLDER_PREFIX = 'svc-mcp-run-';

/**
 * The judgement on one requested command: refused (with the reason, a usage
 * error), or the argv to run, its environment and the real project folder.
 *
 * @example { ok: true, argv: ['init', '--help'], help: true, env: { PATH: '/usr/bin' }, cwd: '/home/me/proj' }
 * @example { ok: false, reason: 'svc token mints credentials: never run by execute_command' }
 */
export type Verdict = { ok: true; argv: string[]; help: boolean; env: NodeJS.ProcessEnv; cwd: string } | { ok: false; reason: string };

/** Commands never run (their help aside). */
const NEVER: Readonly<Record<string, string>> = {
  token: 'svc token mints credentials: never run by execute_command',
  mcp: 'svc mcp is the tool server itself: not run by execute_command (start it from the client\'s configuration)',
};

/** How an option's parsed value is judged: a flag (true/false), a plain name, a path inside the project, a module of the project to load. */
type Kind = 'flag' | 'name' | 'path' | 'module';

/**
 * What a command does with a path: reads it (`read`), loads it as a module
 * (`module`: the project's own source only), or makes a new project folder
 * there (`folder`).
 */
type Use = 'read' | 'module' | 'folder';

interface Rule {
  /** The options taken, by cac's name for them (camelCase of the long form); any other is refused. */
  options: Readonly<Record<string, Kind>>;
  /** The reason to refuse, judging the parsed options and operands; undefined when allowed. */
  judge(options: Readonly<Record<string, string | number | boolean>>, operands: readonly string[]): string | undefined;
  /** The operands that are paths, and what the command does with them. */
  paths(operands: readonly string[]): readonly string[];
  use: Use;
  /** Modules the command loads when none is given (its default entry), relative to the project. */
  defaults?(options: Readonly<Record<string, string | number | boolean>>, operands: readonly string[]): readonly string[];
  /** Environment the command runs with besides the allowlisted one. */
  env?: Readonly<Record<string, string>>;
}

const RULES: Readonly<Record<string, Rule>> = {
  start: {
    options: { faux: 'flag', profile: 'name', main: 'flag' },
    judge: (o) => (o.faux === true ? undefined : 'svc start runs a server: execute_command runs it only with --faux (print the endpoints); start the app yourself to serve it'),
    paths: (operands) => operands,
    use: 'module',
    defaults: (_o, operands) => (operands.length === 0 ? ['main.ts', 'app.ts'] : []),
    // svc.toml may turn microservice mode on, where start would run a gateway before it looks at --faux.
    env: { SVC_MICROSERVICES_ENABLED: 'false' },
  },
  init: {
    options: { force: 'flag' },
    judge: (o) => (o.force === true ? 'svc init --force replaces files: not through execute_command' : undefined),
    paths: (operands) => operands,
    use: 'folder',
  },
  db: {
    options: { app: 'module', json: 'flag', profile: 'name' },
    judge: (_o, [sub, ...rest]) => {
      if ((sub === 'stats' || sub === 'inspect') && rest.length === 0) return undefined;
      if (sub === 'quarantine' && rest[0] === 'list' && rest.length === 1) return undefined;
      if (sub === 'quarantine' && rest[0] === 'show' && rest.length === 2) return undefined;
      return 'svc db through execute_command only reads: stats, inspect, quarantine list, quarantine show <id>';
    },
    paths: () => [],
    use: 'read',
    defaults: (o) => (o.app === undefined ? ['main.ts'] : []),
  },
  bench: {
    options: { failOnRegression: 'flag' },
    judge: (_o, operands) => judgeBench(operands),
    paths: (operands) => operands.slice(1),
    use: 'read',
  },
};

function judgeBench(operands: readonly string[]): string | undefined {
  if (operands[0] !== 'compare') return 'svc bench sends load and runs scenario code: execute_command runs only bench compare a.json b.json';
  if (operands.length !== 3) return 'bench compare takes two result files: bench compare a.json b.json';
  const notJson = operands.slice(1).find((f) => !f.endsWith('.json'));
  return notJson === undefined ? undefined : `${JSON.stringify(notJson)}: bench compare through execute_command reads .json result files only`;
}

/** Names of variables the command's environment takes from the server's (and `LC_*`). */
const ENV_ALLOWED = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TERM', 'NO_COLOR', 'FORCE_COLOR', 'NODE_EXTRA_CA_CERTS']);
/** A name that speaks of a secret is never passed on, allowlisted or not. */
const SECRET_NAME = /SECRET|TOKEN|PASSW|PASSPHRASE|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE/i;

/**
 * The environment of a command `execute_command` runs: the allowlisted
 * variables of `env` (PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*, TZ,
 * TMPDIR, TERM, NO_COLOR, FORCE_COLOR, NODE_EXTRA_CA_CERTS), none whose name
 * speaks of a secret, plus `extra`. Settings the server was given through
 * its environment (`SVC_*`, `DOCDB_URI`, `JWT_SECRET`…) do not apply to the
 * command: it reads the project's svc.toml.
 *
 * @example commandEnv({ PATH: '/usr/bin', JWT_SECRET: 's', AWS_SECRET_ACCESS_KEY: 'k' }) // { PATH: '/usr/bin' }
 */
export function commandEnv(env: NodeJS.ProcessEnv = process.env, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || SECRET_NAME.test(name)) continue;
    if (ENV_ALLOWED.has(name) || /^LC_[A-Z_]+$/.test(name)) out[name] = value;
  }
  return { ...out, ...extra };
}

/**
 * Judge `svc <command> ...args` for `execute_command` (the rules: the file's
 * comment). `cli` is a fresh, unparsed command table (cli/table.ts's
 * `buildCli()`); it is parsed here. `projectRoot` is where the command runs.
 *
 * @example judgeCommand(buildCli(), 'start', ['app.ts', '--faux'], '/proj')           // { ok: true, argv: ['start', 'app.ts', '--faux'], … }
 * @example judgeCommand(buildCli(), 'start', ['app.ts', '--faux', '--no-faux'], '/proj') // { ok: false, reason: 'svc start runs a server: …' }
 * @example judgeCommand(buildCli(), 'token', ['x', '--', '--help'], '/proj')           // { ok: false, reason: '"--" is refused: …' }
 */
export function judgeCommand(cli: CAC, command: string, args: readonly string[], projectRoot: string, env: NodeJS.ProcessEnv = process.env): Verdict {
  const refuse = (reason: string): Verdict => ({ ok: false, reason });
  const names = cli.commands.map((c) => c.name);
  if (!names.includes(command)) return refuse(`unknown command ${JSON.stringify(command)}; execute_command runs ${names.filter((n) => !(n in NEVER)).join(', ')} (and --help of any)`);
  if (args.includes('--')) return refuse('"--" is refused: execute_command judges every argument as an option or an operand, and cac hides what follows "--" from its option checks');
  let root: string;
  try {
    root = realpathSync.native(resolve(projectRoot));
  } catch (error) {
    return refuse(`the project folder ${projectRoot} cannot be resolved (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }

  // The parse `svc` will make of the same argv (cac writes help and version with console.info: kept off this process's output).
  const info = console.info;
  console.info = () => {};
  try {
    cli.parse(['node', 'svc', command, ...args], { run: false });
  } catch (error) {
    return refuse(`svc: ${(error as Error).message}`);
  } finally {
    console.info = info;
  }
  if (cli.options.help) return { ok: true, argv: [command, '--help'], help: true, env: commandEnv(env), cwd: root };
  const never = NEVER[command];
  if (never !== undefined) return refuse(never);
  const matched: Command | undefined = cli.matchedCommand;
  if (matched?.name !== command) return refuse(`svc: ${JSON.stringify(command)} did not parse as that command`);
  try {
    // cac's own usage errors, as `svc` would raise them before running anything.
    matched.checkUnknownOptions();
    matched.checkOptionValue();
    matched.checkRequiredArgs();
    matched.checkUnusedArgs();
  } catch (error) {
    return refuse(`svc: ${(error as Error).message}`);
  }
  const rule = RULES[command];
  if (!rule) return refuse(`svc ${command} is not run by execute_command`);

  const options = parsedOptions(cli, matched);
  if (typeof options === 'string') return refuse(options);
  for (const [name, value] of Object.entries(options)) {
    const kind = rule.options[name];
    if (kind === undefined) return refuse(`svc ${command} --${flagName(name)} is not run by execute_command (it takes ${Object.keys(rule.options).map((o) => `--${flagName(o)}`).join(', ')})`);
    if (kind === 'flag' && typeof value !== 'boolean') return refuse(`--${flagName(name)} is a flag (true or false), got ${JSON.stringify(value)}`);
    if (kind === 'name' && !/^[\w-]+$/.test(String(value))) return refuse(`--${flagName(name)} takes a plain name, got ${JSON.stringify(value)}`);
  }
  const operands = cli.args.map(String);
  const reason = rule.judge(options, operands);
  if (reason !== undefined) return refuse(reason);

  const paths: [string, Use][] = [
    ...rule.paths(operands).map((p): [string, Use] => [p, rule.use]),
    ...Object.entries(options)
      .filter(([name]) => rule.options[name] === 'path' || rule.options[name] === 'module')
      .map(([name, v]): [string, Use] => [String(v), rule.options[name] === 'module' ? 'module' : 'read']),
  ];
  for (const [path, use] of paths) {
    const wrong = outsideProject(path, root, false, use);
    if (wrong !== undefined) return refuse(wrong);
  }
  for (const path of rule.defaults?.(options, operands) ?? []) {
    // The entry a command picks by itself is the project's own, but a link out of the project (or into a package) is not.
    const wrong = outsideProject(path, root, true, 'module');
    if (wrong !== undefined) return refuse(`the default ${wrong}`);
  }
  return { ok: true, argv: [command, ...args], help: false, env: commandEnv(env, rule.env), cwd: root };
}

/**
 * Each option given, by its canonical name, with the one value every alias
 * and repetition of it parsed to — or why not (given twice with different
 * values, a list, an object from a dotted name).
 */
function parsedOptions(cli: CAC, command: Command): Record<string, string | number | boolean> | string {
  const seen = new Map<string, unknown[]>();
  for (const [key, value] of Object.entries(cli.options)) {
    if (key === '--') continue;
    const option = command.options.find((o) => o.names.includes(key)) ?? cli.globalCommand.options.find((o) => o.names.includes(key));
    // bench lets cac pass options it does not declare (it checks its own): not taken here.
    if (!option) return `svc ${command.name} --${flagName(key)} is not run by execute_command`;
    seen.set(option.name, [...(seen.get(option.name) ?? []), value]);
  }
  const out: Record<string, string | number | boolean> = {};
  for (const [name, values] of seen) {
    const first = values[0];
    if (!['string', 'number', 'boolean'].includes(typeof first) || values.some((v) => v !== first)) {
      return `--${flagName(name)} is given more than once or in forms that disagree (${values.map((v) => JSON.stringify(v)).join(', ')}): give it once`;
    }
    out[name] = first as string | number | boolean;
  }
  return out;
}

/** `failOnRegression` → `fail-on-regression` (how the flag is written). */
function flagName(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

let runFolders: string | undefined;

/** The extensions of a module a command may load (the project's own source). */
const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs']);
/** Names a new project folder does not take: a module's or a data file's (`init main.ts` would hide the entry). */
const FILE_LIKE = /\.(?:[cm]?[jt]s|tsx|jsx|json|toml)$/i;

/**
 * Why `raw` (a path as the command would read it, relative to `root`, the
 * real project folder) is not inside the project, or undefined when it is.
 * `optional`: a path that does not exist is fine as it is (a default entry).
 * `use`: what the command does with it — a `module` to load must be the
 * project's own source (not under `node_modules`, not in a dot-folder, a
 * `.ts`/`.mts`/`.js`/`.mjs` file), a new `folder` not under `node_modules` or
 * a dot-folder nor named like a file; judged where the path really is.
 *
 * @example outsideProject('/proc/4242/cwd/evil.mjs', '/proj') // '"/proc/4242/cwd/evil.mjs" is /tmp/svc-mcp-run-x/evil.mjs, outside the project …'
 * @example outsideProject('node_modules/tshy/dist/esm/index.js', '/proj', false, 'module') // '… is in node_modules: …'
 */
export function outsideProject(raw: string, root: string, optional = false, use: Use = 'read'): string | undefined {
  const shown = JSON.stringify(raw);
  if (raw.includes('\0')) return `${shown}: a path holds no NUL byte`;
  if (/^[a-z][\w+.-]*:/i.test(raw)) return `${shown}: execute_command takes paths inside the project, not URLs`;
  if (raw.split(/[\\/]/).includes('..')) return `${shown}: execute_command takes paths inside the project, without ".."`;
  // No "..": resolving only joins; the real location comes from the file system below.
  let path = isAbsolute(raw) ? resolve(raw) : resolve(root, raw);
  // Resolved here, these name this server's own files; in the command, its own: what was judged is not what would be read.
  if (/^\/(proc\/(self|thread-self)|dev\/(fd|stdin|stdout|stderr))(\/|$)/.test(path)) return `${shown} names the files of the process that opens it: refused`;
  const tail: string[] = [];
  let real: string | undefined;
  while (real === undefined) {
    try {
      real = realpathSync.native(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') return `${shown} cannot be resolved (${code ?? String(error)}): refused`;
      let dangling = false;
      try {
        dangling = lstatSync(path).isSymbolicLink();
      } catch {
        // Not there at all: its parent decides.
      }
      if (dangling) return `${shown} is a link to nothing (${path}): refused`;
      if (optional && tail.length === 0) return undefined;
      const parent = dirname(path);
      if (parent === path) return `${shown} cannot be resolved: refused`;
      tail.unshift(basename(path));
      path = parent;
    }
  }
  const full = join(real, ...tail);
  const where = full === resolve(root, raw) ? shown : `${shown} is ${full}, which is`;
  if (!within(full, root)) return `${where} outside the project (${root}): execute_command takes paths inside it only`;
  if (within(full, join(root, '.svc'))) return `${where} in the project's .svc folder (its generated secrets): refused`;
  try {
    runFolders ??= realpathSync.native(tmpdir());
  } catch {
    runFolders = tmpdir();
  }
  const inTmp = within(full, runFolders) ? relative(runFolders, full).split(sep)[0] : undefined;
  if (inTmp?.startsWith(RUN_FOLDER_PREFIX) && !within(root, join(runFolders, inTmp))) return `${where} in a run_svc folder: refused`;
  if (use === 'read') return undefined;
  const segments = relative(root, full).split(sep).filter((s) => s !== '');
  if (segments.includes('node_modules')) {
    return use === 'module'
      ? `${where} in node_modules: execute_command loads the project's own modules only, not a package's code`
      : `${where} in node_modules: svc init does not write into installed packages`;
  }
  const dotted = segments.find((s) => s.startsWith('.'));
  if (dotted !== undefined) return `${where} in ${JSON.stringify(dotted)}, a dot-folder: execute_command ${use === 'module' ? 'loads the project\'s own source only' : 'makes new folders of the project only'}`;
  if (use === 'module' && segments.length > 0 && !MODULE_EXTENSIONS.has(extname(full))) {
    return `${where} not a module: execute_command loads .ts, .mts, .js or .mjs files of the project only`;
  }
  if (use === 'folder' && FILE_LIKE.test(segments.at(-1) ?? '')) return `${where} named like a file: svc init makes a project folder, not ${JSON.stringify(segments.at(-1))}`;
  return undefined;
}
