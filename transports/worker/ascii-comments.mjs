// Plain JavaScript, so that its test imports it as compile.ts does.
const NON_ASCII = /[^\x00-\x7f]/g;

/**
 * The comment lines of esbuild's output: a line starting `//`, and a block
 * comment from a line starting `/*` to its end — each non-ASCII character on
 * them made `?`, one code unit for one (source maps keep their columns).
 * Unchecked: for code whose only non-ASCII characters outside comments could
 * be in strings and untagged templates (esbuild escapes those) — svc's own,
 * as test/meta/ascii-sources.test.ts checks (no tagged template or regular
 * expression of svc's holds one). Anyone else's: {@link asciiComments}.
 *
 * @param {string} code
 * @returns {string}
 * @example
 * asciiCommentLines('// a \u2014 b\nconst a = 1;\n') // '// a ? b\nconst a = 1;\n'
 */
export function asciiCommentLines(code) {
  if (!/[^\x00-\x7f]/.test(code)) return code;
  let inBlock = false;
  return code
    .split('\n')
    .map((line) => {
      let from = 0;
      if (!inBlock) {
        const lead = line.length - line.trimStart().length;
        if (line.startsWith('//', lead)) return line.replace(NON_ASCII, '?');
        if (!line.startsWith('/*', lead)) return line;
        inBlock = true;
        from = lead + 2;
      }
      const close = line.indexOf('*/', from);
      if (close === -1) return line.replace(NON_ASCII, '?');
      inBlock = false;
      return line.slice(0, close).replace(NON_ASCII, '?') + line.slice(close);
    })
    .join('\n');
}

/**
 * A bundle whose comments hold only ASCII. esbuild escapes non-ASCII
 * characters in strings (`charset: 'ascii'`, its default) but prints the
 * comments it keeps as written, each on lines of its own: one em dash in a
 * comment makes V8 hold the module's whole source as two bytes a character, in
 * every thread that loads it (measured: 3.2 MB for a 1.6 MB chunk). A line is
 * not always what it looks like — one inside a `String.raw` or other tagged
 * template may start with `//` — so the rewrite is kept only if the code
 * means the same: esbuild's `transform`, given as `transform`, prints both
 * without comments and they must be equal; otherwise `code` comes back as it
 * was.
 *
 * @param {string} code
 * @param {(code: string, options: object) => Promise<{ code: string }>} transform esbuild's
 * @returns {Promise<string>}
 * @example
 * await asciiComments('// a \u2014 b\nconst a = 1;\n', transform) // '// a ? b\nconst a = 1;\n'
 */
export async function asciiComments(code, transform) {
  const rewritten = asciiCommentLines(code);
  if (rewritten === code) return code;
  const meaning = async (c) => (await transform(c, { loader: 'js', format: 'esm', minifyWhitespace: true, legalComments: 'none', charset: 'utf8' })).code;
  try {
    const [before, after] = await Promise.all([meaning(code), meaning(rewritten)]);
    return before === after ? rewritten : code;
  } catch {
    return code;
  }
}
