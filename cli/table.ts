/**
 * The table of `svc` commands: every subcommand with its arguments, options,
 * examples and action, registered on a fresh cac instance and never parsed
 * here. `cli/index.ts` parses `process.argv` against it; the tool server's
 * `list_commands` / `get_command` read it (mcp/tools/commands.ts), handed
 * over by `svc mcp` ({@link commandTable}).
 * Each action loads its `cli/commands/<name>.ts` only when it runs.
 */
import { cac, type CAC } from 'cac';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CommandTable } from '../mcp/index.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * What each command's positional arguments are, by command name then argument
 * name (cac keeps no help for positionals; `svc <command> --help` shows them
 * in the usage line only, and `get_command` reports these sentences).
 *
 * @example
 * ARGUMENT_HELP.start?.entry // 'The app module (.ts/.js/.mjs); default main.ts, else app.ts'
 */
export const ARGUMENT_HELP: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  start: { entry: 'The app module (.ts/.js/.mjs); default main.ts, else app.ts' },
  token: {
    user_id: "The user's id (a registered user's username or email finds them too); with --create, the new service account's id",
    entry: 'The app module whose data folder and secret are used; default main.ts, else app.ts',
  },
  db: {
    command: 'inspect, stats, alias, recover-all, quarantine or copy',
    args: 'The operands of that command (alias add <old> <new>; quarantine list|show|drop <id>)',
  },
  bench: {
    target: 'A URL of a running server, an entry file to start, or compare',
    rest: 'compare: the two result.json files (before, after)',
  },
  init: { dir: 'The folder of the new project (default: the current folder)' },
  scale: { action: 'status, destroy or rollback', entry: 'The app module whose [scale.orchestrator] names the deployment; default main.ts, else app.ts' },
  status: { entry: 'The app module whose [scale.orchestrator] names the deployment; default main.ts, else app.ts' },
  destroy: { entry: 'The app module whose [scale.orchestrator] names the deployment; default main.ts, else app.ts' },
};

/**
 * Build the `svc` command table: a cac instance with every command, its
 * options, examples and action, plus `--help` and `--version`. Nothing is
 * parsed and nothing runs until the caller parses argv.
 *
 * @example
 * const cli = buildCli();
 * cli.parse(process.argv, { run: false });
 * if (cli.matchedCommand) await cli.runMatchedCommand();
 */
