/**
 * The load balancer capability (upstream cloudprovider.LoadBalancer) as the
 * service controller sees it. Implemented over gRPC in
 * host/plugin/grpc-load-balancers.ts, which validates every answer.
 *
 * Every method takes the host's --cluster-name (the provider tags and names
 * cloud objects with it) and treats its inputs as read-only. Errors are the
 * classes of host/errors.ts:
 *  - ImplementedElsewhereError: another implementation owns this Service's
 *    load balancer; the controller skips it silently (from
 *    ensureLoadBalancerDeleted: nothing to delete, the finalizer is removed).
 *  - RetryAfterError: retry after `retryAfterMs` (clamped by runWorkers).
 *  - InvalidCloudResponseError: the answer was invalid; nothing was written.
 *  - anything else: retry with the per-Service exponential backoff.
 */
import type { LbClassDeclaration } from './lb-classes.js';
import type { NodeRef } from './cloud.js';

export type LbProtocol = 'TCP' | 'UDP' | 'SCTP';

/** One Service port. */
export interface LbServicePort {
  name: string;
  protocol: LbProtocol;
  port: number;
  /** 0 when the Service has none (allocateLoadBalancerNodePorts=false). */
  nodePort: number;
  appProtocol: string;
  /** spec.ports[].targetPort: a number, a Pod port's name, or undefined when unset. */
  targetPort?: number | string;
}

/** The parts of a Service a load balancer depends on. Read-only input. */
export interface ServiceRef {
  uid: string;
  namespace: string;
  name: string;
  annotations: Record<string, string>;
  labels: Record<string, string>;
  ports: LbServicePort[];
  loadBalancerIp: string;
  loadBalancerSourceRanges: string[];
  ipFamilies: ('IPv4' | 'IPv6')[];
  externalTrafficPolicy: 'Cluster' | 'Local';
  healthCheckNodePort: number;
  sessionAffinity: 'None' | 'ClientIP';
  sessionAffinityTimeoutSeconds: number;
  loadBalancerClass: string;
  // The rest is what toServiceRef (host/controllers/service/service-ref.ts)
  // fills from the Service within the protocol's bounds
  // (proto/ccm/provider/v1/load_balancers.proto, ServiceRef); absent means
  // empty or unset.
  selector?: Record<string, string>;
  clusterIps?: string[];
  ipFamilyPolicy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  externalIps?: string[];
  allocateLoadBalancerNodePorts?: boolean;
  internalTrafficPolicy?: 'Cluster' | 'Local';
  /** status.loadBalancer as the Service shows it (not part of what the load balancer should be). */
  status?: LbStatus;
  /**
   * Pod-IP backends (protocol 1.1, host/controllers/service/pod-backends.ts):
   * set only when the provider declares CAPABILITY_LOAD_BALANCER_POD_BACKENDS
   * and the Service asks for them; absent: node-port backends, as before.
   */
  podBackends?: PodBackendSet;
}

/** One Service port's endpoint port on one endpoint (proto EndpointPort). */
export interface EndpointPortRef {
  name: string;
  servicePort: number;
  protocol: LbProtocol;
  port: number;
}

/** One endpoint sent as a pod backend (proto EndpointBackend). */
export interface EndpointBackendRef {
  addresses: string[];
  ipFamily: 'IPv4' | 'IPv6';
  ports: EndpointPortRef[];
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  nodeName: string;
  zone: string;
  /** "namespace/name" of the Pod, '' when the target is not a Pod. */
  pod: string;
}

/** ServiceRef.endpoints and ServiceRef.pod_backends. */
export interface PodBackendSet {
  endpoints: EndpointBackendRef[];
  /** spec.trafficDistribution, '' when unset. */
  trafficDistribution: string;
  /** Endpoints beyond the per-Service bound, not sent. */
  omittedEndpoints: number;
}

/** One port of an ingress point (status.loadBalancer.ingress[].ports[]). */
export interface LbPortStatus {
  port: number;
  protocol: LbProtocol;
  /** CamelCase reason, or undefined when the port is fine. */
  error?: string;
}

/** One ingress point, in the shape of Kubernetes' LoadBalancerIngress (empty fields omitted). */
export interface LbIngress {
  ip?: string;
  hostname?: string;
  ipMode?: 'VIP' | 'Proxy';
  ports?: LbPortStatus[];
}

