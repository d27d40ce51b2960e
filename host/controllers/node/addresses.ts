/**
 * How cloud addresses become a Node's status.addresses (upstream
 * cloud-provider node/helpers/address.go semantics).
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { NodeAddress } from '../../cloud.js';

/**
 * The node's alpha.kubernetes.io/provided-node-ip annotation cannot be
 * applied: it does not parse, or the cloud does not report one of its IPs.
 */
export class ProvidedNodeIpError extends Error {
  override name = 'ProvidedNodeIpError';
}

/**
 * Final address list for a node:
 * - when the cloud reports no Hostname address, the kubelet's Hostname is kept;
 * - when the kubelet was started with --node-ip (annotation
 *   alpha.kubernetes.io/provided-node-ip: one IP or a dual-stack pair, comma
 *   separated), every cloud address equal to a provided IP (compared as IPs,
 *   whatever its type) goes first, in the order of the provided IPs and then
 *   of the cloud, and no other address of a type so matched is kept, whatever
 *   its family: --node-ip=10.0.0.2 leaves no InternalIP fd00::1. A provided IP
 *   the cloud does not report, or an annotation upstream's
 *   ParseNodeIPAnnotation would refuse, throws ProvidedNodeIpError.
 */
export function desiredAddresses(cloud: NodeAddress[], current: NodeAddress[], providedNodeIp: string | undefined): NodeAddress[] {
  const out = [...cloud];
  if (!out.some((a) => a.type === 'Hostname')) out.push(...current.filter((a) => a.type === 'Hostname'));
  if (providedNodeIp === undefined) return out;
  const promoted: NodeAddress[] = [];
  const enforcedTypes = new Set<string>();
  for (const ip of parseNodeIpAnnotation(providedNodeIp)) {
    const matches = out.filter((a) => sameIp(parseIpSloppy(a.address), ip.bytes));
    if (matches.length === 0)
      throw new ProvidedNodeIpError(`node IP ${ip.text} (from --node-ip) is not among the addresses the cloud reports for this node`);
    promoted.push(...matches);
    for (const m of matches) enforcedTypes.add(m.type);
  }
  return [...promoted, ...out.filter((a) => !enforcedTypes.has(a.type))];
}

interface ProvidedIp {
  text: string;
  /** 16 bytes; IPv4 as IPv4-mapped IPv6, as Go's net.IP. */
  bytes: number[];
}

/** Upstream's ParseNodeIPAnnotation: every part must parse (no trimming); one IP or a dual-stack pair. */
function parseNodeIpAnnotation(value: string): ProvidedIp[] {
  const ips = value.split(',').map((text) => {
    const bytes = parseIpSloppy(text);
    if (!bytes)
      throw new ProvidedNodeIpError(
        `failed to parse node IP ${JSON.stringify(value)}: could not parse ${JSON.stringify(text)}; the annotation alpha.kubernetes.io/provided-node-ip (the kubelet's --node-ip) must be one IP or a comma-separated dual-stack pair`,
      );
    return { text, bytes };
  });
  if (ips.length > 2 || (ips.length === 2 && isIpv4(ips[0]!.bytes) === isIpv4(ips[1]!.bytes))) {
    throw new ProvidedNodeIpError(`failed to parse node IP ${JSON.stringify(value)}: must contain either a single IP or a dual-stack pair of IPs`);
  }
  if (ips.length === 2 && ips.some((ip) => isUnspecified(ip.bytes))) {
    throw new ProvidedNodeIpError(`failed to parse node IP ${JSON.stringify(value)}: dual-stack node IP cannot include '0.0.0.0' or '::'`);
  }
  return ips;
}

const V4_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/**
 * An IP as 16 bytes, as Go's netutils.ParseIPSloppy reads it (IPv4 parts may
 * have leading zeros and are decimal); undefined when not an IP.
 */
function parseIpSloppy(text: string): number[] | undefined {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(text)) {
    const parts = text.split('.').map((p) => Number.parseInt(p, 10));
    return parts.every((p) => p <= 255) ? [...V4_PREFIX, ...parts] : undefined;
  }
  if (text.includes('%') || isIP(text) !== 6) return undefined;
  // Through the URL parser's canonical text first: ipaddr.js reads any dotted tail as IPv4-mapped,
  // so "::1.2.3.4" (IPv4-compatible) would equal 1.2.3.4, which Go's net.IP.Equal does not say.
  return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1)).toByteArray();
}

function isIpv4(bytes: number[]): boolean {
  return V4_PREFIX.every((b, i) => bytes[i] === b);
}

function isUnspecified(bytes: number[]): boolean {
  return (isIpv4(bytes) ? bytes.slice(12) : bytes).every((b) => b === 0);
}

/** Compares IPs as addresses, not strings (`fd00:0::1` equals `fd00::1`, `::ffff:10.0.0.1` equals `10.0.0.1`), as Go's net.IP.Equal. */
function sameIp(a: number[] | undefined, b: number[]): boolean {
  return a !== undefined && a.every((x, i) => x === b[i]);
}

/** Whether two address lists differ (order-sensitive: the first address of a type matters to kubelet). */
export function addressesChanged(a: NodeAddress[], b: NodeAddress[]): boolean {
  if (a.length !== b.length) return true;
  return a.some((x, i) => x.type !== b[i]!.type || x.address !== b[i]!.address);
}
