/**
 * Names are identifiers: controller names, aliases, event reasons, label,
 * taint and annotation keys, metric names and environment variables. They
 * match upstream kubernetes/cloud-provider where an upstream name exists. A
 * rename must keep the old name as an alias.
 */

/**
 * The Kubernetes version this build targets: its upstream CCM is the one we
 * match (flags, names, behaviour), and the test control plane runs it.
 */
export const K8S_VERSION = 'v1.34.4';

/** Canonical controller names accepted by --controllers, with their upstream aliases. */
export const Controllers = {
  CLOUD_NODE: 'cloud-node-controller',
  CLOUD_NODE_LIFECYCLE: 'cloud-node-lifecycle-controller',
  SERVICE_LB: 'service-lb-controller',
  NODE_ROUTE: 'node-route-controller',
  /** Upstream's optional nodeipam controller (RangeAllocator); runs only with --allocate-node-cidrs. */
  NODE_IPAM: 'node-ipam-controller',
  /** Not upstream (see host/controllers/volume/): CreateVolume/DeleteVolume for claims of --volume-provisioner-name. */
  VOLUME_PROVISIONER: 'volume-provisioner-controller',
  /** Not upstream: ControllerPublish/Unpublish for VolumeAttachments of --volume-provisioner-name. */
  VOLUME_ATTACHER: 'volume-attacher-controller',
  /** Not upstream: ControllerExpandVolume for grown claims. */
  VOLUME_RESIZER: 'volume-resizer-controller',
  /** Upstream's old PersistentVolumeLabel controller/admission plugin, as a webhook plus a pass over existing PVs. */
  PV_LABEL: 'persistentvolume-label-controller',
} as const;
export type ControllerName = (typeof Controllers)[keyof typeof Controllers];

/**
 * Alpha sharding (--shard-count, docs/design/sharding.md): the controllers
 * that split their objects by uid hash, one shard per replica. Every other
 * controller is cluster-wide (node CIDRs from one range, one route table, one
 * volume set, the PV label webhook) and runs on shard 0 only, as do the
 * orphan sweep and the providers' own controllers.
 */
export const SHARDED_CONTROLLERS: ReadonlySet<ControllerName> = new Set([
  Controllers.CLOUD_NODE,
  Controllers.CLOUD_NODE_LIFECYCLE,
  Controllers.SERVICE_LB,
]);

/**
 * The Lease of shard `index` with --shard-count > 1: `<--leader-elect-resource-name>-shard-<index>`.
 * With --shard-index=auto every replica campaigns for these N names (kube/shard-election.ts).
 */
export function shardLeaseName(base: string, index: number | string): string {
  return `${base}-shard-${index}`;
}

/**
 * On each shard Lease with --shard-index=auto and --cloud-api-qps > 0 (not
 * upstream; host/kube/budget-share.ts): the holder's share denominator k of
 * the cloud-call budget, a decimal integer 1..N, written with every acquire
 * and renewal. It is a floor: the holder spends at most budget/k now and
 * until it writes a lower value. Absent (an older host, or a holder that has
 * not renewed since it took the Lease): counted as N, the static split.
 */
export const CLOUD_BUDGET_SHARES_ANNOTATION = 'sharding.ccm.dev/cloud-budget-shares';

/**
 * Who counts live reads in ccm_live_reads_total's `controller` label: the
 * controllers above by name, and the orphaned load balancer sweep (part of
 * the service controller) apart, as its reads decide other deletions.
 */
export const LiveReaders = {
  ...Controllers,
  LB_ORPHAN_SWEEP: 'service-lb-orphan-sweep',
} as const;

/** ccm_live_reads_total's `outcome` values (meanings: host/controllers/live-reads.ts). */
export const LiveReadOutcomes = {
  CONFIRMED: 'confirmed',
  CHANGED: 'changed',
  GONE: 'gone',
  ERROR: 'error',
} as const;

