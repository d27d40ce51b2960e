/**
 * What the demo prints as the cluster changes: each node's Ready status and
 * taints, nodes deleted, and the demo load balancer's backends, one line per
 * change (so a node dying can be followed without kubectl).
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import type { StateStore } from '../plugins/local/state.js';

export class DemoWatch {
  private readonly nodes = new Map<string, string>();
  private backends?: string;

  constructor(
    private readonly core: CoreV1Api,
    private readonly store: StateStore,
    private readonly serviceName: string,
    private readonly say: (line: string) => void,
  ) {}

  /** Reads the nodes and the load balancer once and prints what changed since the last call. */
  async poll(): Promise<void> {
    const seen = new Set<string>();
    for (const n of (await this.core.listNode({})).items) {
      const name = n.metadata?.name ?? '';
      seen.add(name);
      const line = describe(n);
      if (this.nodes.get(name) !== line) this.say(`node ${name}: ${line}`);
      this.nodes.set(name, line);
    }
    for (const name of this.nodes.keys()) {
      if (seen.has(name)) continue;
      this.nodes.delete(name);
      this.say(`node ${name}: deleted`);
    }
    const lb = this.store.read().loadBalancers.find((l) => l.serviceName === this.serviceName);
    const backends = lb ? lb.backends.map((b) => `${b.nodeName}=${b.address}`).join(', ') || 'none' : undefined;
    if (backends !== undefined && backends !== this.backends) this.say(`load balancer of ${this.serviceName}: backends ${backends}`);
    this.backends = backends;
  }
}

/** `Ready=True, providerID local://…, taints: key:Effect, …` */
function describe(n: V1Node): string {
  const ready = (n.status?.conditions ?? []).find((c) => c.type === 'Ready')?.status ?? 'not reported';
  const taints = (n.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
  return `Ready=${ready}, providerID ${n.spec?.providerID ?? 'none'}, taints: ${taints.join(', ') || 'none'}`;
}
