/**
 * The client's address, for per-address rate limits. Behind a reverse proxy
 * every connection comes from the proxy, so `[scale.server] trusted_proxies`
 * (CIDRs) names the proxies whose forwarding header is believed — one header,
 * `trusted_proxy_header` (`x-forwarded-for` by default, or `forwarded`): the
 * other one is whatever the client sent, passed through. The chain is read
 * from the right, skipping trusted hops (a proxy appends), and the first
 * address that is not a trusted proxy is the client. From any other peer
 * the headers are ignored (anyone can send them).
 */
import { BlockList, isIP, SocketAddress } from 'node:net';

export class TrustedProxyError extends Error {}

/**
 * One canonical text per address: `[::1]:443`, `"[…]"`, `1.2.3.4:80` unwrapped; IPv6 in its
 * short form (uWS writes every group in full); IPv4-mapped IPv6 as IPv4.
 */
export function plainAddress(address: string): string {
  let a = address.trim();
  if (a.startsWith('"') && a.endsWith('"')) a = a.slice(1, -1);
  if (a.startsWith('[')) a = a.slice(1, a.indexOf(']') > 0 ? a.indexOf(']') : undefined);
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  if (isIP(a) === 6) {
    a = new SocketAddress({ address: a, family: 'ipv6' }).address.toLowerCase();
    if (a.startsWith('::ffff:') && isIP(a.slice(7)) === 4) a = a.slice(7);
  }
  return a;
}

/** Which forwarding header trusted proxies set (`[scale.server] trusted_proxy_header`). */
export type ForwardingHeader = 'x-forwarded-for' | 'forwarded';

/** The hops a request passed through, oldest first, from the one header the proxies set. */
function chain(headers: Record<string, string>, header: ForwardingHeader): string[] {
  const value = headers[header];
  if (!value) return [];
  if (header === 'x-forwarded-for') return value.split(',').map(plainAddress).filter((a) => a !== '');
  const hops: string[] = [];
  for (const element of value.split(',')) {
    const m = /(?:^|;)\s*for=("[^"]*"|[^;,\s]+)/i.exec(element);
    hops.push(m ? plainAddress(m[1] as string) : 'unknown');
  }
  return hops;
}

/**
 * @example
 * const addresses = new ClientAddresses(['10.0.0.0/8']);
 * addresses.of(req); // the client behind the proxy, or the peer itself
 */
export class ClientAddresses {
  private readonly trusted: BlockList | undefined;

  /** Throws a {@link TrustedProxyError} naming an entry that is not an address or a CIDR. */
  constructor(
    cidrs: readonly string[],
    private readonly header: ForwardingHeader = 'x-forwarded-for',
  ) {
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
    const peer = plainAddress(remoteAddress);
    if (!this.trusted || !this.isTrusted(peer)) return peer;
    const hops = chain(headers, this.header);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return peer; // `unknown` or an obfuscated id: go no further than the proxy
      if (!this.isTrusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  }
}
