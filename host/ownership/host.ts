/**
 * The host's providers' node ownership declarations for the controllers: a
 * list of providers, each with its name in the host, its Cloud (whose
 * capabilities carry the declarations) and the operator's override.
 * Today the host runs one provider (the flags'); a host with several passes
 * them all (the empty-selector rule depends on how many there are).
 */
import type { Cloud } from '../cloud.js';
import type { HostConfig } from '../config/config.js';
import { nodeOwnershipDeclarations, type NodeOwnershipDeclaration, type NodeOwnershipInput } from './nodes.js';

/** One provider of the host, as ownership needs it. */
export interface OwnershipProvider {
  /** Its name in the host (with one provider: its provider_name). */
  name: () => string;
  cloud: Cloud;
  /** `--node-ownership-prefixes` / `--node-ownership-selector` (or the same per provider). */
  override: HostConfig['nodeOwnership'];
}

/** What controllers get (ControllerContext.nodeOwnership). */
export interface HostNodeOwnership {
  /** Every provider's resolved declarations; recomputed only when a provider's answer changes (a restarted plugin). */
  declarations(): readonly NodeOwnershipDeclaration[];
}

/** The declarations of `providers`: their capabilities, each field replaced by its override when set. */
export function hostNodeOwnership(providers: readonly OwnershipProvider[]): HostNodeOwnership {
  let last: { key: string; value: readonly NodeOwnershipDeclaration[] } | undefined;
  return {
    declarations() {
      const inputs: NodeOwnershipInput[] = providers.map((p) => {
        const info = p.cloud.info();
        return {
          name: p.name(),
          providerName: info.providerName,
          providerIdPrefixes: p.override.prefixes ?? info.providerIdPrefixes,
          nodeSelector: p.override.selector ?? info.nodeSelector,
        };
      });
      const key = JSON.stringify(inputs);
      // Invalid declarations of a plugin are refused at its handshake, and the override at flag parsing.
      if (last?.key !== key) last = { key, value: Object.freeze(nodeOwnershipDeclarations(inputs)) };
      return last.value;
    },
  };
}

/** The one-provider host: the flags' provider, named by its provider_name. */
export function singleProviderOwnership(config: HostConfig, cloud: Cloud): HostNodeOwnership {
  return hostNodeOwnership([{ name: () => cloud.info().providerName, cloud, override: config.nodeOwnership }]);
}
