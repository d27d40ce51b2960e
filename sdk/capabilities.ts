/**
 * GetPluginCapabilities derived from the provider object, so the answer can
 * never disagree with what is implemented. Computed once at start: the
 * protocol requires the answer to stay fixed for the life of the process.
 */
import { Capability, type GetPluginCapabilitiesResponse } from '../proto/gen/ccm/provider/v1/identity.js';
import type { CloudProvider } from './provider.js';
import { hasMethod, PROVIDER_SERVICES, providerService } from './services.js';

/** InstancesService RPCs that belong to the legacy (Instances v1) surface. */
export const LEGACY_INSTANCES_METHODS: readonly string[] = [
  'nodeAddresses',
  'nodeAddressesByProviderId',
  'instanceId',
  'instanceType',
  'instanceTypeByProviderId',
  'addSshKeyToAllInstances',
  'currentNodeName',
];

/**
 * Services: one per present service object. Capabilities:
 * - INSTANCES_BATCH: instances has getInstancesStatus AND getInstancesMetadata;
 * - INSTANCES_LEGACY: instances has any legacy method;
 * - LOAD_BALANCER_BATCH_HOSTS: loadBalancers has updateLoadBalancerHosts;
 * - LOAD_BALANCER_BATCH_ENSURE: loadBalancers has ensureLoadBalancers (a
 *   provider with only ensureLoadBalancer gets single calls from the host);
 * - LOAD_BALANCER_LIST: loadBalancers has listLoadBalancers;
 * - LOAD_BALANCER_IP_MODE_PROXY: info.loadBalancerIpModeProxy and loadBalancers present;
 * - LOAD_BALANCER_POD_BACKENDS: info.loadBalancerPodBackends and loadBalancers present;
 * - ROUTES_RECONCILE: routes has reconcileRoutes;
 * - VOLUMES_LIST_PUBLISHED_NODES: volumes has listVolumes;
 * - VOLUMES_EXPAND_ONLINE: info.volumesExpandOnline and volumes present;
 * - METRICS: the provider has metrics();
 * - PROVIDER_SCHEMA: the provider has a schema.
 * The load balancer class declaration (info.loadBalancerClasses,
 * info.loadBalancerClassesOnly) is sent as is when loadBalancers is present,
 * the volume provisioner names (info.volumeProvisioners) when volumes is.
 * Info flags are ignored when their service is absent (a feature of a service
 * the provider does not serve means nothing). Capabilities are sorted.
 */
export function deriveCapabilities(provider: CloudProvider): GetPluginCapabilitiesResponse {
  const services = PROVIDER_SERVICES.filter((s) => providerService(provider, s.key) !== undefined).map((s) => s.service);
  const instances = providerService(provider, 'instances');
  const loadBalancers = providerService(provider, 'loadBalancers');
  const routes = providerService(provider, 'routes');
  const volumes = providerService(provider, 'volumes');
  const caps = new Set<Capability>();
  if (hasMethod(instances, 'getInstancesStatus') && hasMethod(instances, 'getInstancesMetadata')) caps.add(Capability.CAPABILITY_INSTANCES_BATCH);
  if (LEGACY_INSTANCES_METHODS.some((m) => hasMethod(instances, m))) caps.add(Capability.CAPABILITY_INSTANCES_LEGACY);
  if (hasMethod(loadBalancers, 'updateLoadBalancerHosts')) caps.add(Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS);
  if (hasMethod(loadBalancers, 'ensureLoadBalancers')) caps.add(Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE);
  if (hasMethod(loadBalancers, 'listLoadBalancers')) caps.add(Capability.CAPABILITY_LOAD_BALANCER_LIST);
  if (loadBalancers && provider.info.loadBalancerIpModeProxy) caps.add(Capability.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY);
  if (loadBalancers && provider.info.loadBalancerPodBackends) caps.add(Capability.CAPABILITY_LOAD_BALANCER_POD_BACKENDS);
  if (hasMethod(routes, 'reconcileRoutes')) caps.add(Capability.CAPABILITY_ROUTES_RECONCILE);
  if (hasMethod(volumes, 'listVolumes')) caps.add(Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES);
  if (volumes && provider.info.volumesExpandOnline) caps.add(Capability.CAPABILITY_VOLUMES_EXPAND_ONLINE);
  if (typeof provider.metrics === 'function') caps.add(Capability.CAPABILITY_METRICS);
  if (provider.schema !== undefined) caps.add(Capability.CAPABILITY_PROVIDER_SCHEMA);
  return {
    services,
    capabilities: [...caps].sort((a, b) => a - b),
    providerName: provider.info.providerName,
    hasClusterId: provider.info.hasClusterId ?? false,
    providerIdPrefixes: [...(provider.info.providerIdPrefixes ?? [])],
    nodeSelector: provider.info.nodeSelector ?? '',
    loadBalancerClasses: loadBalancers ? [...(provider.info.loadBalancerClasses ?? [])] : [],
    loadBalancerClassesOnly: loadBalancers ? (provider.info.loadBalancerClassesOnly ?? false) : false,
    volumeProvisioners: volumes ? [...(provider.info.volumeProvisioners ?? [])] : [],
  };
}
