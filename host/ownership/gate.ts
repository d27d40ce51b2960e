/**
 * A controller's view of node ownership: `admit(node)` is true only for a
 * Node its provider owns (nodes.ts decides). A Node that two providers claim
 * gets a Warning event `NodeOwnershipConflict` (again at most every
 * EVENT_REPEAT_MS while the claim stays the same) and counts in
 * `ccm_node_ownership_conflicts{controller}`; a Node no provider owns, or
 * another provider owns, gets one log line per Node. Neither is ever touched
 * by the controller.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { ownershipMetrics } from '../controller-metrics.js';
import type { EventRecorder } from '../kube/events.js';
import type { Logger } from '../log.js';
import { EventReasons } from '../names.js';
import { RepeatFilter } from '../util/repeat-filter.js';
import type { HostNodeOwnership } from './host.js';
import { nodeOwnershipDeclarations, resolveNodeOwner, type NodeOwner, type NodeOwnershipDeclaration } from './nodes.js';

/** A conflict's Warning is repeated at most this often per Node. */
const EVENT_REPEAT_MS = 10 * 60_000;

/** Whose Nodes a controller acts on. */
export interface OwnershipSource {
  /** The provider this controller serves, by its name in the declarations. */
  provider: () => string;
  /** Every provider's declarations (nodes.ts), read on each call: a restarted plugin may declare others. */
  declarations: () => readonly NodeOwnershipDeclaration[];
}

/** A host whose only provider is `providerName`, declaring nothing: `<providerName>://` and every Node without a providerID. */
export function defaultOwnership(providerName: () => string): OwnershipSource {
  return {
    provider: providerName,
    declarations: () => nodeOwnershipDeclarations([{ name: providerName(), providerName: providerName(), providerIdPrefixes: [], nodeSelector: '' }]),
  };
}

/**
 * A controller's ownership source from its context: the host's declarations,
 * the controller's provider named as the declarations name it (one provider:
 * its provider_name).
 */
export function ownershipOf(ctx: { cloud: { info(): { providerName: string } }; nodeOwnership: HostNodeOwnership }): OwnershipSource {
  return { provider: () => ctx.cloud.info().providerName, declarations: () => ctx.nodeOwnership.declarations() };
}

export interface OwnershipGateOptions extends OwnershipSource {
  /** The controller's canonical name (the metric's label). */
  controller: string;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
}

export class OwnershipGate {
  private readonly conflicts = new Map<string, string>();
  /** Nodes left alone as not this provider's: what was logged for each (one line per Node and verdict). */
  private readonly logged = new Map<string, string>();
  private readonly warned = new RepeatFilter(EVENT_REPEAT_MS);
  private readonly metrics?: ReturnType<typeof ownershipMetrics>;

  constructor(private readonly o: OwnershipGateOptions) {
    this.metrics = o.registry ? ownershipMetrics(o.registry) : undefined;
    this.metrics?.conflicts.set({ controller: o.controller }, 0);
  }

  /** Who owns `node` now. */
  ownerOf(node: V1Node): NodeOwner {
    return resolveNodeOwner(node, this.o.declarations());
  }

  /** Whether this controller's provider owns `node`, silently (for batch companions and refresh lists). */
  owns(node: V1Node): boolean {
    const owner = this.ownerOf(node);
    return owner.kind === 'owned' && owner.provider === this.o.provider();
  }

  /** Whether this controller's provider owns `node`; reports conflicts and logs foreign Nodes once. */
  admit(node: V1Node): boolean {
    const name = node.metadata?.name ?? '';
    const owner = this.ownerOf(node);
    const self = this.o.provider();
    if (owner.kind === 'owned' && owner.provider === self) {
      this.settle(name);
      return true;
    }
    if (owner.kind === 'conflict') {
      this.conflict(node, owner.providers);
      return false;
    }
    this.settle(name);
    const providerId = node.spec?.providerID ?? '';
    const whose = owner.kind === 'owned' ? `provider ${owner.provider}` : 'no provider';
    const verdict = `${whose}\u0000${providerId}`;
    if (this.logged.get(name) !== verdict) {
      this.logged.set(name, verdict);
      this.o.log.info(
        {
          node: name,
          providerID: providerId || undefined,
          owner: owner.kind === 'owned' ? owner.provider : undefined,
          // A per-provider controller's logger already names its provider (controllers/per-provider.ts): no second key.
          ...('provider' in this.o.log.bindings() ? {} : { provider: self }),
        },
        owner.kind === 'owned'
          ? 'node belongs to another provider; leaving it alone'
          : providerId
            ? 'no provider owns the node (its providerID has no declared prefix); leaving it alone'
            : "no provider owns the node (no providerID, and no provider's node selector matches its labels); leaving it alone",
      );
    }
    return false;
  }

  /** The Node is gone: its records go too. */
  forget(name: string): void {
    this.settle(name);
    this.logged.delete(name);
  }

  /** Forgets every Node not in `names` (after a full pass over the cache). */
  retain(names: ReadonlySet<string>): void {
    for (const name of [...this.conflicts.keys(), ...this.logged.keys()]) if (!names.has(name)) this.forget(name);
  }

  private conflict(node: V1Node, providers: string[]): void {
    const name = node.metadata?.name ?? '';
    const claim = providers.join(', ');
    this.conflicts.set(name, claim);
    this.metrics?.conflicts.set({ controller: this.o.controller }, this.conflicts.size);
    if (!this.warned.admit(name, claim)) return;
    const providerId = node.spec?.providerID ?? '';
    const by = providerId ? `its providerID ${JSON.stringify(providerId)} has a prefix` : 'its labels match the node selector';
    this.o.log.warn({ node: name, providers, providerID: providerId || undefined }, 'node claimed by several providers; leaving it alone');
    this.o.recorder.event(
      node,
      'Warning',
      EventReasons.NODE_OWNERSHIP_CONFLICT,
      `Node ${name} is claimed by the providers ${claim} (${by} that each of them declares): no provider is asked about it and it is left alone until exactly one claims it`,
    );
  }

  private settle(name: string): void {
    if (!this.conflicts.delete(name)) return;
    this.warned.clear(name);
    this.metrics?.conflicts.set({ controller: this.o.controller }, this.conflicts.size);
  }
}
