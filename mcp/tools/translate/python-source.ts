/**
 * Reading Python source as text, for `py_to_svc` (no Python is run or
 * needed): logical lines nested by indentation, top-level splitting outside
 * brackets and strings, `def` signatures and parameters, jac-style brace
 * bodies, string literals, and literals as JavaScript expressions.
 */

/** One logical line of Python: brackets and `\` continuations joined (newlines kept), comments dropped. */
export interface PyStmt {
  text: string;
  indent: number;
  line: number;
  end: number;
  body: PyStmt[];
}

/** A parameter or field: `name: type = default`, with `*` / `**` as `star`. */
export interface PyParam {
  name: string;
  type?: string;
  default?: string;
  star: 0 | 1 | 2;
}

/** Python's logical lines: comments dropped, bracketed and `\`-continued lines joined (their newlines kept). */
export function logicalLines(src: string, warn: (line: number, message: string) => void): PyStmt[] {
  const out: PyStmt[] = [];
  let text = '';
  let depth = 0;
  let opened = 0;
  let line = 1;
  let start = 1;
  let indent = 0;
  let atLineStart = true;
  const flush = (): void => {
    if (text.trim() !== '') out.push({ text: text.trim(), indent, line: start, end: line, body: [] });
    text = '';
  };
  for (let i = 0; i < src.length; ) {
    if (atLineStart) {
      let width = 0;
      while (src[i] === ' ' || src[i] === '\t') width += src[i++] === '\t' ? 8 - (width % 8) : 1;
      indent = width;
      start = line;
      atLineStart = false;
      continue;
    }
    const c = src[i] as string;
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '"' || c === "'") {
      const end = stringEnd(src, i);
      const s = src.slice(i, end);
      text += s;
      line += s.match(/\n/g)?.length ?? 0;
      i = end;
    } else if (c === '\\' && (src[i + 1] === '\n' || (src[i + 1] === '\r' && src[i + 2] === '\n'))) {
      text += '\n';
      line++;
      i += src[i + 1] === '\r' ? 3 : 2;
    } else if (c === '\n') {
      i++;
      if (depth > 0) {
        text += '\n';
        line++;
        continue;
      }
      flush();
      line++;
      atLineStart = true;
    } else {
      if (c === '(' || c === '[' || c === '{') {
        if (depth === 0) opened = line;
        depth++;
      } else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
      if (c !== '\r') text += c;
      i++;
    }
  }
  if (depth > 0) warn(opened, 'a bracket opened here is never closed: the rest of the input was read as one statement');
  flush();
  return out;
}

/** Where the string literal starting at `i` ends (past its closing quote, or at the line's end when unterminated). */
function stringEnd(src: string, i: number): number {
  const q = src[i] as string;
  const triple = src.startsWith(q.repeat(3), i);
  const close = triple ? q.repeat(3) : q;
  let j = i + close.length;
  while (j < src.length) {
    if (src[j] === '\\') j += 2;
    else if (src.startsWith(close, j)) return j + close.length;
    else if (!triple && src[j] === '\n') return j;
    else j++;
  }
  return src.length;
}

/** Nest logical lines by indentation: each line's block is the more-indented lines after it. */
export function tree(lines: PyStmt[]): PyStmt[] {
  const root: PyStmt = { text: '', indent: -1, line: 0, end: 0, body: [] };
  const stack = [root];
  for (const l of lines) {
    while (stack.length > 1 && l.indent <= (stack.at(-1) as PyStmt).indent) stack.pop();
    for (const open of stack) open.end = Math.max(open.end, l.end);
    (stack.at(-1) as PyStmt).body.push(l);
    stack.push(l);
  }
  return root.body;
}

/** Scan `text` at bracket depth 0, outside strings: `visit(i)` for each such index. */
function scanTop(text: string, visit: (i: number, c: string) => boolean | void): void {
  let depth = 0;
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      i = stringEnd(text, i);
      continue;
    }
    if (depth === 0 && visit(i, c) === true) return;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
    i++;
  }
}

export function topIndex(text: string, ch: string): number {
  let at = -1;
  scanTop(text, (i, c) => {
    if (c === ch) {
      at = i;
      return true;
    }
    return false;
  });
  return at;
}

