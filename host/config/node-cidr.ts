/**
 * `--allocate-node-cidrs` settings for the node IPAM controller (upstream
 * nodeipam RangeAllocator): which per-node mask size goes with each cluster
 * CIDR. Upstream rules (kubernetes/cloud-provider nodeipam config):
 * `--node-cidr-mask-size` is for single-stack clusters only; dual-stack uses
 * `--node-cidr-mask-size-ipv4` / `-ipv6`; a per-family flag must match the
 * cluster's family; unset sizes default to 24 (IPv4) and 64 (IPv6).
 */
import { parseCidr } from '../util/cidr.js';
import type { Problems } from './validate.js';

const DEFAULT_NODE_CIDR_MASK_IPV4 = 24;
const DEFAULT_NODE_CIDR_MASK_IPV6 = 64;
/** Upstream cidrset limit: at most 2^16 node ranges per cluster CIDR. */
const MAX_NODE_CIDR_BITS = 16;

export interface MaskFlags {
  /** `--node-cidr-mask-size`, 0 = unset. */
  size: number;
  ipv4: number;
  ipv6: number;
}

/**
 * The node mask size for each cluster CIDR, in the same order; problems are
 * added to `p` (one line each) and an empty list is returned then.
 */
export function nodeCidrMaskSizes(clusterCidrs: readonly string[], flags: MaskFlags, p: Problems): number[] {
  const cidrs = clusterCidrs.map((c) => parseCidr(c));
  if (cidrs.length === 0) {
    p.add('--allocate-node-cidrs=true needs --cluster-cidr: pass the pod network, e.g. --cluster-cidr=10.244.0.0/16');
    return [];
  }
  // --cluster-cidr or a mask flag was already reported.
  if (cidrs.some((c) => c === undefined) || [flags.size, flags.ipv4, flags.ipv6].some(Number.isNaN)) return [];
  const errors: string[] = [];
  let v4 = DEFAULT_NODE_CIDR_MASK_IPV4;
  let v6 = DEFAULT_NODE_CIDR_MASK_IPV6;
  if (cidrs.length > 1) {
    if (flags.size !== 0)
      errors.push(
        '--node-cidr-mask-size is not allowed with a dual-stack --cluster-cidr: use --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6',
      );
    if (flags.ipv4 !== 0) v4 = flags.ipv4;
    if (flags.ipv6 !== 0) v6 = flags.ipv6;
  } else if (flags.size !== 0) {
    if (flags.ipv4 !== 0 || flags.ipv6 !== 0) {
      errors.push('--node-cidr-mask-size-ipv4/-ipv6 are not allowed together with --node-cidr-mask-size: use one or the other');
    }
    v4 = v6 = flags.size;
  } else {
    const ipv6Only = cidrs[0]!.family === 6;
    if (flags.ipv4 !== 0) {
      if (ipv6Only) errors.push('--node-cidr-mask-size-ipv4 is not allowed with a single-stack IPv6 --cluster-cidr: use --node-cidr-mask-size-ipv6');
      v4 = flags.ipv4;
    }
    if (flags.ipv6 !== 0) {
      if (!ipv6Only) errors.push('--node-cidr-mask-size-ipv6 is not allowed with a single-stack IPv4 --cluster-cidr: use --node-cidr-mask-size-ipv4');
      v6 = flags.ipv6;
    }
  }
  const sizes = cidrs.map((c) => (c!.family === 4 ? v4 : v6));
  cidrs.forEach((c, i) => {
    const size = sizes[i]!;
    const max = c!.family === 4 ? 32 : 128;
    const flag = flags.size !== 0 ? '--node-cidr-mask-size' : `--node-cidr-mask-size-ipv${c!.family}`;
    if (size < c!.prefix || size > max) {
      errors.push(`${flag}=${size} does not fit --cluster-cidr ${c!.text}: want a node mask size from ${c!.prefix} to ${max}`);
    } else if (size - c!.prefix > MAX_NODE_CIDR_BITS) {
      errors.push(
        `${flag}=${size} splits --cluster-cidr ${c!.text} into more than 2^${MAX_NODE_CIDR_BITS} ranges: use a mask size of at most ${c!.prefix + MAX_NODE_CIDR_BITS}`,
      );
    }
  });
  errors.forEach((e) => p.add(e));
  return errors.length ? [] : sizes;
}
