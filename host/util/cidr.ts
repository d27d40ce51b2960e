/**
 * CIDR arithmetic on top of ipaddr.js: parsing into a canonical form
 * (network address as a bigint, host bits cleared), containment, overlap and
 * subnet enumeration. Used by the route controller and the node CIDR
 * allocator; IPv4 and IPv6 alike.
 */
import ipaddr from 'ipaddr.js';

export type IpFamily = 4 | 6;

export interface Cidr {
  family: IpFamily;
  /** Network address with the host bits cleared. */
  network: bigint;
  /** Prefix length. */
  prefix: number;
  /** Canonical text, e.g. "10.244.1.0/24", "fd00:10:244::/64". */
  text: string;
}

export const familyBits = (f: IpFamily): number => (f === 4 ? 32 : 128);

function toBigInt(bytes: number[]): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

function toBytes(n: bigint, count: number): number[] {
  const out = new Array<number>(count);
  for (let i = count - 1; i >= 0; i--) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return out;
}

/** Text form of an address of `family`. */
function addressText(family: IpFamily, n: bigint): string {
  return family === 4 ? ipaddr.fromByteArray(toBytes(n, 4)).toString() : ipaddr.fromByteArray(toBytes(n, 16)).toString();
}

/** Mask with the top `prefix` bits of `family` set. */
function mask(family: IpFamily, prefix: number): bigint {
  const bits = familyBits(family);
  return ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
}

/** Builds a canonical Cidr from a network number (host bits are cleared). */
export function makeCidr(family: IpFamily, network: bigint, prefix: number): Cidr {
  const net = network & mask(family, prefix);
  return { family, network: net, prefix, text: `${addressText(family, net)}/${prefix}` };
}

/**
 * Parses "a.b.c.d/n" (dotted-quad only, as Go's net.ParseCIDR) or an IPv6
 * CIDR; host bits are cleared (as Go does). Undefined when not a CIDR.
 */
export function parseCidr(text: string): Cidr | undefined {
  const t = text.trim();
  if (t.includes('%')) return undefined;
  let family: IpFamily;
  if (ipaddr.IPv4.isValidCIDRFourPartDecimal(t)) family = 4;
  else if (ipaddr.IPv6.isValidCIDR(t)) family = 6;
  else return undefined;
  const [addr, prefix] = ipaddr.parseCIDR(t);
  let bytes = addr.toByteArray();
  // "::ffff:1.2.3.4/120"-style input stays IPv6, as Go keeps 16-byte forms of IPv6 CIDRs.
  if (family === 6 && bytes.length === 4) bytes = (addr as ipaddr.IPv4).toIPv4MappedAddress().toByteArray();
  return makeCidr(family, toBigInt(bytes), prefix);
}

/** Whether `inner` lies entirely inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return outer.family === inner.family && inner.prefix >= outer.prefix && (inner.network & mask(outer.family, outer.prefix)) === outer.network;
}

/** Whether the two ranges share any address. */
export function cidrOverlaps(a: Cidr, b: Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

/** Whether an address (as a number of `family`) lies in `cidr`. */
export function cidrHasAddress(cidr: Cidr, family: IpFamily, addr: bigint): boolean {
  return cidr.family === family && (addr & mask(family, cidr.prefix)) === cidr.network;
}

/** The last address of the range. */
export function lastAddress(c: Cidr): bigint {
  return c.network | ((1n << BigInt(familyBits(c.family) - c.prefix)) - 1n);
}
