/**
 * The one object key svc does not carry: `__proto__`. `JSON.parse` makes it
 * an own property, but nearly everything after that treats the name as the
 * object's prototype: an assignment (`copy[key] = value`, `Object.assign`)
 * sets the prototype and the key is gone; msgpackr, which carries messages
 * between threads and processes, renames it to `__proto_` on the other side.
 * Carrying it faithfully through every layer (the codec, schema checks, the
 * document stores and their queries) cannot be promised, so it is refused
 * where data comes in — request bodies, WebSocket frames, kvstore documents,
 * filters and updates — with a 400 that names it (`RESERVED_KEY`), and a
 * message between threads that holds one is refused rather than changed.
 *
 * @example
 * reservedKeyPath(JSON.parse('{"a":[{"__proto__":1}]}'), 'body') // 'body.a.0.__proto__'
 */

/** The key itself. */
export const RESERVED_KEY = '__proto__';

/**
 * Whether JSON text may hold the key: it is spelled out, or the text has a
 * `\u` escape (`"\u005f_proto__"` parses to it too). A cheap test before
 * {@link reservedKeyPath} walks what was parsed.
 *
 * @example
 * mayHoldReservedKey('{"a":1}') // false
 */
export function mayHoldReservedKey(text: string): boolean {
  return text.includes(RESERVED_KEY) || text.includes('\\u');
}

/**
 * The path (`where.a.0.__proto__`) of the first own `__proto__` key in
 * `value` — plain objects, arrays and other objects' own enumerable fields,
 * at any depth (walked without recursion) — or undefined when there is none.
 * Byte arrays are not walked.
 *
 * @example
 * reservedKeyPath({ a: 1 }, 'doc') // undefined
 */
export function reservedKeyPath(value: unknown, where: string): string | undefined {
  const stack: [unknown, string][] = [[value, where]];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const [v, path] = stack.pop() as [unknown, string];
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v) || v instanceof ArrayBuffer || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}.${i}`]);
      continue;
    }
    if (Object.hasOwn(v, RESERVED_KEY)) return `${path}.${RESERVED_KEY}`;
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) stack.push([(v as Record<string, unknown>)[keys[i] as string], `${path}.${keys[i]}`]);
  }
  return undefined;
}