export function buildCli(): CAC {
  const cli = cac('svc');

  const startCommand = cli
    .command('start [entry]', 'Serve every walker and function of an app (default entry: main.ts, else app.ts)')
    .option('-p, --port <port>', 'Port, default 8000 ([scale.server] port, SVC_PORT); the next free one if taken; 0: any free port')
    .option('--host <host>', 'Bind address (default 0.0.0.0)')
    .option('-f, --faux', 'Print the generated endpoints and exit')
    .option('-d, --dev', 'Reload on file changes, keeping the port')
    .option('-n, --no-client', 'Serve the API only (static files from public/ are still served)')
    .option('--profile <name>', 'Layer svc.<name>.toml; prod also demands real secrets')
    .option('-a, --api_port <port>', 'Port for the API (overrides --port when set)')
    .option('-m, --main', 'Treat the entry as the main module (always true; accepted for compatibility)')
    .option('--workers <n>', 'Worker threads, default 0: one per core (each serves the port on uWebSockets.js; on node:http only the first)')
    .option('--scale', 'Deploy to Kubernetes ([scale.orchestrator]): with --dry-run, print the plan')
    .option('--dry-run', 'With --scale: print the plan (every object an apply would send, the image, the URL) and change nothing')
    .option('--show-yaml', 'With --scale --dry-run: print the exact manifests as YAML (Secret values redacted)')
    .option('--show-secrets', 'With --show-yaml: print Secret values too')
    .option('-b, --build', 'With --scale: build and push the app image (registry credentials from .env: SVC_REGISTRY_USERNAME, SVC_REGISTRY_PASSWORD)')
    .option('--no-push', 'With --scale --build: build the image here only (no registry, no credentials)')
    .option('--target <target>', 'With --scale: the deployment target (orchestrator, the default: Kubernetes)')
    .option('-e, --experimental', 'With --scale --build: install svc from [scale.orchestrator] svc_repo_url instead of this copy')
    .option('--enable-tls', 'With --scale: HTTPS for [scale.orchestrator] domain through cert-manager (installed when the cluster has none; needs cert_manager_email)')
    .example('svc start app.ts --port 8000')
    .example('svc start app.ts --scale --dry-run --show-yaml   # the Kubernetes manifests, validated')
    .example('svc start app.ts --scale                # apply to the cluster of the kubeconfig, roll out, probe')
    .example('svc start --dev                 # main.ts (or app.ts) of this folder, reloaded on changes')
    .action(async (entry: string | undefined, options: Record<string, unknown>) => {
      const { start } = await import('./commands/start.ts');
      await start(entry, options);
    });
  // cac gives a negated option (`--no-client`) the default true and prints it as "(default: true)": noise, nothing reads it.
  for (const option of startCommand.options) if (option.negated) delete option.config.default;

  cli
    .command('token [user_id] [entry]', 'Print a JWT for a user, signed with the server secret (for trying private endpoints)')
    .option('--username <name>', 'The user with this username or email (refused when nobody has it), instead of a user id')
    .option('--create', 'Make a service account with this user id when nobody has it (refused otherwise)')
    .option('--role <role>', 'Role of a new service account (default user)')
    .option('--days <n>', 'Lifetime in days (default [scale.jwt] exp_delta_days)')
    .option('--profile <name>', 'Configuration profile')
    .example('svc token 7c1e…e2 app.ts        # the user with this id (refused when nobody has it)')
    .example('svc token --username alice app.ts # the user with this username or email')
    .example('svc token ci-bot --create app.ts  # a service account ci-bot, made when nobody has that id')
    .example('curl -H "Authorization: Bearer $(npx svc token --username alice app.ts)" …')
    .action(async (userId: string | undefined, entry: string | undefined, options: Record<string, unknown>) => {
      const { token } = await import('./commands/token.ts');
      await token(userId, entry, options);
    });

  cli
    .command('db [command] [...args]', 'Operate the stores: inspect, stats, alias add <old> <new>, recover-all, quarantine list|show|drop <id>, copy --from --to')
    .option('--app <entry>', 'The app entry module: decode documents against its classes (inspect, recover-all); its folder is the project')
    .option('--db <uri|path>', 'The store to act on (default the configured one: [scale.database] docdb_uri / DOCDB_URI, else the data folder)')
    .option('--from <uri|path>', 'copy: the source (a URI, a SQLite file, or a data folder; default the configured store)')
    .option('--to <uri|path>', 'copy: the destination (same forms; default the configured store)')
    .option('--restart', 'copy: ignore the checkpoint of an interrupted copy and start over')
    .option('--json', 'Answer with one JSON document on stdout')
    .option('--profile <name>', 'Configuration profile')
    .example('svc db stats')
    .example('svc db inspect --app app.ts')
    .example('svc db alias add Task Chore && svc db recover-all --app app.ts')
    .example('svc db copy --to postgres://svc@db/svc   # stop the service first')
    .action(async (command: string | undefined, args: string[], options: Record<string, unknown>) => {
      const { db } = await import('./commands/db.ts');
      await db(command, args, options);
    });

  cli
    .command('sandbox <action> [id]', 'The project\'s sandboxes: list, logs <id> [--follow], exec <id> -- <command>, stop <id>, destroy <id>, cleanup; proxy: the preview routing proxy on Kubernetes')
    .option('--user <id>', 'list: only this user\'s sandboxes')
    .option('--follow', 'logs: keep printing new output until the sandbox stops (or Ctrl-C)')
    .option('--json', 'list, stop, destroy, cleanup: answer with one JSON document on stdout')
    .option('--profile <name>', 'Configuration profile')
    .example('svc sandbox list')
    .example('svc sandbox logs sbx-1a2b3c4d5e6f7a8b --follow')
    .example('svc sandbox exec sbx-1a2b3c4d5e6f7a8b -- ls -la')
    .example('svc sandbox cleanup')
    .example('PROXY_PORT=8080 svc sandbox proxy   # in a pod: routes {sandbox_id}.preview.<domain> to sandbox pods')
    .action(async (action: string, id: string | undefined, options: Record<string, unknown>) => {
      const { sandbox } = await import('./commands/sandbox.ts');
      await sandbox(action, id, options);
    });

  cli
    .command('bench [target] [...rest]', 'Load an app (a URL, or an entry file it starts) with a scenario; write result.json and report.html. compare a.json b.json: what changed beyond noise')
    .option('--scenario <file>', 'A scenario: .ts/.mts/.js/.mjs (default export), .json or .toml (default: every public walker and function that takes no required field)')
    .option('--duration <s>', 'Measured seconds (default 10)')
    .option('--warmup <s>', 'Warm-up seconds before measuring (default 2)')
    .option('--connections <n>', 'Closed loop: this many connections (default 64)')
    .option('--rate <r>', 'Open loop: this many requests per second in total (instead of --connections)')
    .option('--threads <n>', 'Load-generator threads (default 1)')
    .option('--users <n>', 'Users registered and logged in first; requests are sent as them (the default scenario then loads private endpoints too)')
    .option('--out <dir>', 'Where result.json and report.html go (default bench-results/<time>)')
    .option('--timeout <ms>', 'Per-request timeout in milliseconds (default: the run\'s length, at most 30,000)')
    .option('--admin-token <token>', "An admin token (or SVC_BENCH_ADMIN_TOKEN): the server's /admin/stats and /metrics before and after")
    .option('--fail-on-regression', 'compare: exit 1 when a figure got worse beyond noise')
    // bench checks its flags itself: an unknown one is a usage error (exit 2).
    .allowUnknownOptions()
    .example('svc bench app.ts --duration 30 --users 20')
    .example('svc bench http://127.0.0.1:8000 --scenario bench/checkout.ts --rate 2000')
    .example('svc bench compare bench-results/before/result.json bench-results/after/result.json')
    .action(async (target: string | undefined, rest: string[], options: Record<string, unknown>) => {
      const { bench } = await import('./commands/bench.ts');
      await bench(target, rest, options);
    });

  cli
    .command('init [dir]', 'Make a new project in dir, a new or empty folder (default: the current folder): package.json, app.ts, test/app.test.ts, svc.toml, tsconfig.json, .gitignore')
    .option('--force', 'Write into a folder that is not empty, replacing files that already exist')
    .example('svc init ../myapp && cd ../myapp && npm install && npm run dev')
    .action(async (dir: string | undefined, options: { force?: boolean }) => {
      const { init } = await import('./commands/init.ts');
      await init(dir, options);
    });

  // No cac defaults for --port and --host: a flag wins over svc.toml's [mcp] section, which wins over the built-in
  // value, so the command must see whether the flag was given.
  const clusterOptions = (command: ReturnType<CAC['command']>) =>
    command
      .option('--profile <name>', 'Configuration profile (the same as the deploy)')
      .option('--target <target>', 'The deployment target (orchestrator, the default: Kubernetes)')
      .option('--watch', 'status: follow changes until interrupted')
      .option('--json', 'status: one JSON object per report, for scripts')
      .option('--interval <ms>', 'status --watch: ms between reads (default 2000)')
      .option('-y, --yes', 'destroy: do not ask for confirmation')
      .option('--keep-data', 'destroy: keep the databases\' claims and credential Secrets')
      .option('--to <revision>', 'rollback: the revision to return to (default: the one before the current)');
  clusterOptions(cli.command('scale <action> [entry]', 'A deployed app: status (one row per component), destroy (asks y), rollback [--to N]'))
    .example('svc scale status app.ts --watch')
    .example('echo y | svc scale destroy app.ts          # or --yes; --keep-data keeps the claims')
    .example('svc scale rollback app.ts --to 3')
    .action(async (action: string, entry: string | undefined, options: Record<string, unknown>) => {
      const commands = await import('./commands/cluster.ts');
      if (action === 'status') return commands.scaleStatus(entry, options);
      if (action === 'destroy') return commands.scaleDestroy(entry, options);
      if (action === 'rollback') return commands.scaleRollback(entry, options);
      process.stderr.write(`svc: scale ${action}: the actions are status, destroy and rollback (deploy with svc start <entry> --scale)\n`);
      process.exit(2);
    });
  clusterOptions(cli.command('status [entry]', 'The older form of svc scale status')).action(async (entry: string | undefined, options: Record<string, unknown>) => {
    const { scaleStatus } = await import('./commands/cluster.ts');
    await scaleStatus(entry, options);
  });
  clusterOptions(cli.command('destroy [entry]', 'The older form of svc scale destroy')).action(async (entry: string | undefined, options: Record<string, unknown>) => {
    const { scaleDestroy } = await import('./commands/cluster.ts');
    await scaleDestroy(entry, options);
  });

  cli
    .command('mcp', 'Serve the tool-protocol server (MCP) for AI clients: docs, compiler tools, prompts')
    .option('--transport <name>', 'stdio, sse or streamable-http (default [mcp] transport, stdio)')
    .option('--port <port>', 'Port for sse and streamable-http (default [mcp] port, 3001)')
    .option('--host <host>', 'Bind address for sse and streamable-http (default [mcp] host, 127.0.0.1)')
    .option('--inspect', 'Print resources, tools and prompts, then exit')
    .option('--profile <name>', 'Configuration profile')
    .example('svc mcp                                   # stdio, for a client that starts it')
    .example('svc mcp --transport streamable-http --port 3001   # POST /mcp')
    .example('svc mcp --transport sse                   # GET /sse, POST /messages/')
    .example('svc mcp --inspect')
    .action(async (options: Record<string, unknown>) => {
      const { mcp } = await import('./commands/mcp.ts');
      await mcp(options, commandTable());
    });

  cli
    .command('docs', 'Serve the documentation site on this machine (built with VitePress first when missing or older than the pages)')
    .option('--port <port>', 'Port (default 5173, or the next free one)')
    .option('--host <host>', 'Bind address (default 127.0.0.1)')
    .example('svc docs                                  # http://127.0.0.1:5173/')
    .example('svc docs --port 8080')
    .action(async (options: { port?: string; host?: string }) => {
      const { docs } = await import('./commands/docs.ts');
      await docs(options);
    });

  cli.help();
  cli.version(version);
  return cli;
}

/**
 * The command table as the tool server's command tools take it: this file's
 * builder, the help of positional arguments, and this file itself (read for
 * the `source` lines of `get_command`). `svc mcp` hands it to the tool
 * server, which imports nothing of cli/.
 *
 * @example
 * useCommandTable(commandTable()); // in cli/commands/mcp.ts
 */
export function commandTable(): CommandTable {
  return { build: buildCli, argumentHelp: ARGUMENT_HELP, source: { name: 'cli/table.ts', path: fileURLToPath(import.meta.url) } };
}