/** Upstream aliases (`--controllers=cloud-node` works like the canonical name). */
export const ControllerAliases: Record<string, ControllerName> = {
  'cloud-node': Controllers.CLOUD_NODE,
  'cloud-node-lifecycle': Controllers.CLOUD_NODE_LIFECYCLE,
  service: Controllers.SERVICE_LB,
  route: Controllers.NODE_ROUTE,
  nodeipam: Controllers.NODE_IPAM,
  'volume-provisioner': Controllers.VOLUME_PROVISIONER,
  'volume-attacher': Controllers.VOLUME_ATTACHER,
  'volume-resizer': Controllers.VOLUME_RESIZER,
  pvl: Controllers.PV_LABEL,
};

/** Well-known keys. */
export const Taints = {
  UNINITIALIZED: 'node.cloudprovider.kubernetes.io/uninitialized',
  /** Cluster Autoscaler marks nodes it is about to remove (not load balancer backends). */
  TO_BE_DELETED_BY_CA: 'ToBeDeletedByClusterAutoscaler',
  SHUTDOWN: 'node.cloudprovider.kubernetes.io/shutdown',
} as const;

export const Labels = {
  /** Nodes carrying it (any value that does not parse as false) are not load balancer backends. */
  EXCLUDE_FROM_EXTERNAL_LBS: 'node.kubernetes.io/exclude-from-external-load-balancers',
  INSTANCE_TYPE: 'node.kubernetes.io/instance-type',
  INSTANCE_TYPE_BETA: 'beta.kubernetes.io/instance-type',
  ZONE: 'topology.kubernetes.io/zone',
  /** On an EndpointSlice: the Service it belongs to (discovery.k8s.io LabelServiceName). */
  SERVICE_NAME: 'kubernetes.io/service-name',
  ZONE_BETA: 'failure-domain.beta.kubernetes.io/zone',
  REGION: 'topology.kubernetes.io/region',
  REGION_BETA: 'failure-domain.beta.kubernetes.io/region',
} as const;

export const Annotations = {
  /** kubelet --node-ip (upstream api.AnnotationAlphaProvidedIPAddr). */
  PROVIDED_NODE_IP: 'alpha.kubernetes.io/provided-node-ip',
  /** On a PV: the provisioner that created it (external-provisioner). */
  PROVISIONED_BY: 'pv.kubernetes.io/provisioned-by',
  /** On a PVC: the provisioner the PV binder expects to provision it. */
  STORAGE_PROVISIONER: 'volume.kubernetes.io/storage-provisioner',
  STORAGE_PROVISIONER_BETA: 'volume.beta.kubernetes.io/storage-provisioner',
  /** On a PVC of a WaitForFirstConsumer class: the node the scheduler picked. */
  SELECTED_NODE: 'volume.kubernetes.io/selected-node',
  /** On a VolumeAttachment: the node id (providerID) the volume was published to (external-attacher). */
  VA_NODE_ID: 'csi.alpha.kubernetes.io/node-id',
  /** On a Node: the attach/detach controller (not the kubelet) attaches its volumes. */
  CONTROLLER_MANAGED_ATTACH_DETACH: 'volumes.kubernetes.io/controller-managed-attach-detach',
  /** On a claim with the provisioning finalizer: the CreateVolume request (JSON), repeated unchanged until it has a final answer. */
  CREATE_REQUEST: 'volume.ccm.dev/create-request',
  /** On a Service with a loadBalancerClass and our cleanup finalizer: the provider that made its load balancer (not upstream). */
  LB_PROVIDER: 'service.ccm.dev/load-balancer-provider',
  /** Beside LB_PROVIDER: the class its load balancer was made for. */
  LB_CLASS: 'service.ccm.dev/load-balancer-class',
  /**
   * On a Service: `pods` asks for pod-IP backends (protocol 1.1) from a
   * provider with CAPABILITY_LOAD_BALANCER_POD_BACKENDS (pod-backends.ts);
   * anything else or absent: node-port backends. Set by the user, not us.
   */
  LB_BACKENDS: 'service.ccm.dev/load-balancer-backends',
} as const;

