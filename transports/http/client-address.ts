/**
 * The client's address, for per-address rate limits. Behind a reverse proxy
 * every connection comes from the proxy, so `[scale.server] trusted_proxies`
 * (CIDRs) names the proxies whose `Forwarded` / `X-Forwarded-For` headers
 * are believed: the chain is read from the right, skipping trusted hops, and
 * the first address that is not a trusted proxy is the client. From any
 * other peer those headers are ignored (anyone can send them).
 */
import { BlockList, isIP } from 'node:net';

export class TrustedProxyError extends Error {}

/** `::ffff:1.2.3.4` and `[::1]:443`-style forms to plain addresses. */
function plain(address: string): string {
  let a = address.trim();
  if (a.startsWith('"') && a.endsWith('"')) a = a.slice(1, -1);
  if (a.startsWith('[')) a = a.slice(1, a.indexOf(']') > 0 ? a.indexOf(']') : undefined);
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  if (a.toLowerCase().startsWith('::ffff:') && isIP(a.slice(7)) === 4) a = a.slice(7);
  return a;
}

/** The hops a request passed through, oldest first (`Forwarded: for=` wins over `X-Forwarded-For`). */
function chain(headers: Record<string, string>): string[] {
  const forwarded = headers.forwarded;
  if (forwarded) {
    const hops: string[] = [];
    for (const element of forwarded.split(',')) {
      const m = /(?:^|;)\s*for=("[^"]*"|[^;,\s]+)/i.exec(element);
      if (m) hops.push(plain(m[1] as string));
    }
    if (hops.length > 0) return hops;
  }
  const xff = headers['x-forwarded-for'];
  return xff ? xff.split(',').map(plain).filter((a) => a !== '') : [];
}

/**
 * @example
 * const addresses = new ClientAddresses(['10.0.0.0/8']);
 * addresses.of(req); // the client behind the proxy, or the peer itself
 */
export class ClientAddresses {
  private readonly trusted: BlockList | undefined;

  /** Throws a {@link TrustedProxyError} naming an entry that is not an address or a CIDR. */
  constructor(cidrs: readonly string[]) {
    if (cidrs.length === 0) return;
    const list = new BlockList();
    for (const entry of cidrs) {
      const [address = '', bits] = entry.trim().split('/');
      const family = isIP(address);
      const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
      if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
        throw new TrustedProxyError(`[scale.server] trusted_proxies: ${JSON.stringify(entry)} is not an IP address or CIDR (like 10.0.0.0/8 or fd00::/8)`);
      }
      list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
    }
    this.trusted = list;
  }

  private isTrusted(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && (this.trusted as BlockList).check(address, family === 6 ? 'ipv6' : 'ipv4');
  }

  /** The client's address: the peer, or — when the peer is a trusted proxy — whom it forwarded for. */
  of(remoteAddress: string, headers: Record<string, string>): string {
    const peer = plain(remoteAddress);
    if (!this.trusted || !this.isTrusted(peer)) return peer;
    const hops = chain(headers);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return peer; // `unknown` or an obfuscated id: go no further than the proxy
      if (!this.isTrusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  }
}
