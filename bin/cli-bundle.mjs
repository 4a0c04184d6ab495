// The `svc start` command's own code as plain JavaScript, built once and kept until a source changes.
//
// Why: run through tsx, every one of svc's ~400 modules (and each of the ~2,000 files of typebox, which the main
// thread imports) makes two round trips to the loader's thread; measured, that was most of the main thread's
// start-up (~2 s). Built with esbuild (code split, so what is imported lazily stays lazy; every package external, so
// it loads as it would from the sources), the CLI loads as plain ES modules with no loader at all.
//
// Decisions:
// - Each source file's `import.meta.url` is replaced by that file's own URL before it is built: the paths svc finds
//   next to its sources (`../worker.ts`, `package.json`, `createRequire`) stay what they were.
// - The build lives in the `node_modules/.cache/svc-cli` nearest svc's folder (its packages resolve from there as
//   from the sources); where there is none, or it cannot be written, svc runs through tsx as before.
// - Fresh means: every input the last build read (esbuild's metafile) has its size and modification time, under the
//   same versions of Node, esbuild and svc. A check is one stat per input (~400, a few milliseconds).
// - Only commands whose code never imports a TypeScript file of the user's use it (`svc start`, not `--scale`).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const ENTRY = join(ROOT, 'cli', 'index.ts');
/** Builds kept whatever their age, and the age past which an older one goes: a process started from an older build may still load one of its lazy chunks (a long-running server), and one that just built it is about to. */
const KEPT = 3;
const KEPT_MS = 60 * 60 * 1000;

/**
 * Whether this command line runs on the built CLI (`svc start`, without `--scale`; `SVC_CLI_BUNDLE=0` turns it off).
 *
 * @example
 * if (useBundle(process.argv, process.env)) await import(await cliBundle());
 */
export function useBundle(argv, env) {
  if (env.SVC_CLI_BUNDLE === '0') return false;
  return argv[2] === 'start' && !argv.slice(3).some((a) => a === '--scale' || a.startsWith('--scale='));
}

/** A file of svc's own (svc itself may live in a `node_modules`, installed: only its own `node_modules` are not svc's). */
function ownSource(path) {
  const rel = relative(ROOT, path);
  return !rel.startsWith('..') && !isAbsolute(rel) && !rel.split(sep).includes('node_modules');
}

/** The cache folder, or undefined when svc's folder has no `node_modules` to resolve packages from. */
function cacheDir() {
  for (const modules of [join(ROOT, 'node_modules'), basename(dirname(ROOT)) === 'node_modules' ? dirname(ROOT) : undefined]) {
    if (!modules) continue;
    try {
      if (statSync(modules).isDirectory()) return join(modules, '.cache', 'svc-cli');
    } catch {
      // not this one
    }
  }
  return undefined;
}

function versions(esbuildVersion) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return `${process.version} esbuild ${esbuildVersion} svc ${pkg.version} build 3`;
}

function fresh(manifest, esbuildVersion) {
  if (!manifest || (esbuildVersion !== undefined && manifest.versions !== versions(esbuildVersion))) return false;
  for (const [file, size, mtimeMs] of manifest.inputs) {
    let s;
    try {
      s = statSync(join(ROOT, file));
    } catch {
      return false;
    }
    if (s.size !== size || s.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

function readManifest(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The URL of the built CLI's entry: the kept build when it is fresh, else a new one. Throws when it cannot be built
 * (the caller then runs the sources through tsx).
 *
 * @example
 * await import(await cliBundle()); // runs `svc` as `cli/index.ts` would
 */
export async function cliBundle() {
  const dir = cacheDir();
  if (!dir) throw new Error('no node_modules folder next to svc');
  const kept = readManifest(dir);
  // The versions are checked without loading esbuild: its version is read from its package.json.
  const esbuildVersion = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.resolve('esbuild'))), '..', 'package.json'), 'utf8')).version;
  if (kept && fresh(kept, esbuildVersion) && existsSync(join(dir, kept.build, 'index.js'))) return pathToFileURL(join(dir, kept.build, 'index.js')).href;
  return buildInThread(dir, esbuildVersion);
}

/**
 * The build, made in a thread of its own: esbuild's API and the TypeScript parser it loads (~80 MB) go away with
 * the thread instead of staying in the server's main thread for its whole life.
 */