/** Finalizers (upstream spelling). */
export const Finalizers = {
  /** Held by a LoadBalancer Service until its cloud load balancer is deleted (upstream). */
  LB_CLEANUP: 'service.kubernetes.io/load-balancer-cleanup',
  /** On PVs we provisioned: removed only after DeleteVolume succeeded (or the PV is retained). */
  PROVISIONER: 'external-provisioner.volume.kubernetes.io/finalizer',
  /**
   * On a claim while its CreateVolume has no final answer (not upstream):
   * a claim deleted meanwhile stays until the create is resolved and any
   * volume it made is deleted, even across host restarts.
   */
  PROVISIONING_CLAIM: 'volume.ccm.dev/provisioning',
  /** On VolumeAttachments we published: `external-attacher/<driver with non-alphanumerics as ->`. */
  attacher: (driver: string) => `external-attacher/${driver.replace(/[^a-zA-Z0-9-]/g, '-')}`,
} as const;

/**
 * On a VolumeAttachment we published: the volume handle, so a detach works
 * even when the PV is already gone (not upstream: external-attacher puts a
 * finalizer on the PV instead).
 */
export const VOLUME_HANDLE_ANNOTATION = 'volume.ccm.dev/volume-handle';

/**
 * The Lease (in the leader election's namespace) that keeps the node
 * deletion brake's count across restarts and leader changes (not upstream;
 * host/controllers/lifecycle/deletion-ledger.ts). RBAC grants get/update on
 * exactly this name.
 */
export const NODE_DELETIONS_LEASE = 'cloud-controller-manager-node-deletions';
/** On NODE_DELETIONS_LEASE: one annotation per brake, this prefix + a hash of its lock and --node-selector. */
export const NODE_DELETIONS_ANNOTATION_PREFIX = 'lifecycle.ccm.dev/node-deletions-';

/** Key of spec.csi.volumeAttributes naming the provisioner instance (external-provisioner). */
export const PROVISIONER_IDENTITY_ATTRIBUTE = 'storage.kubernetes.io/csiProvisionerIdentity';

/**
 * Event reasons. Each says whether upstream emits it, and with which type
 * where ours differs (docs/differences-from-upstream.md).
 */