/** Split at top-level `sep` (outside brackets and strings); empty parts dropped. */
export function splitTop(text: string, sep: string): string[] {
  const parts: string[] = [];
  let from = 0;
  scanTop(text, (i, c) => {
    if (c === sep) {
      parts.push(text.slice(from, i));
      from = i + 1;
    }
  });
  parts.push(text.slice(from));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** A compound statement's header and what follows its colon on the same line (a one-line body). */
export function splitHeader(text: string): { head: string; inline: string } {
  const colon = topIndex(text, ':');
  if (colon === -1) return { head: text.trim(), inline: '' };
  return { head: text.slice(0, colon).trim(), inline: text.slice(colon + 1).trim() };
}

/** `def name(params) -> ret:` (also `async def`, `def:pub name`, a jac `{ … }` body). */
export function defSignature(text: string): { name: string; params: PyParam[]; returns?: string; async: boolean; access?: string } | undefined {
  const m = /^(async\s+)?def\s*(?::\s*(pub|priv|protect)\s+)?([A-Za-z_]\w*)\s*\(/.exec(text);
  if (!m) return undefined;
  const open = m[0].length - 1;
  let close = -1;
  scanTop(text.slice(open + 1), (i, c) => {
    if (c === ')') {
      close = open + 1 + i;
      return true;
    }
    return false;
  });
  if (close === -1) return undefined;
  const rest = text.slice(close + 1);
  const ret = /^\s*->\s*([\s\S]*?)\s*(:|\{)/.exec(rest);
  return {
    name: m[3] as string,
    params: splitTop(text.slice(open + 1, close), ',').filter((p) => p !== '/' && p !== '*').map(param),
    returns: ret?.[1] ? ret[1].replace(/\s+/g, ' ') : undefined,
    async: m[1] !== undefined,
    access: m[2],
  };
}

/** `name: type = default` (also `*args: T`, `**kw: T`, `name = default`). */
export function param(text: string): PyParam {
  let t = text.trim().replace(/;\s*$/, '');
  let star: 0 | 1 | 2 = 0;
  if (t.startsWith('**')) star = 2;
  else if (t.startsWith('*')) star = 1;
  t = t.slice(star);
  let def: string | undefined;
  const eq = topIndex(t, '=');
  if (eq !== -1) {
    def = t.slice(eq + 1).trim();
    t = t.slice(0, eq);
  }
  const colon = topIndex(t, ':');
  const name = (colon === -1 ? t : t.slice(0, colon)).trim();
  const type = colon === -1 ? undefined : t.slice(colon + 1).trim().replace(/\s+/g, ' ');
  return { name, type: type || undefined, default: def, star };
}

/** The items of a jac brace body: `has …;` statements and `can`/`def` blocks, with their offsets. */
export function jacItems(body: string): { text: string; offset: number }[] {
  const items: { text: string; offset: number }[] = [];
  let from = 0;
  let depth = 0;
  for (let i = 0; i < body.length; ) {
    const c = body[i] as string;
    if (c === '"' || c === "'") {
      i = stringEnd(body, i);
      continue;
    }
    if (c === '{' || c === '(' || c === '[') depth++;
    else if (c === '}' || c === ')' || c === ']') {
      depth = Math.max(0, depth - 1);
      if (depth === 0 && c === '}') {
        push(from, i + 1);
        from = i + 1;
      }
    } else if (c === ';' && depth === 0) {
      push(from, i);
      from = i + 1;
    }
    i++;
  }
  push(from, body.length);
  return items;

  function push(a: number, b: number): void {
    const raw = body.slice(a, b);
    const lead = raw.length - raw.trimStart().length;
    const text = raw.trim();
    if (text !== '' && text !== ';') items.push({ text, offset: a + lead });
  }
}

export function isString(text: string): boolean {
  return /^[rRuU]?("""|'''|"|')/.test(text) && stringEnd(text, text.search(/["']/)) === text.length;
}

/** The value of a Python string literal (adjacent literals joined), or undefined for f- and b-strings. */
export function pyString(text: string): string | undefined {
  let value = '';
  let i = 0;
  const t = text.trim();
  while (i < t.length) {
    const prefix = /^[A-Za-z]{0,2}/.exec(t.slice(i))?.[0] ?? '';
    if (/[fFbB]/.test(prefix)) return undefined;
    const start = i + prefix.length;
    if (t[start] !== '"' && t[start] !== "'") return undefined;
    const end = stringEnd(t, start);
    const q = t.startsWith((t[start] as string).repeat(3), start) ? 3 : 1;
    const inner = t.slice(start + q, end - q);
    value += /[rR]/.test(prefix) ? inner : unescapePy(inner);
    i = end;
    while (t[i] === ' ' || t[i] === '\n' || t[i] === '\t') i++;
  }
  return value;
}

function unescapePy(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|\n|.)/g, (all, e: string) => {
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v', '\n': '' };
    if (e in simple) return simple[e] as string;
    if (/^[xuU]/.test(e)) return String.fromCodePoint(parseInt(e.slice(1), 16));
    if (/^[0-7]+$/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return all;
  });
}

/**
 * A Python literal as a JavaScript expression, or undefined when it is not one
 * (names, calls other than `field(default=…)`, `list()`, `dict()`; f-strings).
 */
export function jsLiteral(text: string): string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  if (/^(True|False|None)$/.test(t)) return t === 'True' ? 'true' : t === 'False' ? 'false' : 'null';
  const num = /^([+-]?)\s*(0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)$/.exec(t);
  if (num) {
    const n = Number((num[2] as string).replaceAll('_', ''));
    return Number.isFinite(n) ? `${num[1] === '-' ? '-' : ''}${n}` : undefined;
  }
  if (/^[A-Za-z]{0,2}["']/.test(t) && stringEnd(t, t.search(/["']/)) <= t.length) {
    const s = isStringSequence(t) ? pyString(t) : undefined;
    return s === undefined ? undefined : JSON.stringify(s);
  }
  const call = /^(?:dataclasses\.)?(field|list|dict|set|tuple)\s*\(([\s\S]*)\)$/.exec(t);
  if (call) {
    const inner = (call[2] as string).trim();
    if (call[1] !== 'field') return inner === '' ? (call[1] === 'dict' ? '{}' : '[]') : undefined;
    for (const kw of splitTop(inner, ',')) {
      const [k, v = ''] = [kw.slice(0, kw.indexOf('=')).trim(), kw.slice(kw.indexOf('=') + 1).trim()];
      if (k === 'default') return jsLiteral(v);
      if (k === 'default_factory') {
        if (/^(list|set|tuple)$/.test(v)) return '[]';
        if (v === 'dict') return '{}';
        const lambda = /^lambda\s*:\s*([\s\S]*)$/.exec(v);
        if (lambda) return jsLiteral(lambda[1] as string);
      }
    }
    return undefined;
  }
  const open = t[0];
  const closeFor: Record<string, string> = { '[': ']', '(': ')', '{': '}' };
  if (open && closeFor[open] && t.endsWith(closeFor[open] as string) && topIndex(t, open) === 0) {
    const inner = t.slice(1, -1);
    const items = splitTop(inner, ',');
    if (open === '{' && items.length > 0 && items.every((i) => topIndex(i, ':') !== -1)) {
      const entries: string[] = [];
      for (const item of items) {
        const at = topIndex(item, ':');
        const key = jsLiteral(item.slice(0, at));
        const value = jsLiteral(item.slice(at + 1));
        if (key === undefined || value === undefined || !/^["\d-]/.test(key)) return undefined;
        entries.push(`${key.startsWith('"') ? key : JSON.stringify(key)}: ${value}`);
      }
      return `{ ${entries.join(', ')} }`;
    }
    if (open === '(' && items.length === 1 && !inner.trim().endsWith(',')) return jsLiteral(inner);
    const values = items.map(jsLiteral);
    if (values.some((v) => v === undefined)) return undefined;
    return open === '{' && items.length === 0 ? '{}' : `[${values.join(', ')}]`;
  }
  return undefined;
}

/** Whether `t` is nothing but string literals side by side. */
function isStringSequence(t: string): boolean {
  let i = 0;
  while (i < t.length) {
    const prefix = /^[A-Za-z]{0,2}/.exec(t.slice(i))?.[0] ?? '';
    const start = i + prefix.length;
    if (t[start] !== '"' && t[start] !== "'") return false;
    i = stringEnd(t, start);
    while (t[i] === ' ' || t[i] === '\n' || t[i] === '\t') i++;
  }
  return true;
}