/** A load balancer's status (validated): becomes status.loadBalancer.ingress. */
export interface LbStatus {
  ingress: LbIngress[];
}

/** A load balancer as the provider lists it: the Service it was made for (validated). */
export interface LbSummary {
  /** The provider's cloud name. */
  name: string;
  serviceUid: string;
  serviceNamespace: string;
  serviceName: string;
  /** The cluster UID the load balancer is tagged with; '' when it carries none. The sweep deletes only its own. */
  clusterUid: string;
}

/** Per-Service outcome of a batch host update: no error means success. */
export interface HostsUpdateResult {
  uid: string;
  error?: Error;
}

/** Per-Service outcome of a batch ensure: a status, or the error EnsureLoadBalancer would have thrown. */
export type EnsureResult = { uid: string; status: LbStatus; error?: undefined } | { uid: string; status?: undefined; error: Error };

/** Most Services per batch ensure call (the protocol's bound for EnsureLoadBalancers). */
export const MAX_BATCH_ENSURE = 500;

export interface LoadBalancers {
  /** Creates or converges the load balancer to `svc` and `nodes`; idempotent. */
  ensureLoadBalancer(clusterName: string, svc: ServiceRef, nodes: NodeRef[]): Promise<LbStatus>;
  /** Replaces the backend set only; idempotent. A NOT_FOUND CloudCallError when it does not exist. */
  updateLoadBalancer(clusterName: string, svc: ServiceRef, nodes: NodeRef[]): Promise<void>;
  /**
   * The same backend set for many Services in one call (requires `batchHosts`):
   * one result per Service, in input order. Rejects only when the call as a
   * whole failed.
   */
  updateLoadBalancerHosts(clusterName: string, svcs: ServiceRef[], nodes: NodeRef[]): Promise<HostsUpdateResult[]>;
  /**
   * EnsureLoadBalancer for many Services with the same backend set in one
   * call (requires `batchEnsure`; 1..MAX_BATCH_ENSURE Services, distinct
   * uids): one result per Service, in input order, each validated like the
   * single call's answer. Rejects only when the call as a whole failed.
   */
  ensureLoadBalancers(clusterName: string, svcs: ServiceRef[], nodes: NodeRef[]): Promise<EnsureResult[]>;
  /** Whether the provider has the batch ensure (CAPABILITY_LOAD_BALANCER_BATCH_ENSURE). */
  readonly batchEnsure: boolean;
  /** Deletes the load balancer; succeeds when there is none. Idempotent. */
  ensureLoadBalancerDeleted(clusterName: string, svc: ServiceRef): Promise<void>;
  /** Whether the provider has the batch host update (CAPABILITY_LOAD_BALANCER_BATCH_HOSTS). */
  readonly batchHosts: boolean;
  /**
   * Every load balancer the provider holds for `clusterName`, all pages
   * (requires `canList`). Read-only. Rejects with InvalidCloudResponseError
   * when any entry is invalid or names another cluster, or the listing
   * exceeds a bound: a sweep acts on a whole, valid listing or not at all.
   */
  listLoadBalancers(clusterName: string): Promise<LbSummary[]>;
  /** Whether the provider lists its load balancers (CAPABILITY_LOAD_BALANCER_LIST). */
  readonly canList: boolean;
  /**
   * The loadBalancerClass values the provider serves, and whether it serves
   * Services without a class (host/lb-classes.ts). Undefined: Services
   * without a class only, as every provider before the declaration.
   */
  readonly classes?: LbClassDeclaration;
  /**
   * Why a Service's annotations do not fit the provider's schema (one line
   * each; empty: they do). Undefined, or an empty answer: the provider
   * publishes no usable schema, nothing is checked by the host.
   */
  annotationProblems?(annotations: Readonly<Record<string, string>> | undefined): string[];
  /**
   * One line per deprecated annotation the Service carries, naming the
   * replacement when the schema gives one (still valid: warned at admission
   * and with one Event at ensure). Undefined or empty: none.
   */
  annotationDeprecations?(annotations: Readonly<Record<string, string>> | undefined): string[];
  /** Whether the provider takes pod-IP backends (CAPABILITY_LOAD_BALANCER_POD_BACKENDS, protocol 1.1). */
  readonly podBackends?: boolean;
}