export const EventReasons = {
  /** Cloud node (upstream): Normal, the node was initialized. */
  SYNCED: 'Synced',
  /** Not upstream (upstream only logs): Warning, the node could not be initialized. */
  FAILED_TO_SYNC_NODE: 'FailedToSyncNode',
  /** Not upstream: Warning, the provider answered something the host refuses to write. */
  INVALID_CLOUD_RESPONSE: 'InvalidCloudResponse',
  // Service controller (upstream, with upstream's types).
  ENSURING_LB: 'EnsuringLoadBalancer',
  ENSURED_LB: 'EnsuredLoadBalancer',
  SYNC_LB_FAILED: 'SyncLoadBalancerFailed',
  DELETING_LB: 'DeletingLoadBalancer',
  DELETED_LB: 'DeletedLoadBalancer',
  UPDATED_LB: 'UpdatedLoadBalancer',
  /** Warning, a backend (host) update failed, per Service, also when the batch call failed as a whole. */
  UPDATE_LB_FAILED: 'UpdateLoadBalancerFailed',
  UNAVAILABLE_LB: 'UnAvailableLoadBalancer',
  /** Not upstream: Warning, the Service's load balancer was made by a provider that cannot act on it now (nothing is deleted). */
  LB_NOT_SERVED: 'LoadBalancerNotServed',
  /**
   * Not upstream (protocol 1.1): Normal, the provider answered "not now"
   * (DEFERRED) for the Service's load balancer; once per deferral (when the
   * LoadBalancerProvisioning condition turns Deferred or the provider's
   * reason changes), never a Warning: a deferral is a wait, not a failure.
   */
  LB_DEFERRED: 'LoadBalancerDeferred',
  /**
   * Not upstream (protocol 1.1): Warning, a Service annotation does not fit
   * the provider's schema (GetProviderSchema): an unknown key under a prefix
   * the provider owns, or a bad value. No cloud call; retried with backoff.
   */
  INVALID_LB_ANNOTATION: 'InvalidLoadBalancerAnnotation',
  /**
   * Not upstream (protocol 1.1): Warning, the Service carries an annotation
   * the provider's schema marks deprecated (still honoured); names the
   * replacement. Once per change of the Service's deprecated keys.
   */
  DEPRECATED_LB_ANNOTATION: 'DeprecatedLoadBalancerAnnotation',
  /** Lifecycle (upstream): Normal, before a Node whose instance is gone is deleted. */
  DELETING_NODE: 'DeletingNode',
  /** Lifecycle (upstream): Warning, the delete failed. */
  DELETING_NODE_FAILED: 'DeletingNodeFailed',
  /** Not upstream: Warning, the Node's deletion is held back by --node-deletion-limit. */
  DELETING_NODE_HELD_BACK: 'DeletingNodeHeldBack',
  /** Route (upstream): Warning on the Node, a route for one of its pod CIDRs could not be created. */
  FAILED_TO_CREATE_ROUTE: 'FailedToCreateRoute',
  /**
   * Node IPAM (upstream reason): no free pod CIDR range is left. Warning here;
   * upstream emits it as Normal (RecordNodeStatusChange), though the node
   * gets no pod network.
   */
  CIDR_NOT_AVAILABLE: 'CIDRNotAvailable',
  /** Node IPAM (upstream reason): writing the allocated pod CIDRs to the Node failed. Warning here; upstream: Normal. */
  CIDR_ASSIGNMENT_FAILED: 'CIDRAssignmentFailed',
  /** Not upstream: Warning, the Node's pod CIDRs overlap another Node's or lie outside --cluster-cidr. */
  POD_CIDR_CONFLICT: 'PodCIDRConflict',
  /** Not upstream (KEP-5778 node ownership): Warning, two providers claim the Node; it is left alone. */
  NODE_OWNERSHIP_CONFLICT: 'NodeOwnershipConflict',
  // Volume controllers, as external-provisioner/-resizer spell them.
  PROVISIONING: 'Provisioning',
  PROVISIONING_SUCCEEDED: 'ProvisioningSucceeded',
  PROVISIONING_FAILED: 'ProvisioningFailed',
  VOLUME_FAILED_DELETE: 'VolumeFailedDelete',
  RESIZING: 'Resizing',
  VOLUME_RESIZE_SUCCESSFUL: 'VolumeResizeSuccessful',
  VOLUME_RESIZE_FAILED: 'VolumeResizeFailed',
  FILE_SYSTEM_RESIZE_REQUIRED: 'FileSystemResizeRequired',
} as const;

/**
 * Service conditions written by the service controller (not upstream:
 * upstream writes none; names and reasons after KEP-4631, see
 * docs/controllers.md "Load balancer conditions").
 */
export const ServiceConditions = {
  /** True while the host is still working to bring the load balancer in line with the Service (waiting, deferred). */
  LB_PROVISIONING: 'LoadBalancerProvisioning',
  /** True while the load balancer handles traffic at status.loadBalancer.ingress. */
  LB_SERVING: 'LoadBalancerServing',
} as const;

