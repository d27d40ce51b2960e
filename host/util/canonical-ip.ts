/**
 * The canonical text of an IP address, as KEP-4858 (IP/CIDR validation,
 * kube-apiserver v1.33+) wants it in everything written to the API: IPv4 as
 * a plain dotted quad, IPv6 in RFC 5952 form (lowercase, the longest run of
 * zero groups compressed, no embedded dotted quad).
 *
 * A spelling that means one address without doubt (`2001:DB8:0:0::1`) gets
 * its canonical text (`2001:db8::1`); a spelling whose meaning depends on
 * who reads it is refused, never guessed:
 * - IPv4 with leading zeros (`010.001.002.003`): decimal to Go, octal to
 *   libc (CVE-2021-29923); the API server warns, and with
 *   StrictIPCIDRValidation rejects it;
 * - IPv4-mapped IPv6 (`::ffff:1.2.3.4`): an IPv4 address in IPv6 dress, of
 *   neither family for sure; StrictIPCIDRValidation rejects it too;
 * - zones (`fe80::1%eth0`), CIDRs, and anything that is no IP at all.
 * Pure; the same input always gives the same answer.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type CanonicalIp = { ip: string } | { problem: string };

/** A value for a problem text: JSON-quoted, cut at 80 characters, non-printable characters escaped. */
const shown = (s: string) =>
  JSON.stringify(s.length > 80 ? s.slice(0, 80) + '…' : s).replace(/[^\x20-\x7e]/g, (c) =>
    c === '…' ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

const DOTTED = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
/** What the WHATWG URL serializer prints for an IPv4-mapped address (it prints IPv6 canonically, RFC 5952 included). */
const MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** The canonical text of `text`, or why it is refused (one line naming the value). */
export function canonicalIp(text: string): CanonicalIp {
  const dotted = DOTTED.exec(text);
  if (dotted) {
    const parts = dotted.slice(1);
    if (parts.some((p) => Number(p) > 255)) return { problem: `${shown(text)} is not an IP address` };
    if (parts.some((p) => p.length > 1 && p.startsWith('0')))
      return {
        problem: `${shown(text)} is ambiguous: IPv4 with leading zeros is octal to some parsers and decimal to others (KEP-4858); answer ${shown(parts.map(Number).join('.'))} if decimal is meant`,
      };
    return { ip: text };
  }
  // "1.2.3", "0x7f.1", "2130706433": IPv4 to inet_aton, not to Kubernetes.
  if (ipaddr.IPv4.isValid(text)) return { problem: `${shown(text)} is not a dotted-quad IPv4 address` };
  // isIP refuses zones ("fe80::1%eth0") only in some Node versions; refuse them here in all.
  if (isIP(text) !== 6 || text.includes('%')) return { problem: `${shown(text)} is not an IP address` };
  const ip = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const mapped = MAPPED.exec(ip);
  if (mapped) {
    const [hi, lo] = [Number.parseInt(mapped[1]!, 16), Number.parseInt(mapped[2]!, 16)];
    const v4 = [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
    return {
      problem: `${shown(text)} is an IPv4-mapped IPv6 address, of neither family for sure (KEP-4858); answer ${shown(v4)} or a plain IPv6 address`,
    };
  }
  return { ip };
}

/** Whether `text` is already the canonical text of an IP address. */
export function isCanonicalIp(text: string): boolean {
  const r = canonicalIp(text);
  return 'ip' in r && r.ip === text;
}