function buildInThread(dir, esbuildVersion) {
  return new Promise((resolve, reject) => {
    const thread = new Worker(new URL(import.meta.url), { workerData: { svcCliBuild: { dir, esbuildVersion } } });
    let answered = false;
    thread.once('message', (m) => {
      answered = true;
      if (m.url) resolve(m.url);
      else reject(new Error(m.error));
    });
    thread.once('error', reject);
    thread.once('exit', (code) => {
      if (!answered) reject(new Error(`the CLI build thread exited with code ${code}`));
    });
  });
}

if (!isMainThread && workerData?.svcCliBuild) {
  const { dir, esbuildVersion } = workerData.svcCliBuild;
  build(dir, esbuildVersion).then(
    (url) => parentPort.postMessage({ url }),
    (error) => parentPort.postMessage({ error: error?.message ?? String(error) }),
  );
}

async function build(dir, esbuildVersion) {
  const esbuild = await import('esbuild');
  const { default: ts } = await import('typescript');
  mkdirSync(dir, { recursive: true });
  const name = `b-${Date.now().toString(36)}-${process.pid}`;
  const out = join(dir, name);
  const ownFile = /\.[mc]?ts$/;
  try {
    const result = await esbuild.build({
      entryPoints: { index: ENTRY },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      keepNames: true,
      sourcemap: 'linked',
      metafile: true,
      logLevel: 'silent',
      outdir: out,
      absWorkingDir: ROOT,
      banner: { js: '// svc: built from its sources by bin/cli-bundle.mjs (node_modules/.cache/svc-cli); rebuilt when one changes' },
      plugins: [
        {
          name: 'svc-own-urls',
          setup(b) {
            b.onLoad({ filter: ownFile }, (args) => {
              if (!ownSource(args.path)) return undefined;
              const source = readFileSync(args.path, 'utf8');
              return { contents: source.includes('import.meta.url') ? ownUrls(ts, args.path, source) : source, loader: 'ts' };
            });
          },
        },
      ],
    });
    const inputs = Object.keys(result.metafile.inputs)
      .map((p) => join(ROOT, p))
      .filter(ownSource)
      // This file too: a change to how the build is made makes a new one.
      .concat(fileURLToPath(import.meta.url))
      .map((p) => {
        const s = statSync(p);
        return [relative(ROOT, p), s.size, s.mtimeMs];
      });
    // The new build becomes the kept one in one rename (another process reads either the old manifest or the new).
    const tmp = join(dir, `manifest.${process.pid}.json`);
    writeFileSync(tmp, JSON.stringify({ build: name, versions: versions(esbuildVersion), inputs }));
    renameSync(tmp, join(dir, 'manifest.json'));
  } catch (error) {
    rmSync(out, { recursive: true, force: true });
    throw error;
  } finally {
    // The build service is not kept for this: what builds later (the worker bundle) starts its own when it needs one.
    await esbuild.stop();
  }
  prune(dir, name);
  return pathToFileURL(join(out, 'index.js')).href;
}

/** `source` with each `import.meta.url` expression (not one written in a string or a comment) replaced by the file's URL. */
function ownUrls(ts, path, source) {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const spans = [];
  const visit = (node) => {
    if (ts.isPropertyAccessExpression(node) && ts.isMetaProperty(node.expression) && node.expression.keywordToken === ts.SyntaxKind.ImportKeyword && node.name.text === 'url') {
      spans.push([node.getStart(file), node.getEnd()]);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  const url = JSON.stringify(pathToFileURL(path).href);
  let out = source;
  for (const [start, end] of spans.reverse()) out = `${out.slice(0, start)}${url}${out.slice(end)}`;
  return out;
}

/** Builds beyond the few newest that are also older than an hour. */
function prune(dir, current) {
  try {
    const builds = readdirSync(dir)
      .filter((n) => n.startsWith('b-') && n !== current)
      .map((n) => ({ n, t: statSync(join(dir, n)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const { n, t } of builds.slice(KEPT - 1)) if (Date.now() - t > KEPT_MS) rmSync(join(dir, n), { recursive: true, force: true });
  } catch {
    // another process pruned them
  }
}
