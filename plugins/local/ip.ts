/**
 * Strict IP and CIDR parsing (canonical strings only, no "0x7f.1" forms),
 * CIDR containment, and an address pool that hands out the lowest free
 * address of a CIDR.
 */
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** A parsed CIDR with its canonical string `network/prefix`. */
export interface Cidr {
  addr: Addr;
  prefix: number;
  /** Canonical form: network address (host bits cleared) / prefix. */
  text: string;
}

/** The address if `s` is a strict IPv4 dotted quad or an IPv6 literal, else undefined. */
function parseIp(s: string): Addr | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(s)) return ipaddr.IPv4.parse(s);
  if (s.includes(':') && !s.includes('%') && ipaddr.IPv6.isValid(s)) return ipaddr.IPv6.parse(s);
  return undefined;
}

/** Canonical text of an address (RFC 5952 for IPv6). */
function ipText(a: Addr): string {
  return a.kind() === 'ipv6' ? (a as ipaddr.IPv6).toRFC5952String() : a.toString();
}

/** Canonical text of `s` if it is an IP literal, else undefined. */
export function canonicalIp(s: string): string | undefined {
  const a = parseIp(s);
  return a ? ipText(a) : undefined;
}

/** Parses `a.b.c.d/n` or `v6/n`; undefined when malformed. Host bits are cleared. */
export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addr = parseIp(s.slice(0, slash));
  const prefixText = s.slice(slash + 1);
  if (!addr || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = addr.kind() === 'ipv4' ? 32 : 128;
  if (prefix > bits) return undefined;
  const network = fromBigInt(toBigInt(addr) & maskOf(prefix, bits), addr.kind());
  return { addr: network, prefix, text: `${ipText(network)}/${prefix}` };
}

/** Whether `inner` lies entirely inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return outer.addr.kind() === inner.addr.kind() && inner.prefix >= outer.prefix && inner.addr.match(outer.addr, outer.prefix);
}

/** Whether address `a` lies inside `cidr`. */
function cidrHas(cidr: Cidr, a: Addr): boolean {
  return cidr.addr.kind() === a.kind() && a.match(cidr.addr, cidr.prefix);
}

function bitsOf(kind: 'ipv4' | 'ipv6'): number {
  return kind === 'ipv4' ? 32 : 128;
}

function maskOf(prefix: number, bits: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : (all >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

function toBigInt(a: Addr): bigint {
  return a.toByteArray().reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

function fromBigInt(n: bigint, kind: 'ipv4' | 'ipv6'): Addr {
  const len = bitsOf(kind) / 8;
  const bytes: number[] = new Array<number>(len);
  for (let i = len - 1; i >= 0; i--) {
    bytes[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return ipaddr.fromByteArray(bytes);
}

/** A range of assignable addresses: a CIDR minus its network (and IPv4 broadcast) address. */
export class IpPool {
  readonly cidr: Cidr;
  private readonly first: bigint;
  private readonly last: bigint;

  /** Throws on a malformed CIDR or one with no assignable address. */
  constructor(cidrText: string) {
    const cidr = parseCidr(cidrText);
    if (!cidr) throw new TypeError(`address pool ${JSON.stringify(cidrText)} is not a CIDR`);
    this.cidr = cidr;
    const kind = cidr.addr.kind();
    const bits = bitsOf(kind);
    const base = toBigInt(cidr.addr);
    const size = 1n << BigInt(bits - cidr.prefix);
    const small = bits - cidr.prefix <= 1; // /31, /32, /127, /128: every address is usable
    this.first = small ? base : base + 1n;
    this.last = small ? base + size - 1n : kind === 'ipv4' ? base + size - 2n : base + size - 1n;
    if (this.last < this.first) throw new TypeError(`address pool ${cidrText} has no assignable address`);
  }

  /** Whether `ip` (canonical text) is an assignable address of this pool. */
  has(ip: string): boolean {
    const a = parseIp(ip);
    if (!a || !cidrHas(this.cidr, a)) return false;
    const n = toBigInt(a);
    return n >= this.first && n <= this.last;
  }

  /** The lowest assignable address not in `used` (canonical texts), or undefined when exhausted. */
  allocate(used: { has(ip: string): boolean }): string | undefined {
    const kind = this.cidr.addr.kind();
    for (let n = this.first; n <= this.last; n++) {
      const ip = ipText(fromBigInt(n, kind));
      if (!used.has(ip)) return ip;
    }
    return undefined;
  }
}
