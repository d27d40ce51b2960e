/**
 * Which protocol methods change the cloud, and the optional call metadata
 * naming the caller. Shared by the host (only the leader may send these) and
 * providers (the local cloud journals them with the caller).
 */

/** gRPC metadata key: identity of the host replica making the call (`hostname_uuid`). Optional; providers may log or journal it. */
export const CALLER_METADATA_KEY = 'x-ccm-caller';

/** Methods (proto names) that change cloud state. Everything else only reads. */
export const MUTATING_METHODS: ReadonlySet<string> = new Set([
  'AddSshKeyToAllInstances',
  'EnsureLoadBalancer',
  'UpdateLoadBalancer',
  'EnsureLoadBalancerDeleted',
  'UpdateLoadBalancerHosts',
  'EnsureLoadBalancers',
  'CreateRoute',
  'DeleteRoute',
  'ReconcileRoutes',
  'CreateVolume',
  'DeleteVolume',
  'ControllerPublishVolume',
  'ControllerUnpublishVolume',
  'ControllerExpandVolume',
]);

/** Whether `method` (proto name, or lowerCamel as in provider objects) changes cloud state. */
export function isMutatingMethod(method: string): boolean {
  return MUTATING_METHODS.has(method.charAt(0).toUpperCase() + method.slice(1));
}
