/**
 * What a TypeScript provider author implements. A provider is a plain object:
 * it sets only the services it has, and within a service only the methods it
 * has. Everything missing answers UNIMPLEMENTED, and the capabilities the host
 * sees (GetPluginCapabilities) are derived from what is present, so they can
 * never disagree with the implementation.
 *
 * Method contracts (semantics, idempotency, which error means what) are the
 * RPC comments in proto/ccm/provider/v1/*.proto; request and response types
 * are the generated ones. Throw the classes in ./errors.ts to answer with a
 * specific code and reason; any other thrown value becomes INTERNAL.
 */
import type { handleUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { ClustersServiceServer, ZonesServiceServer } from '../proto/gen/ccm/provider/v1/zones.js';
import type { ConfigureRequest, ConfigureResponse } from '../proto/gen/ccm/provider/v1/lifecycle.js';
import type { SchemaAnnotation, SchemaConfigKey } from '../proto/gen/ccm/provider/v1/identity.js';
import type { InstancesServiceServer } from '../proto/gen/ccm/provider/v1/instances.js';
import type { LoadBalancersServiceServer } from '../proto/gen/ccm/provider/v1/load_balancers.js';
import type { RoutesServiceServer } from '../proto/gen/ccm/provider/v1/routes.js';
import type { VolumesServiceServer } from '../proto/gen/ccm/provider/v1/volumes.js';

/** Per-call context handed to every provider method. */
export interface CallContext {
  /** Aborted when the host cancels the call, its deadline passes, or Shutdown begins. */
  signal: AbortSignal;
  /** Absolute deadline in ms since the epoch, if the host set one. */
  deadlineMs?: number;
  /** The calling host replica's identity (metadata `x-ccm-caller`), when the host sent one. */
  caller?: string;
}

/** Turns a generated gRPC server interface into optional async methods. */
export type AsyncService<S extends UntypedServiceImplementation> = {
  [K in keyof S as string extends K ? never : K]?: S[K] extends handleUnaryCall<infer Req, infer Res>
    ? (request: Req, ctx: CallContext) => Promise<Res>
    : never;
};

export type InstancesProvider = AsyncService<InstancesServiceServer>;
export type ZonesProvider = AsyncService<ZonesServiceServer>;
export type ClustersProvider = AsyncService<ClustersServiceServer>;
export type LoadBalancersProvider = AsyncService<LoadBalancersServiceServer>;
export type RoutesProvider = AsyncService<RoutesServiceServer>;
export type VolumesProvider = AsyncService<VolumesServiceServer>;

/** Identity a provider declares. */
export interface ProviderInfo {
  /** DNS-style implementation name, e.g. "local.ccm.dev". */
  name: string;
  /** Vendor version, free form. */
  vendorVersion: string;
  /** Name used in providerIDs ("<providerName>://<id>"): a lowercase DNS label. */
  providerName: string;
  /** Whether cloud objects are tagged with the cluster name (upstream HasClusterID). */
  hasClusterId?: boolean;
  /** Free-form build facts. */
  manifest?: Record<string, string>;
  /** Load balancer ingress may report ipMode Proxy. */
  loadBalancerIpModeProxy?: boolean;
  /** Volumes can be expanded while attached. */
  volumesExpandOnline?: boolean;
  /**
   * Load balancers can send traffic straight to pod addresses (protocol 1.1,
   * CAPABILITY_LOAD_BALANCER_POD_BACKENDS): the host then sends
   * ServiceRef.endpoints and pod_backends for the Services that ask
   * (annotation service.ccm.dev/load-balancer-backends: pods). Read the
   * ServiceRef with podBackendsOf (sdk/pod-backends.ts).
   */
  loadBalancerPodBackends?: boolean;
  /**
   * Node ownership (KEP-5778): the providerID prefixes of the Nodes this
   * provider owns, each ending in "://" (e.g. ["aws://"]). Absent or empty:
   * `${providerName}://`. The host never sends the provider a Node with
   * another prefix; the providerIDs instanceMetadata returns must start with
   * one of them.
   */
  providerIdPrefixes?: string[];
  /**
   * A label selector (kubectl -l syntax, e.g. "topology.kubernetes.io/platform=aws")
   * claiming Nodes that have no providerID yet. Absent or empty: with one
   * provider in the host, every such Node; with several, none.
   */
  nodeSelector?: string;
  /**
   * The Service spec.loadBalancerClass values this provider's load balancers
   * serve (e.g. ["example.com/internal"]); the host sends it only Services of
   * these classes, plus Services without a class unless
   * `loadBalancerClassesOnly`. Default: none (Services without a class only).
   */
  loadBalancerClasses?: string[];
  /** Serve only `loadBalancerClasses`, never Services without a class (default false). */
  loadBalancerClassesOnly?: boolean;
  /**
   * The StorageClass provisioner (CSI driver) names this provider's volumes
   * serve (e.g. ["disk.csi.example.com"]); the host sends it only the claims,
   * PersistentVolumes and VolumeAttachments of these names. Default: none
   * declared, so the host uses its --volume-provisioner-name or this
   * provider's `name`, as before.
   */
  volumeProvisioners?: string[];
}

/**
 * What a provider reads from Service annotations and its cloud config
 * (IdentityService.GetProviderSchema, protocol 1.1). The host checks every
 * Service's annotations against it before each ensure: a key under one of
 * `annotationPrefixes` that `annotations` does not list, or a value that
 * does not fit its entry, is a Warning event and no cloud call. Unset fields
 * of an entry take their proto defaults (e.g. `caseInsensitive: false`).
 */
export interface ProviderSchema {
  /** Annotation key prefixes the provider owns, e.g. "example.com/": an unlisted key under one is a misspelling. */
  annotationPrefixes?: string[];
  annotations: (Pick<SchemaAnnotation, 'key' | 'objectKind' | 'type'> & Partial<SchemaAnnotation>)[];
  cloudConfigKeys?: (Pick<SchemaConfigKey, 'key' | 'type'> & Partial<SchemaConfigKey>)[];
}

/** A cloud provider. Only `info` is required. */
export interface CloudProvider {
  info: ProviderInfo;
  /**
   * Receives the cloud config. Called after start and after every restart,
   * before any cloud call. Throw InvalidArgumentError for a bad config.
   */
  configure?(request: ConfigureRequest, ctx: CallContext): Promise<ConfigureResponse | void>;
  /** Readiness; defaults to ready. Throw to report unhealthy. */
  probe?(ctx: CallContext): Promise<boolean>;
  /** Called once when the provider stops (Shutdown RPC, SIGTERM or stdin EOF). */
  close?(): Promise<void>;
  /**
   * The provider's metrics in the Prometheus text format (e.g. a prom-client
   * registry's `metrics()`), served by the host on its /metrics
   * (IdentityService.GetMetrics): prefix names with the provider name; at most
   * 4 MiB. Implementing it announces CAPABILITY_METRICS. Called on scrapes,
   * also before Configure.
   */
  metrics?(ctx: CallContext): Promise<string>;
  /**
   * The annotations (and cloud-config keys) the provider reads, served by
   * IdentityService.GetProviderSchema; declaring it announces
   * CAPABILITY_PROVIDER_SCHEMA. Fixed for the life of the process; at most
   * 1 MiB encoded.
   */
  schema?: ProviderSchema;
  instances?: InstancesProvider;
  zones?: ZonesProvider;
  clusters?: ClustersProvider;
  loadBalancers?: LoadBalancersProvider;
  routes?: RoutesProvider;
  volumes?: VolumesProvider;
}
