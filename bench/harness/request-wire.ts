/**
 * The requests of a plan as a generator thread (generator.ts) writes them:
 * static requests as whole buffers per variant, generated bodies as heads
 * plus the scenario module's body function.
 */
import { pathToFileURL } from 'node:url';
import type { BodyContext, PreparedRequest } from './types.ts';

/** A request of the plan, ready to write. */
export interface Wire {
  /** Static bodies: the whole request, one Buffer per variant. */
  bytes: Buffer[];
  /** Generated bodies: the head up to the content-length header, per variant. */
  heads: string[];
  users: number[];
  body: ((ctx: BodyContext) => unknown) | null;
  next: number;
  noBody: boolean;
}

/** Bytes of a request head, without the blank line: our host, the variant's headers, no content-length. */
function headOf(req: PreparedRequest, variant: PreparedRequest['variants'][number], hostHeader: string, json: boolean): string {
  const headers = new Map<string, string>([['host', hostHeader]]);
  if (json) headers.set('content-type', 'application/json');
  for (const [name, value] of Object.entries(variant.headers)) {
    const lower = name.toLowerCase();
    if (lower !== 'content-length' && lower !== 'transfer-encoding' && lower !== 'connection') headers.set(lower, value);
  }
  let head = `${req.method.toUpperCase()} ${variant.path} HTTP/1.1\r\n`;
  for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
  return head;
}

export async function wire(req: PreparedRequest, hostHeader: string): Promise<Wire> {
  const method = req.method.toUpperCase();
  if (req.generator) {
    const { module } = req.generator;
    const mod = (await import(module.startsWith('file:') ? module : pathToFileURL(module).href)) as { default?: { requests?: { body?: unknown }[] } };
    const body = mod.default?.requests?.[req.generator.index]?.body;
    if (typeof body !== 'function') throw new Error(`${module}: requests[${req.generator.index}].body is not a function`);
    return { bytes: [], heads: req.variants.map((v) => headOf(req, v, hostHeader, true)), users: req.variants.map((v) => v.user), body: body as Wire['body'], next: 0, noBody: method === 'HEAD' };
  }
  const bytes = req.variants.map((v) => {
    const json = v.body !== undefined;
    const length = json ? Buffer.byteLength(v.body as string) : method === 'POST' || method === 'PUT' || method === 'PATCH' ? 0 : -1;
    return Buffer.from(`${headOf(req, v, hostHeader, json)}${length >= 0 ? `content-length: ${length}\r\n` : ''}\r\n${v.body ?? ''}`);
  });
  return { bytes, heads: [], users: req.variants.map((v) => v.user), body: null, next: 0, noBody: method === 'HEAD' };
}
