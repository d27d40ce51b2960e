/**
 * How cloud addresses become a Node's status.addresses (upstream
 * cloud-provider node/helpers/address.go semantics).
 */
import ipaddr from 'ipaddr.js';
import type { NodeAddress } from '../../cloud.js';

/** The cloud's addresses did not include the IP the kubelet was told to use. */
export class ProvidedIpMismatchError extends Error {
  override name = 'ProvidedIpMismatchError';
}

/**
 * Final address list for a node:
 * - when the cloud reports no Hostname address, the kubelet's Hostname is kept;
 * - when the kubelet was started with --node-ip (annotation
 *   alpha.kubernetes.io/provided-node-ip, comma-separated for dual-stack), each
 *   provided IP must be among the cloud's addresses (else ProvidedIpMismatchError),
 *   it goes first, and it is the only address of its type.
 */
export function desiredAddresses(cloud: NodeAddress[], current: NodeAddress[], providedNodeIp: string | undefined): NodeAddress[] {
  let out = [...cloud];
  if (!out.some((a) => a.type === 'Hostname')) {
    const hostname = current.find((a) => a.type === 'Hostname');
    if (hostname) out.push(hostname);
  }
  const provided = (providedNodeIp ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  // Last first, so that the first provided IP ends up first.
  for (const ip of [...provided].reverse()) {
    const match = out.find((a) => (a.type === 'InternalIP' || a.type === 'ExternalIP') && sameIp(a.address, ip));
    if (!match) throw new ProvidedIpMismatchError(`node IP ${ip} (from --node-ip) is not among the addresses the cloud reports for this node`);
    const family = ipFamily(ip);
    out = [match, ...out.filter((a) => a !== match && !(a.type === match.type && ipFamily(a.address) === family))];
  }
  return out;
}

/** Compares IPs as addresses, not strings (`fd00:0::1` equals `fd00::1`), as upstream does. */
function sameIp(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return ipaddr.parse(a).toNormalizedString() === ipaddr.parse(b).toNormalizedString();
  } catch {
    return false;
  }
}

function ipFamily(address: string): 4 | 6 {
  return address.includes(':') ? 6 : 4;
}

/** Whether two address lists differ (order-sensitive: the first address of a type matters to kubelet). */
export function addressesChanged(a: NodeAddress[], b: NodeAddress[]): boolean {
  if (a.length !== b.length) return true;
  return a.some((x, i) => x.type !== b[i]!.type || x.address !== b[i]!.address);
}
