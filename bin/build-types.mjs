#!/usr/bin/env node
// `npm run build:types` (run by `prepare`: `npm ci`/`npm install` in a checkout, `npm pack`): svc's declarations
// into dist/types/, from tsconfig.build.json, so an app's `tsc` reads them instead of re-checking svc's sources
// (package.json `exports` name them under the `types` condition).
//
// Decisions:
// - The sources import each other as `./x.ts`; tsc copies such specifiers into the declarations unchanged
//   (`rewriteRelativeImportExtensions` rewrites only JavaScript). A transformer on the declarations rewrites
//   relative `.ts`/`.mts` specifiers to `.js`/`.mjs`, which resolve to the `.d.ts` beside them — never back
//   to a source file, and without the app needing `allowImportingTsExtensions`.
// - Up to date is checked first, by modification times, before TypeScript is even loaded: no file of the last build
//   (its build info lists them) newer than that build → nothing to do, in milliseconds (a file added since only
//   matters once a file of the build imports it, and that one is newer). npm runs `prepare` of svc
//   installed from a folder (a link) on every `npm install` of the app, and `allowScripts` does not stop it.
// - Else incremental (dist/types.tsbuildinfo): only what changed is checked and written again.
// - What it says goes to stderr: `npm pack --json` prints this script's stdout before its JSON.
// - Declarations only: type errors are `npm run typecheck`'s job, so they are printed but do not stop the build
//   unless nothing could be emitted.
import { existsSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();
/** tsconfig.build.json's `tsBuildInfoFile`. */
const buildInfo = join(root, 'dist/types.tsbuildinfo');
const configPath = join(root, 'tsconfig.build.json');
if (!process.argv.includes('--force') && upToDate()) {
  process.stderr.write('svc: declarations in dist/types are up to date\n');
  process.exit(0);
}
const { default: ts } = await import('typescript');

/** `./x.ts` → `./x.js`, `../y.mts` → `../y.mjs`: relative specifiers only. */
function rewrite(spec) {
  return /^\.\.?\//.test(spec) ? spec.replace(/\.(m?)ts$/, '.$1js') : spec;
}

/** The declarations' import/export specifiers and import types, rewritten by {@link rewrite}. */
function specifiers(context) {
  const f = context.factory;
  const literal = (node) => (node && ts.isStringLiteral(node) && rewrite(node.text) !== node.text ? f.createStringLiteral(rewrite(node.text)) : undefined);
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) {
      const spec = literal(node.moduleSpecifier);
      if (spec) return f.updateImportDeclaration(node, node.modifiers, node.importClause, spec, node.attributes);
    } else if (ts.isExportDeclaration(node)) {
      const spec = literal(node.moduleSpecifier);
      if (spec) return f.updateExportDeclaration(node, node.modifiers, node.isTypeOnly, node.exportClause, spec, node.attributes);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const spec = literal(node.argument.literal);
      if (spec) return f.updateImportTypeNode(node, f.updateLiteralTypeNode(node.argument, spec), node.attributes, node.qualifier, node.typeArguments && ts.visitNodes(node.typeArguments, visit), node.isTypeOf);
    }
    return ts.visitEachChild(node, visit, context);
  };
  return (file) => (ts.isSourceFile(file) ? ts.visitEachChild(file, visit, context) : file);
}

const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => report([d]) };
const config = ts.getParsedCommandLineOfConfigFile(configPath, undefined, host);
if (!config) process.exit(1);
const program = ts.createIncrementalProgram({ rootNames: config.fileNames, options: config.options, projectReferences: config.projectReferences, configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(config) });
const result = program.emit(undefined, undefined, undefined, true, { afterDeclarations: [specifiers] });
report([...program.getConfigFileParsingDiagnostics(), ...program.getOptionsDiagnostics(), ...program.getSyntacticDiagnostics(), ...result.diagnostics]);
if (result.emitSkipped) process.exit(1);
// The time of this build, for upToDate(): tsc leaves the build info as it was when nothing changed.
if (existsSync(buildInfo)) utimesSync(buildInfo, new Date(), new Date());
process.stderr.write(`svc: declarations in ${join('dist', 'types')} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);

/** Whether the declarations were built after every file they come from last changed (and none was added). */
function upToDate() {
  if (!existsSync(buildInfo) || !existsSync(join(root, 'dist/types/index.d.ts'))) return false;
  const built = statSync(buildInfo).mtimeMs;
  let info;
  try {
    info = JSON.parse(readFileSync(buildInfo, 'utf8'));
  } catch {
    return false;
  }
  const dir = dirname(buildInfo);
  const known = new Set((info.fileNames ?? []).map((name) => (isAbsolute(name) ? name : resolve(dir, name))));
  const own = [...known].filter((file) => !file.split(/[\\/]/).includes('node_modules'));
  const inputs = [...own, configPath, join(root, 'tsconfig.json'), fileURLToPath(import.meta.url)];
  return inputs.every((file) => {
    try {
      return statSync(file).mtimeMs <= built;
    } catch {
      return false;
    }
  });
}

function report(diagnostics) {
  if (diagnostics.length === 0) return;
  process.stderr.write(ts.formatDiagnosticsWithColorAndContext(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' }));
}
