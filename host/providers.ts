/**
 * The providers of this host (one from the flags, or several from
 * --providers-config): for each, its name, its supervisor, the Cloud over it
 * and what it said about itself (plugin info, capabilities). Built by
 * start/plugin.ts once every provider is started; read-only afterwards.
 *
 * How a controller gets them: `ControllerDeps.providers` (controllers/
 * registry.ts) is this registry; `providers.list()` is every provider as
 * `{ name, cloud, capabilities() }`, in --providers-config order, and
 * `providers.default` the one whose Cloud is `ControllerDeps.cloud`. The cloud
 * node and node lifecycle controllers run once per provider
 * (controllers/per-provider.ts), the route controller for the route provider
 * (route/start.ts), the service controller with every provider that has load
 * balancers (by class), the volume controllers with every provider that has
 * volumes (by provisioner, controllers/volume/start.ts), the others on the default (docs/flags.md, "Several
 * providers"); `forProviderId` routes a Node by the scheme of its providerID.
 */
import type { Cloud } from './cloud.js';
import type { ProviderConfig } from './config/providers.js';
import type { PluginSupervisor } from './plugin/supervisor.js';
import type { GetPluginCapabilitiesResponse, GetPluginInfoResponse } from '../proto/gen/ccm/provider/v1/identity.js';

/** One provider the host runs. */
export interface Provider {
  /** Its name in the host (--cloud-provider, or the file's `name`): logs, metrics and /readyz use it. */
  readonly name: string;
  /** Whether this is the default provider, `ControllerContext.cloud` (the single one, the first, or the file's `default: true`); Services go by class and volumes by provisioner over every provider. */
  readonly isDefault: boolean;
  readonly config: ProviderConfig;
  readonly supervisor: PluginSupervisor;
  /** The Cloud facade over the supervisor: calls fail with PluginUnavailableError while it is not ready. */
  readonly cloud: Cloud;
  /**
   * What the provider declared at its latest start (GetPluginCapabilities):
   * its providerName (the providerID scheme), services and capabilities. A
   * restart may change them, so read it when needed rather than keeping it.
   */
  capabilities(): GetPluginCapabilitiesResponse;
  /** GetPluginInfo of its latest start: implementation name, version, protocol, own flags and controllers. */
  info(): GetPluginInfoResponse;
}

export class ProviderRegistry {
  private readonly byName: ReadonlyMap<string, Provider>;
  readonly default: Provider;

  /** `providers` in order, names unique, exactly one default (config/providers.ts guarantees it). */
  constructor(private readonly providers: readonly Provider[]) {
    this.byName = new Map(providers.map((p) => [p.name, p]));
    const d = providers.filter((p) => p.isDefault);
    if (providers.length === 0 || d.length !== 1 || this.byName.size !== providers.length) {
      throw new Error(`a provider registry needs unique names and exactly one default (got ${providers.length} providers, ${d.length} default)`);
    }
    this.default = d[0]!;
  }

  /** Every provider, in configuration order (the default among them). */
  list(): readonly Provider[] {
    return this.providers;
  }

  /** The provider named `name`, if any. */
  get(name: string): Provider | undefined {
    return this.byName.get(name);
  }

  /**
   * The provider whose declared providerName is the scheme of `providerId`
   * (`<providerName>://...`), or undefined: no providerID, no scheme, no such
   * provider, or two providers declaring the same name (ambiguous, so
   * neither). A Node for which this is undefined belongs to no provider of
   * this host and must not be touched.
   */
  forProviderId(providerId: string | undefined): Provider | undefined {
    const scheme = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?):\/\//.exec(providerId ?? '')?.[1];
    if (scheme === undefined) return undefined;
    const owners = this.providers.filter((p) => p.supervisor.identity?.capabilities.providerName === scheme);
    return owners.length === 1 ? owners[0] : undefined;
  }
}
