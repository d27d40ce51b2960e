/**
 * Node pod CIDR bookkeeping across the cluster CIDRs (one CidrSet per IP
 * family, dual-stack = two): what each node holds, allocation of a range per
 * cluster CIDR for a node that has none, and release. In memory only: after a
 * restart it is rebuilt from the Nodes' spec.podCIDRs before anything is
 * allocated, so a range written on a Node is never handed out twice.
 */
import { parseCidr, type Cidr } from '../../util/cidr.js';
import { CidrSet } from './cidr-set.js';

interface Holding {
  uid: string;
  /** Canonical CIDR texts, in the Node's order. */
  cidrs: string[];
  /** Indices claimed per set. */
  claims: number[][];
}

export class RangeAllocator {
  readonly sets: CidrSet[];
  private readonly held = new Map<string, Holding>();

  constructor(clusterCidrs: readonly Cidr[], maskSizes: readonly number[]) {
    this.sets = clusterCidrs.map((c, i) => new CidrSet(c, maskSizes[i]!));
  }

  /** What the allocator records for `node`. */
  holding(node: string): { uid: string; cidrs: string[] } | undefined {
    const h = this.held.get(node);
    return h && { uid: h.uid, cidrs: [...h.cidrs] };
  }

  /**
   * Records that `node` holds `podCidrs` (as written on the Node). Returns
   * problems, one line each: a CIDR that is not one, lies outside every
   * cluster CIDR, or overlaps a range another node holds. The claim is
   * recorded anyway (ranges on Nodes are never handed out again).
   */
  occupy(node: string, uid: string, podCidrs: readonly string[]): string[] {
    this.release(node);
    const problems: string[] = [];
    const claims: number[][] = this.sets.map(() => []);
    const cidrs: string[] = [];
    for (const text of podCidrs) {
      const cidr = parseCidr(text);
      if (!cidr) {
        problems.push(`pod CIDR ${JSON.stringify(text)} is not a CIDR`);
        continue;
      }
      cidrs.push(cidr.text);
      let inside = false;
      this.sets.forEach((set, i) => {
        const indices = set.indicesOf(cidr);
        if (indices.length === 0) return;
        inside = true;
        const others = set.otherOwners(indices, node);
        if (others.length) problems.push(`pod CIDR ${cidr.text} overlaps the range of node(s) ${others.slice(0, 5).join(', ')}`);
        set.claim(indices, node);
        claims[i]!.push(...indices);
      });
      if (!inside) problems.push(`pod CIDR ${cidr.text} is outside --cluster-cidr ${this.sets.map((s) => s.cluster.text).join(',')}`);
    }
    this.held.set(node, { uid, cidrs, claims });
    return problems;
  }

  /** Allocates one range per cluster CIDR; undefined (nothing claimed) when a set is full. */
  allocate(node: string, uid: string): string[] | undefined {
    this.release(node);
    const got: Cidr[] = [];
    for (const set of this.sets) {
      const c = set.allocate(node);
      if (!c) {
        got.forEach((g, i) => this.sets[i]!.release(this.sets[i]!.indicesOf(g), node));
        return undefined;
      }
      got.push(c);
    }
    this.held.set(node, { uid, cidrs: got.map((c) => c.text), claims: got.map((c, i) => this.sets[i]!.indicesOf(c)) });
    return got.map((c) => c.text);
  }

  /** Drops everything `node` holds; returns the number of ranges that became free. */
  release(node: string): number {
    const h = this.held.get(node);
    if (!h) return 0;
    this.held.delete(node);
    return h.claims.reduce((n, indices, i) => n + this.sets[i]!.release(indices, node), 0);
  }
}
