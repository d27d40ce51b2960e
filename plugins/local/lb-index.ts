/**
 * Load balancer lookups inside one state update, without walking the immer
 * draft: the update's base view (plain, frozen records, indexed by name)
 * plus what this update wrote so far. Reading every record through the
 * draft made each ensure O(load balancers) in proxy creations: at 20,000
 * load balancers one batch of 500 ensures took minutes of CPU, past the
 * host's call deadlines and liveness checks (docs/benchmarks.md,
 * scale-large). Valid only while the update adds or replaces load
 * balancers through {@link LbIndex.put} (no removal, no reordering), which
 * is what ensures and backend updates do.
 */
import type { LoadBalancerRecord, LocalCloudState, StateView } from './state.js';

export class LbIndex {
  /** Written by this update: the record and its position in the draft's list. */
  private readonly written = new Map<string, { lb: LoadBalancerRecord; at: number }>();
  /** Ingress IP → load balancer name, built on first use. */
  private ips?: Map<string, string>;
  private count: number;

  constructor(
    private readonly base: StateView,
    private readonly draft: LocalCloudState,
  ) {
    this.count = base.state.loadBalancers.length;
  }

  /** How many load balancers the state holds now. */
  get size(): number {
    return this.count;
  }

  /** The load balancer named `name` as of now (a plain record, not a draft), and its position in the list. */
  find(name: string): { lb: LoadBalancerRecord; at: number } | undefined {
    const mine = this.written.get(name);
    if (mine) return mine;
    const lb = this.base.loadBalancer(name);
    return lb ? { lb, at: this.base.state.loadBalancers.indexOf(lb) } : undefined;
  }

  /** The name of the load balancer holding `ip`, if any. */
  holderOf(ip: string): string | undefined {
    return this.ipMap().get(ip);
  }

  /** The ingress IPs in use (ingress IP → load balancer name), as allocation asks: no copy, read-only. */
  usedIps(): ReadonlyMap<string, string> {
    return this.ipMap();
  }

  /** Writes `lb` into the draft: replacing the record of its name where it is, else appended. */
  put(lb: LoadBalancerRecord): void {
    const prev = this.find(lb.name);
    const at = prev ? prev.at : this.draft.loadBalancers.length;
    if (prev) this.draft.loadBalancers[at] = lb;
    else {
      this.draft.loadBalancers.push(lb);
      this.count++;
    }
    const ips = this.ipMap();
    if (prev && ips.get(prev.lb.ingressIp) === lb.name) ips.delete(prev.lb.ingressIp);
    ips.set(lb.ingressIp, lb.name);
    this.written.set(lb.name, { lb, at });
  }

  private ipMap(): Map<string, string> {
    this.ips ??= new Map(this.base.state.loadBalancers.map((l) => [l.ingressIp, l.name]));
    return this.ips;
  }
}
