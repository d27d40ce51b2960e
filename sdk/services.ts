/**
 * The optional provider services: which CloudProvider key implements which
 * generated gRPC service, and which Service enum value announces it. The
 * server, the capability derivation and the client factory all read this one
 * table.
 */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { Service } from '../proto/gen/ccm/provider/v1/identity.js';
import { InstancesServiceService } from '../proto/gen/ccm/provider/v1/instances.js';
import { LoadBalancersServiceService } from '../proto/gen/ccm/provider/v1/load_balancers.js';
import { RoutesServiceService } from '../proto/gen/ccm/provider/v1/routes.js';
import { VolumesServiceService } from '../proto/gen/ccm/provider/v1/volumes.js';
import { ClustersServiceService, ZonesServiceService } from '../proto/gen/ccm/provider/v1/zones.js';
import type { CloudProvider } from './provider.js';

/** CloudProvider keys that hold an optional service object. */
export type ProviderServiceKey = 'instances' | 'zones' | 'clusters' | 'loadBalancers' | 'routes' | 'volumes';

/** One optional service. */
export interface ProviderServiceEntry {
  key: ProviderServiceKey;
  /** Short gRPC service name, e.g. "InstancesService". */
  name: string;
  definition: ServiceDefinition;
  service: Service;
}

/** All optional services, in Service enum order. */
export const PROVIDER_SERVICES: readonly ProviderServiceEntry[] = [
  { key: 'instances', name: 'InstancesService', definition: InstancesServiceService, service: Service.SERVICE_INSTANCES },
  { key: 'zones', name: 'ZonesService', definition: ZonesServiceService, service: Service.SERVICE_ZONES },
  { key: 'clusters', name: 'ClustersService', definition: ClustersServiceService, service: Service.SERVICE_CLUSTERS },
  { key: 'loadBalancers', name: 'LoadBalancersService', definition: LoadBalancersServiceService, service: Service.SERVICE_LOAD_BALANCERS },
  { key: 'routes', name: 'RoutesService', definition: RoutesServiceService, service: Service.SERVICE_ROUTES },
  { key: 'volumes', name: 'VolumesService', definition: VolumesServiceService, service: Service.SERVICE_VOLUMES },
];

/** A provider service object seen generically: method name → maybe a function. */
export type UntypedProviderService = Record<string, unknown>;

/** The provider's object for `key`, or undefined when the service is absent. */
export function providerService(provider: CloudProvider, key: ProviderServiceKey): UntypedProviderService | undefined {
  const svc: unknown = provider[key];
  return svc !== null && typeof svc === 'object' ? (svc as UntypedProviderService) : undefined;
}

/** Whether the service object has a callable `method` (own or inherited, e.g. a class). */
export function hasMethod(svc: UntypedProviderService | undefined, method: string): boolean {
  return svc !== undefined && typeof svc[method] === 'function';
}

/** "ccm.provider.v1.InstancesService/InstanceExists" from a method path. */
export function fullMethodName(path: string): string {
  return path.replace(/^\//, '');
}
