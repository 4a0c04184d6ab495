/**
 * A tar archive of a project's files (POSIX ustar, a pax header for a path
 * longer than ustar holds), made in memory: how a project reaches a warm pod
 * in one exec (`tar -x` reading its stdin).
 */

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, type: '0' | 'x', mode = 0o644): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7), 148, 'ascii');
  h[155] = 0x20;
  return h;
}

function padded(data: Buffer): Buffer[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, Buffer.alloc(BLOCK - rest)];
}

/** A pax record: `<length> path=<value>\n`, its length counting itself. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let n = Buffer.byteLength(body) + 1;
  while (String(n).length + Buffer.byteLength(body) !== n) n = String(n).length + Buffer.byteLength(body);
  return Buffer.from(`${n}${body}`, 'utf8');
}

/**
 * The archive of `files` (relative path → content; folders are made by `tar -x` from the paths).
 *
 * @example
 * const archive = tarOf(new Map([['package.json', Buffer.from('{}')], ['src/a.js', Buffer.from('1')]]));
 */
export function tarOf(files: ReadonlyMap<string, Uint8Array | { content: Uint8Array; mode: number }>): Buffer {
  const parts: Buffer[] = [];
  for (const [path, file] of files) {
    const { content, mode } = file instanceof Uint8Array ? { content: file, mode: 0o644 } : file;
    const data = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    if (Buffer.byteLength(path) > 100) {
      const pax = paxRecord('path', path);
      parts.push(header('PaxHeader', pax.length, 'x'), ...padded(pax));
    }
    parts.push(header(Buffer.from(path).subarray(0, 100).toString('utf8'), data.length, '0', mode & 0o111 ? 0o755 : 0o644), ...padded(data));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