/** Reasons of the ServiceConditions (a deferred Service's LoadBalancerServing carries the provider's own reason instead). */
export const ServiceConditionReasons = {
  /** Serving=True: the load balancer answers at its ingress. */
  SERVING: 'Serving',
  /** Serving=False: not serving yet, being provisioned (the provider answered "not ready yet", RetryInfo). Provisioning=True: same. */
  PROVISIONING: 'Provisioning',
  /** Provisioning=False: the last ensure succeeded. */
  COMPLETE: 'Complete',
  /** Provisioning=False: the last ensure failed; retried with backoff (a Warning event says why). */
  ERROR: 'Error',
  /** Provisioning=True: the provider answered "not now" (DEFERRED); retried after its delay. */
  DEFERRED: 'Deferred',
  /** Serving=False: the Service asks for what the provider or the host cannot make (invalid Service, INVALID_ARGUMENT, UNIMPLEMENTED). */
  UNSUPPORTED: 'Unsupported',
  /** Serving=False: the cloud (or the plugin) failed. */
  INFRASTRUCTURE: 'Infrastructure',
} as const;

/** Node condition written by the route controller (upstream spelling). */
export const NodeConditions = {
  NETWORK_UNAVAILABLE: 'NetworkUnavailable',
  READY: 'Ready',
} as const;

/** Reasons of the NetworkUnavailable condition (upstream). */
export const NetworkReasons = {
  ROUTE_CREATED: 'RouteCreated',
  NO_ROUTE_CREATED: 'NoRouteCreated',
} as const;

/** Event source component of each controller (upstream values). */
export const EventComponents: Record<ControllerName, string> = {
  [Controllers.CLOUD_NODE]: 'cloud-node-controller',
  [Controllers.CLOUD_NODE_LIFECYCLE]: 'cloud-node-lifecycle-controller',
  [Controllers.SERVICE_LB]: 'service-controller',
  [Controllers.NODE_ROUTE]: 'route_controller',
  [Controllers.NODE_IPAM]: 'cidrAllocator',
  [Controllers.VOLUME_PROVISIONER]: 'volume-provisioner-controller',
  [Controllers.VOLUME_ATTACHER]: 'volume-attacher-controller',
  [Controllers.VOLUME_RESIZER]: 'volume-resizer-controller',
  [Controllers.PV_LABEL]: 'persistentvolume-label-controller',
};

/**
 * ServiceAccount (in kube-system) of each controller with
 * --use-service-account-credentials: upstream's client names
 * (k8s.io/cloud-provider v0.34 app/controllermanager.go, the initializers'
 * ClientName; the node IPAM controller as kube-controller-manager's), so a
 * cluster's RBAC written for upstream's CCM (and the API server's bootstrap
 * `system:controller:*` roles) fits. cloud-node and cloud-node-lifecycle
 * share `node-controller`, as upstream. The volume controllers are not
 * upstream's and keep their own names.
 */
export const ControllerServiceAccounts: Record<ControllerName, string> = {
  [Controllers.CLOUD_NODE]: 'node-controller',
  [Controllers.CLOUD_NODE_LIFECYCLE]: 'node-controller',
  [Controllers.SERVICE_LB]: 'service-controller',
  [Controllers.NODE_ROUTE]: 'route-controller',
  [Controllers.NODE_IPAM]: 'node-controller',
  [Controllers.VOLUME_PROVISIONER]: 'volume-provisioner-controller',
  [Controllers.VOLUME_ATTACHER]: 'volume-attacher-controller',
  [Controllers.VOLUME_RESIZER]: 'volume-resizer-controller',
  [Controllers.PV_LABEL]: 'persistentvolume-label-controller',
};

/** The upstream CCM's webhook port (--webhook-secure-port). */
export const DEFAULT_WEBHOOK_SECURE_PORT = 10260;

/** The upstream CCM's secure port. */
export const DEFAULT_SECURE_PORT = 10258;

/** Name of this program in logs, user agents and events. */
export const COMPONENT_NAME = 'cloud-controller-manager';

/** The Namespace whose metadata.uid is the cluster UID (overridden by --cluster-uid). */
export const CLUSTER_UID_NAMESPACE = 'kube-system';
