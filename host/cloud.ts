/**
 * The cloud as controllers see it: small capability interfaces, independent of
 * the transport. The gRPC plugin client (host/plugin/grpc-cloud.ts) implements
 * them; controllers never import generated protocol types.
 *
 * Errors: every method rejects with an error from host/errors.ts.
 *  - InstanceNotFoundError: the cloud has no such instance (final).
 *  - RetryAfterError (has `retryAfterMs`): retry after that delay (runWorkers clamps it).
 *  - PluginUnavailableError / CloudCallError with a transient code: retry with backoff.
 *  - InvalidCloudResponseError: the provider answered something invalid; nothing
 *    was written; retry with backoff and tell the user.
 */

import type { LoadBalancers } from './cloud-load-balancers.js';
import type { Routes } from './cloud-routes.js';
import type { Volumes } from './cloud-volumes.js';

/** Kubernetes NodeAddressType values. */
export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

/** A Node taint (spec.taints[]). */
export interface NodeTaint {
  key: string;
  value: string;
  effect: string;
}

/** A Node condition without its times and message (status.conditions[]). */
export interface NodeConditionRef {
  type: string;
  status: string;
  reason: string;
}

/** The identifiers and versions of a Node's status.nodeInfo (the protocol's NodeSystemInfo). */
export interface NodeSystemInfoRef {
  machineId: string;
  systemUuid: string;
  bootId: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  operatingSystem: string;
  architecture: string;
}

/**
 * The parts of a Node the cloud needs. Read-only input. The optional fields
 * are what toNodeRef (host/controllers/node-ref.ts) fills from the Node,
 * within the protocol's bounds (proto/ccm/provider/v1/common.proto, NodeRef);
 * absent means empty.
 */
export interface NodeRef {
  name: string;
  uid?: string;
  providerId?: string;
  addresses: NodeAddress[];
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  podCidrs?: string[];
  taints?: NodeTaint[];
  unschedulable?: boolean;
  conditions?: NodeConditionRef[];
  nodeInfo?: NodeSystemInfoRef;
}

/** What the cloud knows about a node's instance (validated). */
export interface InstanceMetadata {
  /** "<provider>://<id>", or '' when the cloud has none (the node's own is kept). */
  providerId: string;
  instanceType: string;
  nodeAddresses: NodeAddress[];
  zone: string;
  region: string;
  additionalLabels: Record<string, string>;
}

/** One item of a batch metadata answer: exactly one of metadata / error. */
export interface MetadataResult {
  nodeName: string;
  metadata?: InstanceMetadata;
  error?: Error;
}

/** One item of a batch status answer: exactly one of (exists, shutdown) / error. */
export interface StatusResult {
  nodeName: string;
  exists?: boolean;
  shutdown?: boolean;
  error?: Error;
}

/** Instance lookups (upstream InstancesV2). All read-only and safe to retry. */
export interface Instances {
  /** True when the instance exists, stopped instances included. */
  instanceExists(node: NodeRef): Promise<boolean>;
  /** True when the instance exists and is shut down. */
  instanceShutdown(node: NodeRef): Promise<boolean>;
  /** Metadata for initializing a node; InstanceNotFoundError when absent. */
  instanceMetadata(node: NodeRef): Promise<InstanceMetadata>;
  /**
   * Metadata for many nodes: one result per input node, in input order. Uses
   * the provider's batch RPC when it has one (in chunks of at most
   * MAX_BATCH_NODES), else single calls with bounded concurrency.
   * Rejects only when no item could be looked up.
   */
  instancesMetadata(nodes: NodeRef[]): Promise<MetadataResult[]>;
  /** Exists/shutdown for many nodes, with the same rules as instancesMetadata. */
  instancesStatus(nodes: NodeRef[]): Promise<StatusResult[]>;
  /** Whether the provider answers batches natively (fewer cloud calls). */
  readonly batched: boolean;
}

/** Facts about the provider behind the Cloud. */
export interface CloudInfo {
  /** Implementation name, e.g. "local.ccm.dev". */
  name: string;
  vendorVersion: string;
  /** Name used in providerIDs. */
  providerName: string;
  hasClusterId: boolean;
  /** Declared providerID prefixes of its Nodes (empty: `<providerName>://`; host/ownership/nodes.ts). */
  providerIdPrefixes: readonly string[];
  /** Declared label selector for its Nodes without a providerID ('' : see host/ownership/nodes.ts). */
  nodeSelector: string;
}

/** The cloud: capabilities are undefined when the provider lacks them. */
export interface Cloud {
  info(): CloudInfo;
  instances(): Instances | undefined;
  loadBalancers(): LoadBalancers | undefined;
  routes(): Routes | undefined;
  /** Cloud volumes (host/cloud-volumes.ts). */
  volumes(): Volumes | undefined;
}

/** Largest batch sent in one RPC (the protocol's limit). */
export const MAX_BATCH_NODES = 500;
