/**
 * The ranges of one cluster CIDR cut into node-sized subnets, with owners
 * (upstream nodeipam cidrset, next-fit like it: the search for a free subnet
 * starts after the last one handed out, so a just-released range is not
 * handed out again at once).
 *
 * Each subnet records the nodes that claim it. A subnet is free only when no
 * node claims it, so a range written on two nodes by someone else is not
 * released while either still holds it.
 */
import { cidrOverlaps, familyBits, makeCidr, type Cidr } from '../../util/cidr.js';

export class CidrSet {
  /** Number of node subnets. */
  readonly size: number;
  private readonly owners = new Map<number, Set<string>>();
  private next = 0;

  constructor(
    readonly cluster: Cidr,
    readonly maskSize: number,
  ) {
    if (maskSize < cluster.prefix || maskSize > familyBits(cluster.family))
      throw new RangeError(`node mask size ${maskSize} does not fit ${cluster.text}`);
    this.size = 2 ** (maskSize - cluster.prefix);
  }

  /** Subnets in use. */
  get used(): number {
    return this.owners.size;
  }

  /** The subnet with this index. */
  subnet(index: number): Cidr {
    const shift = BigInt(familyBits(this.cluster.family) - this.maskSize);
    return makeCidr(this.cluster.family, this.cluster.network + (BigInt(index) << shift), this.maskSize);
  }

  /** Indices of the subnets `cidr` overlaps (clamped to this set); empty when it lies outside. */
  indicesOf(cidr: Cidr): number[] {
    if (!cidrOverlaps(this.cluster, cidr)) return [];
    const bits = familyBits(this.cluster.family);
    const shift = BigInt(bits - this.maskSize);
    const first = cidr.prefix <= this.cluster.prefix ? this.cluster.network : cidr.network;
    const prefix = Math.max(cidr.prefix, this.cluster.prefix);
    const last = first | ((1n << BigInt(bits - prefix)) - 1n);
    const begin = Number((first - this.cluster.network) >> shift);
    const end = Number((last - this.cluster.network) >> shift);
    return Array.from({ length: end - begin + 1 }, (_, i) => begin + i);
  }

  /** Other nodes already claiming any of `indices`. */
  otherOwners(indices: number[], node: string): string[] {
    const out = new Set<string>();
    for (const i of indices) for (const o of this.owners.get(i) ?? []) if (o !== node) out.add(o);
    return [...out];
  }

  claim(indices: number[], node: string): void {
    for (const i of indices) {
      const set = this.owners.get(i) ?? new Set<string>();
      set.add(node);
      this.owners.set(i, set);
    }
  }

  /** Drops `node`'s claim; returns how many subnets became free. */
  release(indices: number[], node: string): number {
    let freed = 0;
    for (const i of indices) {
      const set = this.owners.get(i);
      if (!set?.delete(node)) continue;
      if (set.size === 0) {
        this.owners.delete(i);
        freed++;
      }
    }
    return freed;
  }

  /** Claims the next free subnet for `node` (next-fit); undefined when none is free. */
  allocate(node: string): Cidr | undefined {
    for (let n = 0; n < this.size; n++) {
      const i = (this.next + n) % this.size;
      if (!this.owners.has(i)) {
        this.claim([i], node);
        this.next = (i + 1) % this.size;
        return this.subnet(i);
      }
    }
    return undefined;
  }
}
