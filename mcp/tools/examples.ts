/**
 * The example tools (`list_examples`, `get_example`) and the example
 * catalogue the `svc://examples/<name>` resources are made from: the apps of
 * the package's `examples/` folder, then the snippet apps of
 * `mcp/examples/`. Both folders ship with the package and are
 * found from this module's URL. A name is looked up in the scanned catalogue,
 * never joined to a path, so no request reaches a file outside it.
 *
 * @example
 * listExamples({});                  // { categories: [{ name: 'todo', description, files: ['app.ts'], source }, …] }
 * getExample({ name: 'todo' });      // { name: 'todo', description, files: [{ path: 'app.ts', content }] }
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../catalog.ts';
import { ToolInputError } from '../types.ts';

/**
 * One example as `list_examples` shows it.
 * @example const c: ExampleCategory = { name: 'todo', description: 'A small todo service', files: ['app.ts'], source: 'examples/todo' };
 */
export type ExampleCategory = {
  name: string;
  description: string;
  /** Paths relative to the example's folder, `/`-separated. */
  files: string[];
  /** The example's folder, relative to the package (`examples/todo`). */
  source: string;
};

/**
 * One file of an example.
 * @example const f: ExampleFile = { path: 'app.ts', content: "import { Node } from 'svc';" };
 */
export type ExampleFile = { path: string; content: string };

/**
 * An example with its files.
 * @example const todo: Example | undefined = readExample('todo');
 */
export type Example = { name: string; description: string; source: string; files: ExampleFile[] };

/**
 * Where examples come from, relative to the package, in order (a name found twice keeps the first).
 * @example EXAMPLE_FOLDERS[0] // 'examples'
 */
export const EXAMPLE_FOLDERS: readonly string[] = ['examples', 'mcp/examples'];

/** Files an example may show: text that helps someone write an app. */
const TEXT_FILE = /\.(ts|mts|cts|js|mjs|cjs|json|md|toml|txt|html|css|sh|ya?ml)$/i;
/** Larger files are left out of an example (listed nowhere). */
const MAX_FILE_BYTES = 256 * 1024;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

let catalogue: Map<string, { dir: string; category: ExampleCategory }> | undefined;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // Dot folders (.svc data, editor files) and installed packages are not part of an example.
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile() && TEXT_FILE.test(entry.name) && statSync(path).size <= MAX_FILE_BYTES) out.push(path);
  }
  return out;
}

/** A README's first heading, else the first comment line of the first script. */
function describe(dir: string, files: string[]): string {
  const readme = files.find((f) => f.toLowerCase() === 'readme.md');
  if (readme) {
    const heading = /^#\s+(.+)$/m.exec(readFileSync(join(dir, readme), 'utf8'));
    if (heading?.[1]) return heading[1].trim();
  }
  for (const f of files.filter((f) => /\.(ts|mts|js|mjs)$/.test(f))) {
    // The first paragraph of the file's leading comment (its lines joined), not just its first line.
    const lines: string[] = [];
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const m = /^\s*\/\/\s?(.*)$/.exec(line);
      if (!m || (m[1] ?? '').trim() === '') {
        if (lines.length > 0 || !m) break;
        continue;
      }
      lines.push((m[1] ?? '').trim());
    }
    if (lines.length > 0) return lines.join(' ');
  }
  return 'An svc example';
}

function order(a: string, b: string): number {
  // README first, then the entry (app.ts / main.ts), then the rest by path.
  const rank = (p: string) => (/^readme\.md$/i.test(p) ? 0 : /^(app|main)\.ts$/.test(p) ? 1 : 2);
  return rank(a) - rank(b) || a.localeCompare(b);
}

function scan(): Map<string, { dir: string; category: ExampleCategory }> {
  const found = new Map<string, { dir: string; category: ExampleCategory }>();
  for (const folder of EXAMPLE_FOLDERS) {
    const base = fileURLToPath(new URL(`${folder}/`, PACKAGE_ROOT));
    let names: string[];
    try {
      names = readdirSync(base, { withFileTypes: true })
        .filter((e) => e.isDirectory() && NAME.test(e.name))
        .map((e) => e.name)
        .sort();
    } catch {
      continue; // a folder the package does not have
    }
    for (const name of names) {
      if (found.has(name)) continue;
      const dir = join(base, name);
      const files = filesUnder(dir)
        .map((f) => relative(dir, f).split(sep).join('/'))
        .sort(order);
      if (files.length === 0) continue;
      found.set(name, { dir, category: { name, description: describe(dir, files), files, source: `${folder}/${name}` } });
    }
  }
  return found;
}

function examples(): Map<string, { dir: string; category: ExampleCategory }> {
  catalogue ??= scan();
  return catalogue;
}

/**
 * Every example, in catalogue order.
 * @example exampleCategories().map((c) => c.name) // ['grafana', 'todo', 'access-grants', …]
 */
export function exampleCategories(): ExampleCategory[] {
  return [...examples().values()].map((e) => ({ ...e.category, files: [...e.category.files] }));
}

/**
 * One example with its files, or undefined for a name the catalogue does not have.
 * @example readExample('todo')?.files[0]?.path // 'app.ts'
 */
export function readExample(name: string): Example | undefined {
  const found = typeof name === 'string' ? examples().get(name) : undefined;
  if (!found) return undefined;
  const { category, dir } = found;
  return {
    name: category.name,
    description: category.description,
    source: category.source,
    files: category.files.map((path) => ({ path, content: readFileSync(join(dir, ...path.split('/')), 'utf8') })),
  };
}

/**
 * `list_examples`: the example categories, or only `category` (by name,
 * ignoring case). An unknown category answers no categories and an `error`
 * naming the known ones.
 *
 * @example
 * listExamples({ category: 'todo' }) // { categories: [{ name: 'todo', … }] }
 */
export function listExamples(args: { category?: string } = {}): { categories: ExampleCategory[]; error?: string } {
  if (args.category !== undefined && typeof args.category !== 'string') throw new ToolInputError('category must be a string');
  const all = exampleCategories();
  const wanted = args.category?.trim();
  if (!wanted) return { categories: all };
  const match = all.filter((c) => c.name.toLowerCase() === wanted.toLowerCase());
  if (match.length > 0) return { categories: match };
  return { categories: [], error: `no example category ${JSON.stringify(wanted)}; known: ${all.map((c) => c.name).join(', ')}` };
}

/**
 * `get_example`: an example's files, or `{ error }` for a name the catalogue
 * does not have (path-like names included).
 *
 * @example
 * getExample({ name: 'basic-walker' }) // { name, description, source, files: [{ path: 'app.ts', content }] }
 * getExample({ name: '../../etc' })    // { error: 'no example named "../../etc"; known: …' }
 */
export function getExample(args: { name: string }): Example | { error: string } {
  if (typeof args?.name !== 'string' || args.name.trim() === '') throw new ToolInputError('name must be a non-empty string');
  const example = readExample(args.name.trim());
  if (example) return example;
  return { error: `no example named ${JSON.stringify(args.name)}; known: ${[...examples().keys()].join(', ')}` };
}
