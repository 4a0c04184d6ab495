/**
 * The `svc` command: parses argv against the command table (`cli/table.ts`)
 * and runs the matched command. Each subcommand lives in `cli/commands/` and
 * is loaded only when used.
 */
import { buildCli } from './table.ts';

const cli = buildCli();

// `svc start` under npm: the chain up to npm noted first thing, before the server's slow start (cli/launcher.ts).
if (process.argv[2] === 'start') {
  const { recordLauncher, startedByNpm } = await import('./launcher.ts');
  if (startedByNpm()) recordLauncher();
}

// cac reads `--duration -3` as a missing value: bench says what is wrong with it (a usage error, exit 2).
if (process.argv[2] === 'bench') {
  const { negativeFlag } = await import('./commands/bench.ts');
  const wrong = negativeFlag(process.argv);
  if (wrong) {
    process.stderr.write(`svc bench: ${wrong}\n`);
    process.exit(2);
  }
}

try {
  cli.parse(process.argv, { run: false });
  if (!cli.matchedCommand) {
    if (cli.args.length > 0) {
      process.stderr.write(`svc: unknown command ${cli.args[0]} (try svc --help)\n`);
      process.exit(1);
    }
    if (!cli.options.help && !cli.options.version) cli.outputHelp();
  } else {
    await cli.runMatchedCommand();
  }
} catch (error) {
  process.stderr.write(`svc: ${(error as Error).message}\n`);
  process.exit(1);
}
